/**
 * A task run now and then every `everyMs` after each run ends (never two at once), until stopped;
 * `stop()` waits for a run under way. A failed run is reported to `onError` and the next one comes
 * on schedule. The timer never keeps the process alive.
 */
export function startPeriodic(task: () => Promise<unknown>, everyMs: number, onError: (err: unknown) => void): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = task()
        .then(() => undefined, onError)
        .finally(() => {
          running = undefined;
          schedule(everyMs);
        });
    }, delayMs);
    timer.unref();
  };
  schedule(0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
