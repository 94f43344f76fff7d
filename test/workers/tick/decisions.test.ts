/**
 * The tick's decisions (src/tick/decisions.ts) driven directly with plain
 * facts: no Redis, no clock. What they add up to over time is the loop
 * tests' and the model test's (which drives this core too).
 */
import { describe, expect, it } from "vitest";
import { noOutcomes } from "../../../src/env.js";
import { RedisUnavailableError } from "../../../src/queue/errors.js";
import {
  afterClaim,
  afterRound,
  dueOfPeek,
  foldEnded,
  idleLookAt,
  newTickState,
  nextDrainStep,
  nextLoopStep,
  nextPollAfterWork,
  pollInterval,
  roundStep,
  type DrainFacts,
  type FoldFacts,
  type RoundFacts,
} from "../../../src/tick/decisions.js";
import type { EndedChunk } from "../../../src/tick/in-flight.js";
import { CHUNK_OVERHEAD, type RoundPlan } from "../../../src/tick/round-plan.js";

const idle = { here: false, fanned: false };
const loopFold: FoldFacts = { now: 5_000, tickPollMs: 1_000, quietEmptyFanOuts: true };
const drainFold: FoldFacts = { ...loopFold, quietEmptyFanOuts: false };

/** A chunk that ended with a report of `claimed` jobs (more: it came back full). */
const ended = (where: EndedChunk["where"], r: { claimed?: number; more?: boolean; nextLookAt?: number | null } = {}, topic = "t"): EndedChunk => ({
  topic,
  where,
  startedAt: 4_000,
  report: {
    claimed: r.claimed ?? 1,
    outcomes: { ...noOutcomes(), ack: r.claimed ?? 1 },
    subrequests: 0,
    more: r.more ?? false,
    nextLookAt: r.nextLookAt ?? null,
  },
});
const failed = (where: EndedChunk["where"], error: unknown): EndedChunk => ({ topic: "t", where, startedAt: 4_000, report: null, error });

