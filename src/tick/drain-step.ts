/**
 * What a producer's drain (src/tick/drain.ts) does next, and when it is back
 * after a claim. Pure: the drain gathers the facts and carries out the step.
 */
import { CHUNK_OVERHEAD } from "./round-plan.js";

/** What the drain knows when it picks its next step. */
export interface DrainFacts {
  now: number;
  /** When the next step runs; null while only the chunks still running can tell. */
  next: number | null;
  /** When the drain's horizon ends. */
  end: number;
  /** Chunks of the drain still run, here or fanned out. */
  running: boolean;
  /** The topic's chunks still running here and fanned out. */
  busy: { here: boolean; fanned: boolean };
  budgetLeft: number;
  /** Chunks can be fanned out (a runner, TICK_FANOUT > 0, and none of them failed). */
  fanning: boolean;
  /** The last chunk came back full: more is ready than one chunk. */
  full: boolean;
  /** Jobs the last chunk took, at least 1 (a chunk here is priced by it). */
  lastTaken: number;
  /** Jobs a chunk here may claim beside what runs, before the budget bounds it. */
  room: number;
  /** The drain can hand the rest of its horizon to a drain of its own. */
  canHandOver: boolean;
  tickChunk: number;
  tickFanout: number;
  tickPollMs: number;
  tickIdlePeekMs: number;
}

/** The drain's next step. */
export type DrainStep =
  /** Wait for a running chunk to end or settle part of itself. */
  | { kind: "wait" }
  /** Past the horizon: ask whether the tick still sleeps, and if so follow the topic until `until`. */
  | { kind: "ask-tick"; until: number }
  | { kind: "sleep"; ms: number }
  /** Fan out `chunks` chunks, one subrequest each; then step again as one ends. */
  | { kind: "fan-out"; chunks: number }
  /** Nothing to start now: step again as a chunk ends. */
  | { kind: "hold" }
  /** Claim a chunk here of at most `max` jobs (its reservation: a claim, a settle and a delivery a job). */
  | { kind: "claim"; max: number }
  /** Out of budget: what runs ends first. */
  | { kind: "wait-all" }
  /** Out of budget, nothing running: the rest of the horizon goes to a drain of its own. */
  | { kind: "hand-over"; horizonMs: number }
  | { kind: "end" };

/**
 * Picks the drain's next step. As the tick does: a chunk runs here while
 * the drain can afford one like it every poll interval until its horizon
 * ends; beyond that, or for a backlog, chunks are fanned out, and a topic
 * whose fanned-out chunk is still out is served here meanwhile if the pace
 * allows. One subrequest stays for a handover.
 */
export function nextDrainStep(f: DrainFacts): DrainStep {
  if (f.next === null || f.next > f.end) return pastHorizon(f);
  if (f.now < f.next) return { kind: "sleep", ms: f.next - f.now };
  const left = f.budgetLeft - 1;
  const pace = left / Math.max(1, (f.end - f.now) / f.tickPollMs);
  const price = 2 + Math.min(f.tickChunk, f.lastTaken);
  if (f.fanning && (f.full || price > pace) && left >= 1) {
    if (!f.busy.here && !f.busy.fanned) return { kind: "fan-out", chunks: Math.min(f.full ? f.tickFanout : 1, left) };
    if (price > pace) return { kind: "hold" };
  }
  const max = Math.max(0, Math.min(f.room, left - CHUNK_OVERHEAD));
  // Every slot is taken: a step as a chunk ends.
  if (left > CHUNK_OVERHEAD && max < 1) return { kind: "hold" };
  if (left > CHUNK_OVERHEAD) return { kind: "claim", max };
  if (f.running) return { kind: "wait-all" };
  if (f.canHandOver && f.end - f.now > 0 && f.budgetLeft >= 1) return { kind: "hand-over", horizonMs: f.end - f.now };
  return { kind: "end" };
}

/**
 * Nothing to do within the horizon. A retry this drain scheduled may fall
 * due after its horizon but before the sleeping tick's next look, which was
 * taken before the retry existed: the drain follows the topic to it while
 * the tick still sleeps. Anything due later than a peek from now a sleeping
 * look still finds in time, and once the tick wakes it takes the topic.
 */
function pastHorizon(f: DrainFacts): DrainStep {
  if (f.running) return { kind: "wait" };
  if (f.next === null || f.next - f.now > f.tickIdlePeekMs || f.budgetLeft < 2) return { kind: "end" };
  return { kind: "ask-tick", until: f.next };
}

/**
 * When the drain is back after a claim here, and the pace's floor that a
 * chunk ending later may not bring it before. A claim that got nothing and
 * wants to be back at once would spin: the tick's next look takes over
 * (null, and the floor stays as it was). Otherwise a trickle is paced like
 * the tick's: gathered into steps at most a poll interval apart, so steps
 * like this one do not spend the budget before the horizon ends.
 */
export function nextAfterClaim(a: {
  claimed: number;
  more: boolean;
  nextLookAt: number | null;
  /** When the step began (before its claim). */
  stepAt: number;
  /** After the claim came back. */
  now: number;
  end: number;
  /** What the budget has left after the claim's reservation. */
  budgetLeft: number;
  tickPollMs: number;
  pacedUntil: number;
}): { next: number | null; pacedUntil: number } {
  if (a.claimed === 0 && a.nextLookAt !== null && a.nextLookAt <= a.now) return { next: null, pacedUntil: a.pacedUntil };
  if (a.more || a.nextLookAt === null) return { next: a.nextLookAt, pacedUntil: -Infinity };
  const cost = a.claimed > 0 ? 2 + a.claimed : 1;
  const pacedUntil = a.stepAt + Math.min(a.tickPollMs, ((a.end - a.stepAt) * cost) / Math.max(1, a.budgetLeft - 1));
  return { next: Math.max(a.nextLookAt, pacedUntil), pacedUntil };
}
