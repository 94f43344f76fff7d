/**
 * The tick's decisions, for a loop (src/tick/loop.ts) and a producer's drain
 * (src/tick/drain.ts) alike: when the invocation looks next, what it does
 * then, and the fold of the chunks that ended. Pure: no I/O and no clock —
 * state and facts in, a step out. The loop and the drain gather the facts
 * and carry the step out (peek, start a chunk, sleep, hand over); planRound
 * (src/tick/round-plan.ts) says which chunks a loop's round starts.
 */
import { addOutcomes, noOutcomes, type Outcomes } from "../env.js";
import { RedisUnavailableError } from "../queue/errors.js";
import type { EndedChunk } from "./in-flight.js";
import { CHUNK_OVERHEAD, type RoundPlan } from "./round-plan.js";
import { TopicMemory, type TopicSeen } from "./topic-memory.js";

/** What a loop or a drain carries from one decision to the next. */
export interface TickState {
  /** When the next poll (a loop) or step (a drain) is due; Infinity while only a running chunk can tell. */
  nextLookAt: number;
  /** A chunk that ends may not bring the next look before this: the pace of the round or claim that started it. */
  pacedUntil: number;
  /** Due topics got no chunk because chunks still ran: the next chunk that ends brings the next look to now. */
  awaitingChunk: boolean;
  /** A bug (not an outage) in a chunk: the next step rethrows it. */
  failure: { error: unknown } | undefined;
  /** What the invocation remembers of each topic between rounds. */
  memory: TopicMemory;
}

export const newTickState = (nextLookAt: number): TickState => ({
  nextLookAt,
  pacedUntil: -Infinity,
  awaitingChunk: false,
  failure: undefined,
  memory: new TopicMemory(),
});

/** Brings the next look to `at` if that is sooner. */
function lookBy(st: TickState, at: number): void {
  st.nextLookAt = Math.min(st.nextLookAt, at);
}

/** What a chunk run here cost: a claim, a settle and a delivery per job; a claim alone if it got nothing. */
export const chunkPrice = (claimed: number): number => (claimed > 0 ? 2 + claimed : 1);

/**
 * The pace's floor: work like this (costing `price` subrequests), back to
 * back from `from`, must not spend the budget (less `reserve`) before `spanMs`
 * passes; so a trickle is gathered into looks at most a poll interval apart.
 */
const paceFloor = (from: number, spanMs: number, price: number, budgetLeft: number, reserve: number, tickPollMs: number): number =>
  from + Math.min(tickPollMs, (spanMs * price) / Math.max(1, budgetLeft - reserve));

/** What the fold of ended chunks needs besides the state. */
export interface FoldFacts {
  now: number;
  tickPollMs: number;
  /**
   * A fanned-out chunk that got nothing, though due when started, leaves its topic alone for a poll (TopicMemory), unless
   * a chunk of it came back full or is still `running`: it lost a race to that one (a shaped topic's claims side by side
   * name the same keys), and the topic is looked at again at once. A drain's claim guards instead. */
  quietEmptyFanOuts: boolean;
  running?: (topic: string) => boolean;
}

/** What the ended chunks brought, for the invocation's report and log. */
export interface Folded {
  outcomes: Outcomes;
  /** Jobs the ended chunks took, here and fanned out (a topic left alone counts none). */
  claimed: { here: number; fanned: number };
  /** Chunks that ended without a report yet without a bug: a failed fan-out, or an outage (their jobs come back after the lease). */
  lost: EndedChunk[];
}

/**
 * Folds in what running chunks settled early (`looks`: freed slots,
 * retries) and the chunks that ended: outcomes, the topics' memory, a
 * failure, and the next look.
 */
export function foldEnded(st: TickState, looks: number[], ended: EndedChunk[], f: FoldFacts): Folded {
  for (const at of looks) lookBy(st, at);
  const out: Folded = { outcomes: noOutcomes(), claimed: { here: 0, fanned: 0 }, lost: [] };
  const full = new Set(ended.filter((e) => e.report?.more).map((e) => e.topic));
  for (const e of ended) {
    const r = e.report;
    if (!r) {
      // A failed fan-out: the topic is delivered here from now on.
      if (e.where === "fanned") st.memory.fanOutFailed(e.topic);
      if (e.where === "fanned" || e.error instanceof RedisUnavailableError) out.lost.push(e);
      else st.failure ??= { error: e.error };
      // Its jobs are still due (or leased, and come back after the lease): look again soon.
      lookBy(st, f.now + f.tickPollMs);
      continue;
    }
    addOutcomes(out.outcomes, r.outcomes);
    if (e.where === "here") out.claimed.here += r.claimed;
    else {
      if (f.quietEmptyFanOuts && r.claimed === 0 && r.nextLookAt != null && r.nextLookAt <= e.startedAt) {
        if (full.has(e.topic) || f.running?.(e.topic)) lookBy(st, f.now);
        else st.memory.quiet(e.topic, f.now + f.tickPollMs);
        continue;
      }
      out.claimed.fanned += r.claimed;
      st.memory.claimed(e.topic, r.claimed, r.more, r.weight !== undefined ? { weight: r.weight } : {});
    }
    let look = r.nextLookAt ?? Infinity;
    // Its slots are free again: whatever waited for them is looked at now.
    if (st.awaitingChunk) {
      st.awaitingChunk = false;
      look = f.now;
    }
    if (Number.isFinite(look)) lookBy(st, r.more ? look : Math.max(look, st.pacedUntil));
  }
  return out;
}