describe("foldEnded", () => {
  it("brings the next look to what running chunks settled early, and to an ended chunk's next look", () => {
    const st = newTickState(9_000);
    foldEnded(st, [8_000, 8_500], [], loopFold);
    expect(st.nextLookAt).toBe(8_000);
    foldEnded(st, [], [ended("here", { nextLookAt: 6_000 })], loopFold);
    expect(st.nextLookAt).toBe(6_000);
  });

  it("keeps a trickle's chunk to the pace of the round that started it, and a backlog's not", () => {
    const st = newTickState(9_000);
    st.pacedUntil = 7_000;
    foldEnded(st, [], [ended("here", { nextLookAt: 6_000 })], loopFold);
    expect(st.nextLookAt).toBe(7_000);
    foldEnded(st, [], [ended("here", { nextLookAt: 6_000, more: true })], loopFold);
    expect(st.nextLookAt).toBe(6_000);
  });

  it("looks at once as a chunk ends when due topics waited for one", () => {
    const st = newTickState(9_000);
    st.awaitingChunk = true;
    foldEnded(st, [], [ended("here")], loopFold);
    expect({ next: st.nextLookAt, awaiting: st.awaitingChunk }).toEqual({ next: 5_000, awaiting: false });
  });

  it("counts jobs and outcomes, here and fanned out, and remembers what a fanned-out chunk took", () => {
    const st = newTickState(9_000);
    const f = foldEnded(st, [], [ended("here", { claimed: 3 }), ended("fanned", { claimed: 4, more: true })], loopFold);
    expect(f.claimed).toEqual({ here: 3, fanned: 4 });
    expect(f.outcomes.ack).toBe(7);
    expect(st.memory.view("t", idle, 1)).toMatchObject({ lastTaken: 4, backlog: true });
  });

  it("a failed fan-out or an outage loses the chunk (looked at again within a poll); anything else is a failure", () => {
    const st = newTickState(Infinity);
    const f = foldEnded(st, [], [failed("fanned", new Error("runner")), failed("here", new RedisUnavailableError("down"))], drainFold);
    expect(f.lost.map((e) => e.where)).toEqual(["fanned", "here"]);
    expect(st.nextLookAt).toBe(6_000);
    expect(st.memory.view("t", idle, 1).noFanOut).toBe(true);
    expect(st.failure).toBeUndefined();
    const bug = new TypeError("a bug");
    foldEnded(st, [], [failed("here", bug), failed("here", new Error("second"))], drainFold);
    expect(st.failure).toEqual({ error: bug });
  });

  it("leaves a topic alone for a poll when its fanned-out chunk got nothing though due: the loop does, a drain does not", () => {
    const empty = ended("fanned", { claimed: 0, nextLookAt: 3_000 });
    const loop = newTickState(9_000);
    foldEnded(loop, [], [empty], loopFold);
    expect({ next: loop.nextLookAt, quiet: loop.memory.isQuiet("t", 5_999) }).toEqual({ next: 9_000, quiet: true });
    const drain = newTickState(9_000);
    foldEnded(drain, [], [empty], drainFold);
    expect({ next: drain.nextLookAt, quiet: drain.memory.isQuiet("t", 5_000) }).toEqual({ next: 3_000, quiet: false });
  });

  it("does not leave a topic alone when its empty fanned-out chunk lost a race to one of it that came back full or still runs", () => {
    const empty = ended("fanned", { claimed: 0, nextLookAt: 3_000 });
    const beside = newTickState(9_000);
    foldEnded(beside, [], [empty, ended("fanned", { claimed: 2, more: true, nextLookAt: 4_000 })], loopFold);
    expect({ next: beside.nextLookAt, quiet: beside.memory.isQuiet("t", 5_000) }).toEqual({ next: 4_000, quiet: false });
    const running = newTickState(9_000);
    foldEnded(running, [], [empty], { ...loopFold, running: (topic) => topic === "t" });
    expect({ next: running.nextLookAt, quiet: running.memory.isQuiet("t", 5_000) }).toEqual({ next: 5_000, quiet: false });
  });
});

describe("a loop's steps", () => {
  const at = (now: number, budgetLeft = 100) => ({ now, windowEnd: 60_000, budgetLeft });

  it("rethrows a chunk's failure first, ends at its window, sleeps until its next look, and keeps three subrequests", () => {
    const st = newTickState(2_000);
    expect(nextLoopStep(st, at(1_000))).toEqual({ kind: "sleep", ms: 1_000 });
    expect(nextLoopStep(st, at(2_000))).toEqual({ kind: "poll" });
    // A poll, the lock's release and a handover.
    expect(nextLoopStep(st, at(2_000, 2))).toEqual({ kind: "end", ended: "budget" });
    expect(nextLoopStep(st, at(60_000))).toEqual({ kind: "end", ended: "window" });
    st.failure = { error: "bug" };
    expect(nextLoopStep(st, at(60_000))).toEqual({ kind: "fail", error: "bug" });
  });

  it("takes the due topics not left alone from a poll, and wakes when those left alone may be looked at again", () => {
    const st = newTickState(0);
    st.memory.quiet("b", 3_000);
    expect(dueOfPeek(st, { more: false, nextAt: 8_000, due: [{ topic: "a" }, { topic: "b" }] }, 1_000)).toEqual({ due: ["a"], wakeAt: 3_000 });
    expect(dueOfPeek(st, { more: true, nextAt: 8_000, due: [{ topic: "a" }] }, 1_000)).toEqual({ due: ["a"], wakeAt: 1_000 });
  });

  it("starts a plan, waits idle, or ends when the budget reached due topics with nothing and nothing runs", () => {
    const plan = (p: Partial<RoundPlan>): RoundPlan => ({ local: [], remote: [], waiting: [], unserved: 0, slotBound: false, ...p });
    const st = newTickState(0);
    const f = { now: 1_000, wakeAt: 5_000, running: false };
    expect(roundStep(st, plan({ local: [{ topic: "a", max: 1 }] }), f)).toEqual({ kind: "start", wakeAt: 5_000 });
    expect(roundStep(st, plan({}), f)).toEqual({ kind: "idle", wakeAt: 5_000 });
    expect(roundStep(st, plan({ unserved: 1 }), f)).toEqual({ kind: "end", wakeAt: 1_000 });
    expect(roundStep(st, plan({ unserved: 1, waiting: ["a"] }), { ...f, running: true })).toEqual({ kind: "idle", wakeAt: 1_000 });
    expect(st.awaitingChunk).toBe(true);
  });

  it("idle, polls at the next known work or a poll interval on, or sleeps the idle look's sleep, never past the window", () => {
    const f = { now: 1_000, wakeAt: 30_000, running: false, sleep: null, pollInterval: 1_000, windowEnd: 60_000 };
    expect(idleLookAt(f)).toBe(2_000);
    expect(idleLookAt({ ...f, wakeAt: 1_500, running: true })).toBe(1_500);
    expect(idleLookAt({ ...f, sleep: 20_000 })).toBe(21_000);
    expect(idleLookAt({ ...f, sleep: 20_000, windowEnd: 10_000 })).toBe(10_000);
  });

  it("stretches blind polls to half the budget left without a successor to hand over to", () => {
    const f = { canHandOver: false, tickPollMs: 1_000, now: 0, windowEnd: 60_000, budgetLeft: 40 };
    expect(pollInterval(f)).toBe(3_000);
    expect(pollInterval({ ...f, canHandOver: true })).toBe(1_000);
    expect(pollInterval({ ...f, budgetLeft: 10_000 })).toBe(1_000);
  });
});

