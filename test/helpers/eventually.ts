/** Polls `check` every 25 ms until it returns something other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000, what = 'a condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