// --- A loop ---

/** A loop's next step. */
export type LoopStep =
  | { kind: "fail"; error: unknown }
  | { kind: "end"; ended: "window" | "budget" }
  | { kind: "sleep"; ms: number }
  /** A round: a poll, due schedules fired, a plan (see roundStep). */
  | { kind: "poll" };

/** Picks a loop's next step, once what ended is folded in. */
export function nextLoopStep(st: TickState, f: { now: number; windowEnd: number; budgetLeft: number }): LoopStep {
  if (st.failure) return { kind: "fail", error: st.failure.error };
  if (f.now >= f.windowEnd) return { kind: "end", ended: "window" };
  if (f.now < st.nextLookAt) return { kind: "sleep", ms: st.nextLookAt - f.now };
  // A poll, the lock's release and a handover must stay affordable.
  if (f.budgetLeft < 3) return { kind: "end", ended: "budget" };
  return { kind: "poll" };
}

/**
 * Without a successor to hand over to, blind polls (looking for jobs nobody
 * told us about) may use at most half of what is left of the budget, so
 * polling alone can never end a loop early: with little budget left, the
 * poll interval stretches. Known due times are still met exactly.
 */
export const pollInterval = (f: { canHandOver: boolean; tickPollMs: number; now: number; windowEnd: number; budgetLeft: number }): number =>
  f.canHandOver ? f.tickPollMs : Math.max(f.tickPollMs, (f.windowEnd - f.now) / Math.max(1, f.budgetLeft / 2));

/** What a loop's poll saw: the due topics it names, whether it named them all, and the index's next due time. */
export type PeekFacts = { more: boolean; nextAt: number | null; due: Array<{ topic: string }> };

/**
 * The topics a poll found due that are not left alone, and the soonest time
 * anything asked to be looked at (at once if the poll could not name every
 * due topic; when a topic left alone may be looked at again).
 */
export function dueOfPeek(st: TickState, peek: PeekFacts, now: number): { due: string[]; wakeAt: number } {
  let wakeAt = peek.more ? now : (peek.nextAt ?? Infinity);
  const due = peek.due.map((d) => d.topic).filter((t) => !st.memory.isQuiet(t, now));
  if (due.length < peek.due.length) wakeAt = Math.min(wakeAt, ...st.memory.quietEnds(now));
  return { due, wakeAt };
}

/** What a round does with its plan: start its chunks, wait idle, or end the loop (the budget reached due topics with nothing, and nothing runs). */
export type RoundStep = { kind: "end" | "idle" | "start"; wakeAt: number };

export function roundStep(st: TickState, plan: RoundPlan, f: { now: number; wakeAt: number; running: boolean }): RoundStep {
  if (plan.waiting.length > 0) st.awaitingChunk = true;
  const wakeAt = plan.unserved > 0 ? f.now : f.wakeAt;
  const nothingToStart = plan.local.length === 0 && plan.remote.length === 0;
  if (nothingToStart && plan.unserved > 0 && !f.running) return { kind: "end", wakeAt };
  return { kind: nothingToStart ? "idle" : "start", wakeAt };
}

/**
 * The next poll after a round with nothing to start: as a running chunk ends,
 * at the next known work, a poll interval on, or (asleep: `sleep`, from the
 * SleepMark) after the idle look's sleep — never past the window.
 */
export function idleLookAt(f: { now: number; wakeAt: number; running: boolean; sleep: number | null; pollInterval: number; windowEnd: number }): number {
  // Work still runs: a chunk that ends brings the next poll forward.
  if (f.running) return Math.min(f.wakeAt, f.now + f.pollInterval, f.windowEnd);
  if (f.sleep !== null) return f.now + Math.min(f.sleep, f.windowEnd - f.now);
  return f.now + Math.min(f.wakeAt - f.now, f.pollInterval, f.windowEnd - f.now);
}

/**
 * How far ahead a round claims: a round's poll and claim take time, so claimed
 * that much further ahead (up to twice the lead), the jobs just past the lead
 * are back before they are due, not a round trip late.
 */