describe("afterRound and nextPollAfterWork", () => {
  const plan: RoundPlan = { local: [{ topic: "a", max: 5 }], remote: [], waiting: [], unserved: 0, slotBound: false };
  const facts: RoundFacts = {
    roundAt: 1_000,
    now: 1_010,
    wakeAt: 9_000,
    more: false,
    budgetLeft: 10_000,
    windowEnd: 60_000,
    tickPollMs: 1_000,
    pollInterval: 1_000,
  };
  const claim = { topic: "a", max: 5, claimed: 5, more: false, nextLookAt: 1_500 };

  it("brings the next poll to a claim's next look, paced, and remembers what the claim took", () => {
    const st = newTickState(0);
    expect(afterRound(st, plan, [claim], facts)).toEqual({ claimed: 5, quieted: [], wakeAt: 1_500 });
    expect(st.nextLookAt).toBe(1_500);
    expect(st.memory.view("a", idle, 1)).toMatchObject({ lastTaken: 5, backlog: false });
  });

  it("works a backlog off at once: a full claim, or more due than one poll names", () => {
    const st = newTickState(0);
    afterRound(st, plan, [{ ...claim, more: true, nextLookAt: 1_010 }], { ...facts, budgetLeft: 100 });
    expect({ next: st.nextLookAt, paced: st.pacedUntil }).toEqual({ next: 1_010, paced: -Infinity });
  });

  it("leaves a topic alone for a poll when its claim got nothing though due when the round began", () => {
    const st = newTickState(0);
    const after = afterRound(st, plan, [{ ...claim, claimed: 0, nextLookAt: 900 }], facts);
    expect(after.quieted).toEqual(["a"]);
    expect(st.memory.isQuiet("a", 2_000)).toBe(true);
  });

  it("polls at once when slots a claim did not take were what a topic waited for", () => {
    const st = newTickState(0);
    afterRound(st, { ...plan, slotBound: true, waiting: ["b"] }, [{ ...claim, claimed: 2 }], { ...facts, more: true });
    expect(st.nextLookAt).toBe(1_010);
  });

  it("paces a trickle: rounds like this one must not spend the budget before the window ends", () => {
    const base = { now: 10, roundAt: 0, wakeAt: 200, price: 52, budgetLeft: 1_000, windowEnd: 60_000, tickPollMs: 1_000, pollInterval: 1_000 };
    expect(nextPollAfterWork({ ...base, backlogged: false })).toEqual({ pollAt: 1_000, pacedUntil: 1_000 });
    // With budget to spare the pace is no floor: the next due time decides.
    expect(nextPollAfterWork({ ...base, backlogged: false, budgetLeft: 1_000_000 }).pollAt).toBe(200);
    expect(nextPollAfterWork({ ...base, backlogged: true, wakeAt: 10 })).toEqual({ pollAt: 10, pacedUntil: -Infinity });
  });
});

