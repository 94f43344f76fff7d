import type { Env, Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";

/**
 * How stale a producer's knowledge of whether the tick sleeps may be. The
 * tick keeps polling this long (plus a poll) after marking itself asleep, so
 * a producer that has not seen the mark yet loses nothing.
 */
export const SLEEP_MARK_STALENESS_MS = 1_000;

let known: { prefix: string; at: number; asleep: boolean } | undefined;

async function tickAsleep(queue: Queue, now: number): Promise<boolean> {
  if (known && known.prefix === queue.keys.prefix && now - known.at < SLEEP_MARK_STALENESS_MS) return known.asleep;
  const asleep = await queue.tickAsleep();
  known = { prefix: queue.keys.prefix, at: now, asleep };
  return asleep;
}

/**
 * Called by the producer after it stored jobs. While the tick sleeps (it
 * found nothing due within TICK_IDLE_PEEK_MS and now looks only that often),
 * jobs due sooner are started from this invocation: at their due time it runs
 * their topic's chunk through the TickChunk entrypoint. Claims are atomic, so
 * a tick that wakes meanwhile never delivers a job twice. Best effort: if
 * this fails, the tick's next look finds the job (at most TICK_IDLE_PEEK_MS late).
 */
export async function wakeForSoonJobs(args: {
  env: Env;
  settings: Settings;
  queue: Queue;
  jobs: Array<{ topic: string; dueAt: number }>;
  waitUntil: (work: Promise<unknown>) => void;
}): Promise<void> {
  const { env, settings: s } = args;
  const runner = env.TICK_RUNNER;
  if (!runner || s.tickIdlePeekMs === 0) return;
  const now = Date.now();
  const soon = args.jobs.filter((j) => j.dueAt - now <= s.tickIdlePeekMs);
  if (soon.length === 0) return;
  try {
    if (!(await tickAsleep(args.queue, now))) return;
  } catch {
    return;
  }
  // One run per topic and due time is enough: a chunk takes every job due by then.
  const runs = new Map<string, { topic: string; dueAt: number }>();
  for (const j of soon) runs.set(`${j.topic}@${j.dueAt}`, j);
  for (const { topic, dueAt } of runs.values()) {
    args.waitUntil(
      new Promise((r) => setTimeout(r, Math.max(0, dueAt - Date.now())))
        .then(() => runner.run(topic, s.tickChunk))
        .catch((err: unknown) => console.error(JSON.stringify({ level: "error", msg: "waking a job due soon failed", topic, error: String(err) }))),
    );
  }
}