export const claimLead = (tickLeadMs: number, roundTripMs: number): number => (tickLeadMs > 0 ? tickLeadMs + Math.min(roundTripMs, tickLeadMs) : 0);

/** A chunk a round claimed here: what the plan gave it and what its claim saw. */
export interface RoundClaim {
  topic: string;
  max: number;
  claimed: number;
  more: boolean;
  nextLookAt: number | null;
  /** What the claim told of the topic's settings (nothing when it gave none). */
  seen?: TopicSeen;
}

/** The facts of a round that started work, once its claims are back. */
export interface RoundFacts {
  /** When the round began planning (after its schedules fired). */
  roundAt: number;
  /** After the claims came back. */
  now: number;
  /** The soonest time anything asked to be looked at before the claims. */
  wakeAt: number;
  /** The poll could not name every due topic. */
  more: boolean;
  budgetLeft: number;
  windowEnd: number;
  tickPollMs: number;
  pollInterval: number;
}

/**
 * Folds in a round's claims here and sets the next poll. A claim that found
 * its topic due when the round began yet took nothing leaves the topic alone
 * for a poll (`quieted`); a claim's next look brings the poll forward, as do
 * slots given to claims that took fewer jobs (free again for a topic that
 * waited for them). Returns the jobs claimed and when the loop looks next as
 * the round saw it (before the pace: for the log).
 */
export function afterRound(st: TickState, plan: RoundPlan, claims: RoundClaim[], f: RoundFacts): { claimed: number; quieted: string[]; wakeAt: number } {
  // What this round costs: the poll, the fan-outs, and per chunk here a claim (and a settle and a delivery a job).
  let price = 1 + plan.remote.length;
  let wakeAt = f.wakeAt;
  let full = false;
  let claimed = 0;
  const quieted: string[] = [];
  for (const c of claims) {
    price += chunkPrice(c.claimed);
    // Due already when the round began, yet nothing to take: a claim that found the topic's next job not yet due is not this.
    if (c.claimed === 0 && c.nextLookAt != null && c.nextLookAt <= f.roundAt) {
      st.memory.quiet(c.topic, f.now + f.tickPollMs);
      quieted.push(c.topic);
      continue;
    }
    claimed += c.claimed;
    st.memory.claimed(c.topic, c.claimed, c.more, c.seen);
    full ||= c.more;
    if (c.nextLookAt != null) wakeAt = Math.min(wakeAt, c.nextLookAt);
  }
  const unusedSlots = claims.reduce((n, c) => n + c.max - c.claimed, 0);
  const slotsFreed = plan.slotBound && unusedSlots > 0;
  if (slotsFreed) wakeAt = f.now;
  st.memory.forgetQuietBefore(f.roundAt);
  // A full chunk or more due topics than one poll names is a backlog: worked off at once.
  const next = nextPollAfterWork({ ...f, wakeAt, backlogged: f.more || plan.unserved > 0 || full || slotsFreed, price });
  st.nextLookAt = next.pollAt;
  st.pacedUntil = next.pacedUntil;
  return { claimed, quieted, wakeAt };
}

/**
 * When a round that did work polls next. A round not working off a backlog
 * is paced: rounds like it, back to back, must not spend the budget (less
 * the lock's release and a handover) before the window ends. A backlog is
 * worked off at once, handing over if the budget ends. Returns the pace's
 * floor too: a chunk that ends may not bring the next poll before it.
 */
export function nextPollAfterWork(
  a: Pick<RoundFacts, "now" | "roundAt" | "wakeAt" | "budgetLeft" | "windowEnd" | "tickPollMs" | "pollInterval"> & { backlogged: boolean; price: number },
): { pollAt: number; pacedUntil: number } {
  let wakeAt = a.wakeAt;
  let pacedUntil = -Infinity;
  if (!a.backlogged) {
    pacedUntil = paceFloor(a.roundAt, a.windowEnd - a.now, a.price, a.budgetLeft, 2, a.tickPollMs);
    wakeAt = Math.max(wakeAt, pacedUntil);
  }
  return { pollAt: a.now + Math.min(wakeAt - a.now, a.pollInterval, a.windowEnd - a.now), pacedUntil };
}

// --- A drain ---

/** What a drain knows, besides its state, when it picks its next step. */
export interface DrainFacts {
  topic: string;
  now: number;
  /** When the drain's horizon ends. */
  end: number;
  /** Chunks of the drain still run, here or fanned out. */
  running: boolean;
  /** The topic's chunks still running here and fanned out. */
  busy: { here: boolean; fanned: boolean };
  budgetLeft: number;
  /** Chunks can be fanned out (a runner and TICK_FANOUT > 0); the state says whether one of them failed. */
  canFanOut: boolean;
  /** Jobs a chunk here may claim beside what runs, before the budget bounds it. */
  room: number;
  /** The drain can hand the rest of its horizon to a drain of its own. */
  canHandOver: boolean;
  tickChunk: number;
  tickFanout: number;
  tickPollMs: number;
  tickIdlePeekMs: number;
}