describe("a drain's steps", () => {
  const facts = (more: Partial<DrainFacts> = {}): DrainFacts => ({
    topic: "t",
    now: 1_000,
    end: 21_000,
    running: false,
    busy: idle,
    budgetLeft: 10_000,
    canFanOut: false,
    room: Infinity,
    canHandOver: true,
    tickChunk: 100,
    tickFanout: 4,
    tickPollMs: 1_000,
    tickIdlePeekMs: 20_000,
    ...more,
  });
  /** The drain's step with its next look at `next`, its last chunk having taken `lastTaken` (full: more was ready). */
  const step = (f: Partial<DrainFacts> = {}, s: { next?: number; lastTaken?: number; full?: boolean } = {}) => {
    const st = newTickState(s.next ?? 1_000);
    if (s.lastTaken !== undefined || s.full) st.memory.claimed("t", s.lastTaken ?? 1, s.full ?? false);
    return nextDrainStep(st, facts(f));
  };
  const fanning = { canFanOut: true };

  it("claims what the budget and the topic's room allow, keeping a subrequest for a handover", () => {
    expect(step()).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
    expect(step({ room: 7 })).toEqual({ kind: "claim", max: 7 });
    // A handover's subrequest, a chunk's overhead (its claim at most, its settle) and one job.
    expect(step({ budgetLeft: CHUNK_OVERHEAD + 2 })).toEqual({ kind: "claim", max: 1 });
  });

  it("sleeps until the next step is due, and holds while every slot is taken", () => {
    expect(step({}, { next: 1_250 })).toEqual({ kind: "sleep", ms: 250 });
    expect(step({ room: 0, running: true, busy: { here: true, fanned: false } })).toEqual({ kind: "hold" });
  });

  it("fans a backlog out in TICK_FANOUT chunks, and a chunk past the pace in one, then waits for them", () => {
    const st = newTickState(1_000);
    st.memory.claimed("t", 100, true);
    expect(nextDrainStep(st, facts(fanning))).toEqual({ kind: "fan-out", chunks: 4 });
    expect(st.nextLookAt).toBe(Infinity);
    // 99 subrequests over 20 poll intervals: a chunk here of 12 is past the pace.
    expect(step({ ...fanning, budgetLeft: 100 }, { lastTaken: 10 })).toEqual({ kind: "fan-out", chunks: 1 });
    // Within the pace a trickle runs here; and so does a backlog once a fan-out failed.
    expect(step(fanning, { lastTaken: 10 })).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
    st.memory.fanOutFailed("t");
    st.nextLookAt = 1_000;
    expect(nextDrainStep(st, facts(fanning))).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
  });

  it("gives a topic whose chunk is still out no second fan-out: served here if the pace allows, else it holds", () => {
    const out = { ...fanning, running: true, busy: { here: false, fanned: true } };
    expect(step(out, { full: true })).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
    expect(step({ ...out, budgetLeft: 100 }, { lastTaken: 10 })).toEqual({ kind: "hold" });
  });

  it("out of budget, waits for what runs, then hands the rest of the horizon over if it can", () => {
    expect(step({ budgetLeft: 3, running: true })).toEqual({ kind: "wait-all" });
    expect(step({ budgetLeft: 3 })).toEqual({ kind: "hand-over", horizonMs: 20_000 });
    expect(step({ budgetLeft: 3, canHandOver: false })).toEqual({ kind: "end" });
    expect(step({ budgetLeft: 0 })).toEqual({ kind: "end" });
  });

  it("past its horizon, follows a retry due within a peek only while the tick sleeps, else waits for running chunks", () => {
    expect(step({ running: true }, { next: Infinity })).toEqual({ kind: "wait" });
    expect(step({ running: true }, { next: 30_000 })).toEqual({ kind: "wait" });
    expect(step({}, { next: Infinity })).toEqual({ kind: "end" });
    expect(step({ now: 20_000 }, { next: 30_000 })).toEqual({ kind: "ask-tick", until: 30_000 });
    // Later than a peek from now, a sleeping look still finds it in time; and asking costs a subrequest.
    expect(step({ now: 20_000 }, { next: 40_001 })).toEqual({ kind: "end" });
    expect(step({ now: 20_000, budgetLeft: 1 }, { next: 30_000 })).toEqual({ kind: "end" });
  });

  it("past its horizon, follows what a running chunk freed early or scheduled at its time, not when the chunk's slowest handler ends", () => {
    // A chunk settled part of itself early (a look now): the jobs its topic's concurrency held back may start.
    expect(step({ now: 25_000, running: true }, { next: 25_000 })).toEqual({ kind: "ask-tick", until: 25_000 });
    // A retry it scheduled, due before the chunk ends.
    expect(step({ now: 25_000, running: true }, { next: 25_500 })).toEqual({ kind: "ask-tick", until: 25_500 });
    expect(step({ now: 25_000, running: true, budgetLeft: 1 }, { next: 25_000 })).toEqual({ kind: "wait" });
  });

  it("rethrows a chunk's failure before anything else", () => {
    const st = newTickState(1_000);
    st.failure = { error: "bug" };
    expect(nextDrainStep(st, facts())).toEqual({ kind: "fail", error: "bug" });
  });
});

