/**
 * `load` run once, on first use, and its promise kept; a failed load is forgotten, so the next
 * use tries again (a database that was down at the first request).
 */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    if (!value) {
      const loading = load();
      value = loading;
      loading.catch(() => {
        if (value === loading) value = undefined;
      });
    }
    return value;
  };
}
