/**
 * Runs the work handed to it one piece at a time, in the order it was handed over, whatever the
 * earlier pieces' outcome. For a node-postgres connection that two flows query at once: node-postgres
 * queues a query sent while another runs, but warns that pg 9 will refuse it.
 */
export function oneAtATime(): <T>(work: () => Promise<T>) => Promise<T> {
  let previous: Promise<unknown> = Promise.resolve();
  return (work) => {
    const result = previous.then(work);
    previous = result.catch(() => undefined);
    return result;
  };
}
