import { addOutcomes, noOutcomes, type Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";
import { RedisUnavailableError } from "../queue/redis.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { ChunksInFlight } from "./in-flight.js";
import { realClock, type Clock } from "./clock.js";
import type { ChunkReport } from "./run-chunk.js";
import { jsonLog, type Log } from "./settle.js";

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

const emptyReport = (): ChunkReport => ({ claimed: 0, outcomes: noOutcomes(), subrequests: 0, more: false, nextLookAt: null });

/**
 * Runs one topic's jobs as they fall due over the next `horizonMs`, in the
 * producer's invocation while the tick sleeps (see src/tick/wake.ts). It
 * waits for exactly what each chunk reports — the next due job, a retry the
 * chunk scheduled, the rate limit's next token, a freed slot — so a retry
 * within the horizon runs on time and a topic held back by its concurrency
 * goes on as soon as a slot frees. Chunks run side by side as the tick's do
 * (src/tick/in-flight.ts): a slow handler holds back no job but its own. A
 * backlog is fanned out like the tick's, and when the budget runs out the rest
 * of the horizon is handed to a drain with a budget of its own. It ends when
 * its chunks have ended and the topic has nothing more within the horizon or
 * refuses (pull or paused); past the horizon it follows only what is due
 * within a peek from then, and only while the tick still sleeps.
 */
export async function runDrain(o: DrainOptions): Promise<ChunkReport> {
  const s = o.settings;
  const clock = o.clock ?? realClock;
  const log = o.log ?? jsonLog;
  const budget = new SubrequestBudget(s.tickSubrequestBudget);
  let end = clock.now() + o.horizonMs;
  const total = emptyReport();
  let fanOut = s.tickFanout > 0 ? o.fanOut : undefined;
  const inFlight = new ChunksInFlight({
    queue: o.queue,
    settings: s,
    clock,
    budget,
    fetch: o.fetch ?? fetch,
    overall: new Semaphore(s.tickConcurrency),
    log,
    ...(fanOut ? { fanOut } : {}),
  });
  const add = (r: ChunkReport) => {
    total.claimed += r.claimed;
    addOutcomes(total.outcomes, r.outcomes);
  };
  let full = false;
  let lastTaken = 1;
  // When the next step runs; null while only the chunks still running can tell.
  let next: number | null = clock.now();
  let pacedUntil = -Infinity;
  let failure: { error: unknown } | undefined;
  const foldEnded = () => {
    // What a running chunk settled early (a freed slot, a retry): be back for it.
    for (const at of inFlight.takeLooks()) next = Math.min(next ?? Infinity, at);
    for (const e of inFlight.takeEnded()) {
      const r = e.report;
      if (!r) {
        // A fan-out that failed: go on here. Anything else: the chunk's jobs come back after their lease.
        if (e.where === "fanned") fanOut = undefined;
        else if (!(e.error instanceof RedisUnavailableError)) failure ??= { error: e.error };
        next = Math.min(next ?? Infinity, clock.now() + s.tickPollMs);
        continue;
      }
      add(r);
      if (e.where === "fanned") {
        lastTaken = Math.max(1, r.claimed);
        full = r.more;
      }
      if (r.nextLookAt == null) continue;
      // A step waiting for a running chunk (next null) goes on as it ends.
      next = Math.min(next ?? Infinity, r.more ? r.nextLookAt : Math.max(r.nextLookAt, pacedUntil));
    }
  };
  try {
    for (;;) {
      foldEnded();
      if (failure) throw failure.error;
      const now = clock.now();
      if (next === null || next > end) {
        if (!inFlight.idle) {
          await inFlight.whenOneEnds();
          continue;
        }
        // A retry this drain scheduled may fall due after its horizon but
        // before the sleeping tick's next look, which was taken before the
        // retry existed: follow the topic to it while the tick still sleeps.
        // Anything due later than a peek from now a sleeping look still finds
        // in time, and once the tick wakes it takes the topic.
        if (next === null || next - now > s.tickIdlePeekMs || budget.left < 2) break;
        budget.spend();
        if (!(await o.queue.tickAsleep().catch(() => false))) break;
        end = next;
        continue;
      }
      if (now < next) {
        await inFlight.sleep(next - now);
        continue;
      }
      // One subrequest stays for a handover.
      const left = budget.left - 1;
      // As the tick does: a chunk runs here while the drain can afford one like
      // it every poll interval until its horizon ends; beyond that, or for a
      // backlog, chunks are fanned out at one subrequest each.
      const pace = left / Math.max(1, (end - now) / s.tickPollMs);
      const price = 2 + Math.min(s.tickChunk, lastTaken);
      const running = inFlight.busy(o.topic);
      if (fanOut && (full || price > pace) && left >= 1) {
        if (!running.here && !running.fanned) {
          const n = Math.min(full ? s.tickFanout : 1, left);
          budget.spend(n);
          for (let k = 0; k < n; k++) inFlight.startFanned(o.topic, s.tickChunk);
          next = null;
          continue;
        }
        // Its fanned-out chunk is still out: what falls due meanwhile runs here, if the pace allows.
        if (price > pace) {
          next = null;
          continue;
        }
      }
      const max = inFlight.room(o.topic, left - 2);
      if (left >= 3 && max < 1) {
        // Every slot is taken: a step as a chunk ends.
        next = null;
        continue;
      }
      if (left < 3) {
        // Out of budget: what runs ends first, then the rest of the horizon goes on elsewhere.
        if (!inFlight.idle) {
          await inFlight.allEnded();
          continue;
        }
        if (o.handOver && end - now > 0 && budget.left >= 1) {
          budget.spend();
          add(await o.handOver(end - now));
        }
        break;
      }
      // A claim, a settle and at least one delivery.
      const c = await inFlight.startHere(o.topic, max, 2 + max);
      lastTaken = Math.max(1, c.claimed);
      full = c.more;
      next = c.nextLookAt;
      // A step that got nothing and wants to be back at once would spin: the tick's next look takes over.
      if (c.claimed === 0 && next !== null && next <= clock.now()) {
        next = null;
        continue;
      }
      pacedUntil = -Infinity;
      if (!full && next !== null) {
        // Paced like the tick: a trickle is gathered into steps at most a poll interval apart.
        const cost = c.claimed > 0 ? 2 + c.claimed : 1;
        pacedUntil = now + Math.min(s.tickPollMs, ((end - now) * cost) / Math.max(1, budget.left - 1));
        next = Math.max(next, pacedUntil);
      }
    }
  } finally {
    await inFlight.allEnded();
    foldEnded();
  }
  const failed = failure as { error: unknown } | undefined;
  if (failed) throw failed.error;
  total.nextLookAt = next;
  total.subrequests = budget.spent;
  return total;
}
