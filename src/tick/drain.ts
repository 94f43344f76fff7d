import type { Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";
import { SubrequestBudget } from "./budget.js";
import { realClock, type Clock } from "./clock.js";
import { runChunk, type ChunkReport } from "./run-chunk.js";
import type { Log } from "./settle.js";

/** Options of {@link runDrain}. */
export interface DrainOptions {
  queue: Queue;
  settings: Settings;
  topic: string;
  /** Follow the topic this long from now. */
  horizonMs: number;
  /** Default the real clock. */
  clock?: Clock;
  /** Outbound fetch for the http handler (counted). Default the global fetch. */
  fetch?: typeof fetch;
  /** Default JSON lines on the console. */
  log?: Log;
}

/**
 * Runs one topic's jobs as they fall due over the next `horizonMs`, chunk
 * after chunk, in the producer's invocation while the tick sleeps (see
 * src/tick/wake.ts). It waits for exactly what each chunk reports — the next
 * due job, a retry the chunk scheduled, the rate limit's next token — so a
 * retry within the horizon runs on time and a topic held back by its
 * concurrency goes on as soon as a slot frees. It ends when the topic has
 * nothing more within the horizon, refuses (pull or paused), or the
 * invocation's subrequest budget cannot pay for another chunk.
 */
export async function runDrain(o: DrainOptions): Promise<ChunkReport> {
  const clock = o.clock ?? realClock;
  const budget = new SubrequestBudget(o.settings.tickSubrequestBudget);
  const end = clock.now() + o.horizonMs;
  const total: ChunkReport = { claimed: 0, outcomes: { ack: 0, retry: 0, dead: 0, stale: 0 }, subrequests: 0, more: false, nextLookAt: null };
  const fetcher = budget.countingFetch(o.fetch ?? fetch);
  for (;;) {
    // A claim, a settle and at least one delivery.
    if (budget.left < 3) break;
    const r = await runChunk({ queue: o.queue, settings: o.settings, topic: o.topic, max: budget.left - 2, clock, budget, fetch: fetcher, ...(o.log ? { log: o.log } : {}) });
    total.claimed += r.claimed;
    for (const k of ["ack", "retry", "dead", "stale"] as const) total.outcomes[k] += r.outcomes[k];
    total.nextLookAt = r.nextLookAt ?? null;
    const next = r.nextLookAt ?? null;
    // A chunk that got nothing and wants to be back at once would spin: the tick's next look takes over.
    if (next === null || next > end || (r.claimed === 0 && next <= clock.now())) break;
    const wait = next - clock.now();
    if (wait > 0) await clock.sleep(wait);
  }
  total.subrequests = budget.spent;
  return total;
}