describe("afterClaim", () => {
  const claim = { topic: "t", claimed: 5, more: false, nextLookAt: 1_100 as number | null };
  const f = { stepAt: 1_000, now: 1_010, end: 21_000, budgetLeft: 101, tickPollMs: 1_000 };
  const backAfter = (c: Partial<typeof claim> = {}, more: Partial<typeof f> = {}) => {
    const st = newTickState(1_000);
    st.pacedUntil = 500;
    afterClaim(st, { ...claim, ...c }, { ...f, ...more });
    return { next: st.nextLookAt, pacedUntil: st.pacedUntil, lastTaken: st.memory.view("t", idle, 1).lastTaken };
  };

  it("paces a trickle: steps like this one must not spend the budget before the horizon ends", () => {
    // 7 subrequests a step, 100 left over 20 s: a step every 1,400 ms, at most a poll interval apart.
    expect(backAfter()).toEqual({ next: 2_000, pacedUntil: 2_000, lastTaken: 5 });
    expect(backAfter({}, { budgetLeft: 1_401 })).toMatchObject({ next: 1_100, pacedUntil: 1_100 });
    // A claim that got nothing is priced at one subrequest.
    expect(backAfter({ claimed: 0 }, { budgetLeft: 401 })).toMatchObject({ next: 1_100, pacedUntil: 1_050 });
  });

  it("works a backlog off at once, and leaves a claim that names no next look to the running chunks", () => {
    expect(backAfter({ more: true, nextLookAt: 1_010 })).toMatchObject({ next: 1_010, pacedUntil: -Infinity });
    expect(backAfter({ nextLookAt: null })).toMatchObject({ next: Infinity, pacedUntil: -Infinity });
  });

  it("never spins on a claim that got nothing and wants to be back at once: the tick's next look takes over", () => {
    expect(backAfter({ claimed: 0, nextLookAt: 1_010 })).toEqual({ next: Infinity, pacedUntil: 500, lastTaken: 0 });
    expect(backAfter({ claimed: 0, nextLookAt: 900 })).toMatchObject({ next: Infinity, pacedUntil: 500 });
  });
});
