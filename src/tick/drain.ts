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
  /**
   * Runs one chunk in an invocation of its own (TickChunk.run), for one
   * subrequest of this one. With it, a topic whose chunk came back full gets
   * up to TICK_FANOUT chunks at a time, as the tick does.
   */
  fanOut?: (topic: string, max: number) => Promise<ChunkReport>;
  /** Goes on with the rest of the horizon in an invocation of its own when this one's budget runs out. */
  handOver?: (horizonMs: number) => Promise<ChunkReport>;
}

const emptyReport = (): ChunkReport => ({ claimed: 0, outcomes: { ack: 0, retry: 0, dead: 0, stale: 0 }, subrequests: 0, more: false, nextLookAt: null });

/**
 * Runs one topic's jobs as they fall due over the next `horizonMs`, chunk
 * after chunk, in the producer's invocation while the tick sleeps (see
 * src/tick/wake.ts). It waits for exactly what each chunk reports — the next
 * due job, a retry the chunk scheduled, the rate limit's next token — so a
 * retry within the horizon runs on time and a topic held back by its
 * concurrency goes on as soon as a slot frees. A backlog is fanned out like
 * the tick's, and when the budget runs out the rest of the horizon is handed
 * to a drain with a budget of its own. It ends when the topic has nothing
 * more within the horizon or refuses (pull or paused).
 */
export async function runDrain(o: DrainOptions): Promise<ChunkReport> {
  const s = o.settings;
  const clock = o.clock ?? realClock;
  const budget = new SubrequestBudget(s.tickSubrequestBudget);
  const end = clock.now() + o.horizonMs;
  const total = emptyReport();
  const fetcher = budget.countingFetch(o.fetch ?? fetch);
  const add = (r: ChunkReport) => {
    total.claimed += r.claimed;
    for (const k of ["ack", "retry", "dead", "stale"] as const) total.outcomes[k] += r.outcomes[k];
  };
  let full = false;
  let lastTaken = 1;
  for (;;) {
    const now = clock.now();
    // One subrequest stays for a handover.
    const left = budget.left - 1;
    // As the tick does: a chunk runs here while the drain can afford one like
    // it every poll interval until its horizon ends; beyond that, or for a
    // backlog, chunks are fanned out at one subrequest each.
    const pace = left / Math.max(1, (end - now) / s.tickPollMs);
    const fanning = o.fanOut !== undefined && s.tickFanout > 0 && (full || 2 + Math.min(s.tickChunk, lastTaken) > pace);
    let reports: ChunkReport[];
    if (fanning && left >= 1) {
      const n = Math.min(full ? s.tickFanout : 1, left);
      budget.spend(n);
      reports = (await Promise.all(Array.from({ length: n }, () => o.fanOut!(o.topic, s.tickChunk).catch(() => null)))).filter((r) => r !== null);
      // Every fan-out failed: go on here.
      if (reports.length === 0) o = { ...o, fanOut: undefined };
    } else if (left >= 3) {
      // A claim, a settle and at least one delivery.
      reports = [await runChunk({ queue: o.queue, settings: s, topic: o.topic, max: left - 2, clock, budget, fetch: fetcher, ...(o.log ? { log: o.log } : {}) })];
    } else {
      if (o.handOver && end - now > 0 && budget.left >= 1) {
        budget.spend();
        add(await o.handOver(end - now));
      }
      break;
    }
    const price = left + 1 - budget.left;
    reports.forEach(add);
    const claimed = reports.reduce((n, r) => n + r.claimed, 0);
    lastTaken = Math.max(1, claimed);
    full = reports.some((r) => r.more);
    const looks = reports.map((r) => r.nextLookAt).filter((t): t is number => t != null);
    let next = looks.length > 0 ? Math.min(...looks) : null;
    total.nextLookAt = next;
    // A step that got nothing and wants to be back at once would spin: the tick's next look takes over.
    if (next === null || next > end || (claimed === 0 && next <= clock.now())) break;
    if (!full) {
      // Paced like the tick: a trickle is gathered into steps at most a poll interval apart.
      next = Math.max(next, now + Math.min(s.tickPollMs, ((end - now) * price) / Math.max(1, budget.left - 1)));
    }
    const wait = next - clock.now();
    if (wait > 0) await clock.sleep(wait);
  }
  total.subrequests = budget.spent;
  return total;
}
