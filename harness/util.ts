/** Small helpers every harness user (test/, bench/, chaos/) shares, one signature each. */

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs `work(i)` for i in [0, n), at most `concurrency` at a time. By index rather than over an array, so the bench's
 * timed loops of a million enqueues build no array of their own; a caller with items indexes them.
 */
export async function pool(n: number, concurrency: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

/** Waits until `done()` holds, checking every `everyMs` (default 20); throws after `timeoutMs`. */
export async function until(done: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