/** A drain's next step. */
export type DrainStep =
  | { kind: "fail"; error: unknown }
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
 * Picks a drain's next step. As the loop does: a chunk runs here while the
 * drain can afford one like it every poll interval until its horizon ends;
 * beyond that, or for a backlog, chunks are fanned out, and a topic whose
 * fanned-out chunk is still out is served here meanwhile if the pace allows.
 * One subrequest stays for a handover. A fan-out or a hold leaves the next
 * step to the chunks that run.
 */
export function nextDrainStep(st: TickState, f: DrainFacts): DrainStep {
  if (st.failure) return { kind: "fail", error: st.failure.error };
  if (st.nextLookAt > f.end) return pastHorizon(st, f);
  if (f.now < st.nextLookAt) return { kind: "sleep", ms: st.nextLookAt - f.now };
  const t = st.memory.view(f.topic, f.busy, f.room);
  const left = f.budgetLeft - 1;
  const pace = left / Math.max(1, (f.end - f.now) / f.tickPollMs);
  const price = 2 + Math.min(f.tickChunk, Math.max(1, t.lastTaken ?? 1));
  if (f.canFanOut && !t.noFanOut && (t.backlog || price > pace) && left >= 1) {
    if (!f.busy.here && !f.busy.fanned) return waitForChunks(st, { kind: "fan-out", chunks: Math.min(t.backlog ? f.tickFanout : 1, left) });
    if (price > pace) return waitForChunks(st, { kind: "hold" });
  }
  const max = Math.max(0, Math.min(f.room, left - CHUNK_OVERHEAD));
  // Every slot is taken: a step as a chunk ends.
  if (left > CHUNK_OVERHEAD && max < 1) return waitForChunks(st, { kind: "hold" });
  if (left > CHUNK_OVERHEAD) return { kind: "claim", max };
  if (f.running) return { kind: "wait-all" };
  if (f.canHandOver && f.end - f.now > 0 && f.budgetLeft >= 1) return { kind: "hand-over", horizonMs: f.end - f.now };
  return { kind: "end" };
}

function waitForChunks(st: TickState, step: DrainStep): DrainStep {
  st.nextLookAt = Infinity;
  return step;
}

/**
 * Nothing to do within the horizon. A retry this drain scheduled may fall due after its horizon but before the
 * sleeping tick's next look, which was taken before the retry existed: the drain follows the topic to it while the
 * tick still sleeps — chunks running or not, so a slot one freed early is taken at once, not as its slowest handler
 * ends. Anything due later than a peek from now a sleeping look still finds in time; the drain waits for its chunks.
 */
function pastHorizon(st: TickState, f: DrainFacts): DrainStep {
  if (st.nextLookAt - f.now <= f.tickIdlePeekMs && f.budgetLeft >= 2) return { kind: "ask-tick", until: st.nextLookAt };
  return f.running ? { kind: "wait" } : { kind: "end" };
}

/**
 * Folds in a drain's claim here: the topic's memory, when the drain is back,
 * and the pace's floor that a chunk ending later may not bring it before. A
 * claim that got nothing and wants to be back at once would spin: the tick's
 * next look takes over (the drain ends once its chunks have, and the floor
 * stays as it was). Otherwise a trickle is paced like the loop's: gathered
 * into steps at most a poll interval apart, so steps like this one do not
 * spend the budget before the horizon ends.
 */
export function afterClaim(
  st: TickState,
  c: { topic: string; claimed: number; more: boolean; nextLookAt: number | null },
  f: {
    /** When the step began (before its claim). */
    stepAt: number;
    /** After the claim came back. */
    now: number;
    end: number;
    /** What the budget has left after the claim's reservation. */
    budgetLeft: number;
    tickPollMs: number;
  },
): void {
  st.memory.claimed(c.topic, c.claimed, c.more);
  if (c.claimed === 0 && c.nextLookAt !== null && c.nextLookAt <= f.now) {
    st.nextLookAt = Infinity;
    return;
  }
  if (c.more || c.nextLookAt === null) {
    st.nextLookAt = c.nextLookAt ?? Infinity;
    st.pacedUntil = -Infinity;
    return;
  }
  st.pacedUntil = paceFloor(f.stepAt, f.end - f.stepAt, chunkPrice(c.claimed), f.budgetLeft, 1, f.tickPollMs);
  st.nextLookAt = Math.max(c.nextLookAt, st.pacedUntil);
}
