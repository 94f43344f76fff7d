/** Time as the tick sees it; tests drive it by hand. */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (a clock may ignore it and resolve later). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    }),
};
