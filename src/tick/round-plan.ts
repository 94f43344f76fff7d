/**
 * What one round of the tick does with the topics a poll found due: which
 * chunks run here, which are fanned out to invocations of their own, which
 * topics wait for a running chunk. Pure: the loop (src/tick/loop.ts) gathers
 * the facts, this decides (when the loop polls next: src/tick/decisions.ts).
 */
import { DEFAULT_WEIGHT, MAX_WEIGHT } from "../limits.js";
import { CLAIM_REQUESTS_MAX, MAX_BATCH } from "../queue/bounds.js";

/** Subrequests a chunk run here may cost besides its deliveries: its claim's at most, and its settle. */
export const CHUNK_OVERHEAD = CLAIM_REQUESTS_MAX + 1;

/** What the planner knows of one due topic. */
export interface DueTopic {
  topic: string;
  /** Jobs its last chunk took (a chunk here is priced by it). Default 1. */
  lastTaken?: number;
  /** Its weight (its setting, as its last claim read it): its share of the round against the other due topics'. Default 1. */
  weight?: number;
  /** Handlers it may run here at once (its concurrency, its code handler's, else 10), as its last chunk here found. Default: unbounded. */
  slots?: number;
  /** The jobs its chunks took in this loop, over its weight (see TopicMemory.served). Default 0. */
  served?: number;
  /** Its last chunk came back full: more is ready than one chunk. */
  backlog: boolean;
  /** A fan-out of it failed in this invocation: it is delivered here from then on. */
  noFanOut: boolean;
  /** Chunks of it still running, here and fanned out. */
  running: { here: boolean; fanned: boolean };
  /** Jobs it may start here beside its running chunks (its concurrency's free slots, TICK_CONCURRENCY's); the plan bounds it by a chunk. */
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
  /** TICK_CONCURRENCY, which due topics of different weights share by weight (see chunkSizes). Default: no share is bounded. */
  tickConcurrency?: number;
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

/** A due topic the round may run here, with its weight (relative to the round's other topics) and its chunk's size. */
interface Candidate {
  t: DueTopic;
  weight: number;
  size: number;
}

/** What a chunk of `t` run here costs: a claim, a settle and a delivery per job. */
const localPrice = (t: Pick<DueTopic, "lastTaken">, size: number) => 2 + Math.min(size, t.lastTaken ?? 1);

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The due topics' weights, divided by their greatest common divisor: only
 * their ratios count, so topics of one weight share as weight-1 topics do. A
 * weight written into the conf hash by hand is read as a whole number from 1.
 */
function relativeWeights(due: DueTopic[]): number[] {
  const weights = due.map((t) => Math.max(1, Math.min(MAX_WEIGHT, Math.floor(t.weight ?? DEFAULT_WEIGHT))));
  const unit = weights.reduce(gcd, 0);
  return weights.map((w) => w / unit);
}

/**
 * The round's order, as indexes into `due`: the topics the loop served least
 * for their weight (the jobs their chunks took, over their weight) first, so
 * what the round has too little of — the budget, TICK_CONCURRENCY's free
 * slots, the fan-outs — goes to each topic in its weight's share over the
 * rounds, whichever rounds have any to give; ties from the `turn`-th topic
 * (the start rotates), then on in due order. Rotation alone is not enough
 * even among topics of one weight: when slots free up one at a time, the
 * rounds that have one to give can fall on the same turn's parity, and one
 * topic would take every slot (seen with TICK_CHUNK 1).
 */
function roundOrder(due: DueTopic[], turn: number): number[] {
  const n = due.length;
  const rotated = due.map((_, j) => (turn + j) % n);
  return rotated.sort((a, b) => (due[a]!.served ?? 0) - (due[b]!.served ?? 0));
}

/**
 * Plans a round over `due`, the least served first, ties from the
 * rotation's `turn`-th start (so a tight budget reaches every topic in turn;
 * see roundOrder).
 *
 * A chunk runs here while the loop can afford chunks like it every poll
 * interval until its window ends; beyond that pace, and for topics with a
 * backlog, it is fanned out (up to TICK_FANOUT chunks for a backlog). Two
 * subrequests stay for releasing the lock and a handover. A topic whose chunk
 * still runs gets what its free slots allow here, and no second fanned-out
 * chunk until the first is back (meanwhile it is served here if the pace
 * allows). The budget is shared among the topics run here, and
 * TICK_CONCURRENCY's free slots are shared out, not promised twice: each
 * topic in the round's order takes what it can.
 *
 * Weights share a round between due topics of different weights: a topic's
 * share of the budget is its weight's, its chunk follows its share of
 * TICK_CONCURRENCY (chunkSizes), and the topics it is behind come first.
 * Topics of one weight (a deployment that sets none) share the budget
 * evenly, the least served first.
 */
export function planRound(due: DueTopic[], turn: number, l: RoundLimits): RoundPlan {
  const weights = relativeWeights(due);
  const sizes = chunkSizes(due, weights, l);
  let left = l.budgetLeft - 2;
  let pace = l.fanning ? left / Math.max(1, l.windowLeftMs / l.tickPollMs) : Infinity;
  const remote: RoundPlan["remote"] = [];
  const candidates: Candidate[] = [];
  const waiting: string[] = [];
  for (const i of roundOrder(due, turn)) {
    const t = due[i]!;
    const size = sizes[i]!;
    const price = localPrice(t, size);
    if (l.fanning && !t.noFanOut && (t.backlog || price > pace)) {
      if (!t.running.here && !t.running.fanned) {
        const chunks = t.backlog ? l.tickFanout : 1;
        for (let c = 0; c < chunks && left >= 1; c++, left--) remote.push({ topic: t.topic, max: size });
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
    candidates.push({ t, weight: weights[i]!, size });
    pace -= price;
  }
  const here = planHere(candidates, left, l.freeSlots);
  waiting.push(...here.waiting);
  const unserved = due.length - waiting.length - here.local.length - new Set(remote.map((r) => r.topic)).size;
  return { local: here.local, remote, waiting, unserved, slotBound: here.slotBound };
}

/** The chunks run here, in the round's order: each within its weight's share of the budget (`budgetLeft`: what the fan-outs left), and of the free slots what those before it left. */
function planHere(candidates: Candidate[], budgetLeft: number, freeSlots: number): Pick<RoundPlan, "local" | "waiting" | "slotBound"> {
  const total = candidates.reduce((n, c) => n + c.weight, 0);
  const local: RoundPlan["local"] = [];
  const waiting: string[] = [];
  let left = budgetLeft;
  let slots = freeSlots;
  let slotBound = false;
  for (const c of candidates) {
    const share = Math.floor((budgetLeft * c.weight) / Math.max(1, total));
    const affordable = Math.min(c.size, Math.max(share, CHUNK_OVERHEAD + 1) - CHUNK_OVERHEAD, left - CHUNK_OVERHEAD);
    if (affordable < 1) break;
    const max = Math.min(affordable, c.t.room, slots);
    if (max < 1) {
      waiting.push(c.t.topic);
      slotBound ||= slots < 1;
      continue;
    }
    local.push({ topic: c.t.topic, max });
    left -= CHUNK_OVERHEAD + max;
    slots -= max;
  }
  return { local, waiting, slotBound };
}

/**
 * Each due topic's chunk. With one weight, TICK_CHUNK, as always. With
 * several, the chunks follow the topics' shares of TICK_CONCURRENCY, by
 * weight and within the handlers each may run at once (waterFill): the
 * lightest share of a topic that contends for TICK_CONCURRENCY gets
 * TICK_CHUNK, the others TICK_CHUNK times their share over it (at most
 * MAX_BATCH; never less than TICK_CHUNK). Run at those shares (the overall
 * slots go by weight, src/tick/budget.ts), the chunks last alike, so their
 * topics come due again together and no topic's longer chunk keeps the
 * others' next ones waiting. When none contends — every topic can run all
 * its handlers at once — the chunks are TICK_CHUNK: weights change nothing.
 */
function chunkSizes(due: DueTopic[], weights: number[], l: RoundLimits): number[] {
  const plain = weights.map(() => l.tickChunk);
  if (l.tickConcurrency === undefined || weights.every((w) => w === weights[0])) return plain;
  const caps = due.map((t) => t.slots ?? Infinity);
  const shares = waterFill(l.tickConcurrency, weights, caps);
  const contending = shares.filter((share, i) => share < caps[i]!);
  if (contending.length === 0) return plain;
  const lightest = Math.min(...contending);
  return shares.map((share) => Math.max(l.tickChunk, Math.min(MAX_BATCH, Math.floor((l.tickChunk * share) / lightest))));
}

/**
 * Shares `total` by `weights`, none past its cap: a share that would pass
 * its cap is the cap, and what it leaves is shared again between the others,
 * so nothing is left while one could take it.
 */
function waterFill(total: number, weights: number[], caps: number[]): number[] {
  const shares = weights.map(() => 0);
  let open = weights.map((_, i) => i);
  let left = total;
  while (open.length > 0) {
    const sum = open.reduce((n, i) => n + weights[i]!, 0);
    const capped = open.filter((i) => caps[i]! <= (left * weights[i]!) / sum);
    if (capped.length === 0) {
      for (const i of open) shares[i] = (left * weights[i]!) / sum;
      break;
    }
    for (const i of capped) {
      shares[i] = caps[i]!;
      left -= caps[i]!;
    }
    open = open.filter((i) => !capped.includes(i));
  }
  return shares;
}
