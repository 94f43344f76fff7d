/**
 * What one round of the tick does with the topics a poll found due: which
 * chunks run here, which are fanned out to invocations of their own, which
 * topics wait for a running chunk. Pure: the loop (src/tick/loop.ts) gathers
 * the facts, this decides (when the loop polls next: src/tick/decisions.ts).
 */
import { CLAIM_REQUESTS_MAX } from "../queue/bounds.js";

/** Subrequests a chunk run here may cost besides its deliveries: its claim's at most, and its settle. */
export const CHUNK_OVERHEAD = CLAIM_REQUESTS_MAX + 1;

/** What the planner knows of one due topic. */
export interface DueTopic {
  topic: string;
  /** Jobs its last chunk took (a chunk here is priced by it). Default 1. */
  lastTaken?: number;
  /** Its last chunk came back full: more is ready than one chunk. */
  backlog: boolean;
  /** A fan-out of it failed in this invocation: it is delivered here from then on. */
  noFanOut: boolean;
  /** Chunks of it still running, here and fanned out. */
  running: { here: boolean; fanned: boolean };
  /** Jobs it may start here beside its running chunks (its concurrency's free slots, up to a chunk). */
  room: number;
}

/** The limits a round is planned under. */
export interface RoundLimits {
  tickChunk: number;
  tickFanout: number;
  tickPollMs: number;
  /** Subrequests left in this invocation's budget. */
  budgetLeft: number;
  /** Whether chunks can be fanned out (a TICK_RUNNER, TICK_FANOUT > 0). */
  fanning: boolean;
  /** Milliseconds left of the loop's window. */
  windowLeftMs: number;
  /** TICK_CONCURRENCY's slots not taken by running chunks. */
  freeSlots: number;
}

export interface RoundPlan {
  /** Chunks run here: a claim of at most `max` jobs each. */
  local: Array<{ topic: string; max: number }>;
  /** Chunks fanned out, one subrequest each. */
  remote: Array<{ topic: string; max: number }>;
  /** Due topics that get no chunk because chunks still run (theirs, or all of TICK_CONCURRENCY): polled again as one ends. */
  waiting: string[];
  /** Due topics the budget reached with nothing: the loop looks again at once. */
  unserved: number;
  /**
   * Some topic waits only because TICK_CONCURRENCY's free slots went to
   * topics before it: if their claims take fewer jobs than they were given
   * slots for (a pull topic takes none), the loop looks again at once rather
   * than when a chunk ends.
   */
  slotBound: boolean;
}

/** What a chunk of `t` run here costs: a claim, a settle and a delivery per job. */
const localPrice = (t: Pick<DueTopic, "lastTaken">, tickChunk: number) => 2 + Math.min(tickChunk, t.lastTaken ?? 1);

/**
 * Plans a round over `due`, taken in order from `start` (a rotation, so a
 * tight budget reaches every topic in turn).
 *
 * A chunk runs here while the loop can afford chunks like it every poll
 * interval until its window ends; beyond that pace, and for topics with a
 * backlog, it is fanned out (up to TICK_FANOUT chunks for a backlog). Two
 * subrequests stay for releasing the lock and a handover. A topic whose chunk
 * still runs gets what its free slots allow here, and no second fanned-out
 * chunk until the first is back (meanwhile it is served here if the pace
 * allows). The budget is shared evenly among the topics run here, and
 * TICK_CONCURRENCY's free slots are shared out, not promised twice.
 */
export function planRound(due: DueTopic[], start: number, l: RoundLimits): RoundPlan {
  let left = l.budgetLeft - 2;
  let pace = l.fanning ? left / Math.max(1, l.windowLeftMs / l.tickPollMs) : Infinity;
  const remote: RoundPlan["remote"] = [];
  const candidates: DueTopic[] = [];
  const waiting: string[] = [];
  for (let k = 0; k < due.length; k++) {
    const t = due[(start + k) % due.length]!;
    const price = localPrice(t, l.tickChunk);
    if (l.fanning && !t.noFanOut && (t.backlog || price > pace)) {
      if (!t.running.here && !t.running.fanned) {
        const chunks = t.backlog ? l.tickFanout : 1;
        for (let c = 0; c < chunks && left >= 1; c++, left--) remote.push({ topic: t.topic, max: l.tickChunk });
        continue;
      }
      if (price > pace) {
        waiting.push(t.topic);
        continue;
      }
    }
    if (t.room < 1) {
      waiting.push(t.topic);
      continue;
    }
    candidates.push(t);
    pace -= price;
  }
  const share = Math.floor(left / Math.max(1, candidates.length));
  const local: RoundPlan["local"] = [];
  let slots = l.freeSlots;
  let slotBound = false;
  for (const t of candidates) {
    const affordable = Math.min(l.tickChunk, Math.max(share, CHUNK_OVERHEAD + 1) - CHUNK_OVERHEAD, left - CHUNK_OVERHEAD);
    if (affordable < 1) break;
    const max = Math.min(affordable, t.room, slots);
    if (max < 1) {
      waiting.push(t.topic);
      slotBound ||= slots < 1;
      continue;
    }
    local.push({ topic: t.topic, max });
    left -= CHUNK_OVERHEAD + max;
    slots -= max;
  }
  const unserved = due.length - waiting.length - local.length - new Set(remote.map((r) => r.topic)).size;
  return { local, remote, waiting, unserved, slotBound };
}
