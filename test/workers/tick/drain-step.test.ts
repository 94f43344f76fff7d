/**
 * The drain's pure decisions, as plain unit tests (the drain's behaviour over
 * time is the loop tests' and the model test's).
 */
import { describe, expect, it } from "vitest";
import { nextAfterClaim, nextDrainStep, type DrainFacts } from "../../../src/tick/drain-step.js";
import { CHUNK_OVERHEAD } from "../../../src/tick/round-plan.js";

const idle = { here: false, fanned: false };
const facts = (more: Partial<DrainFacts> = {}): DrainFacts => ({
  now: 1_000,
  next: 1_000,
  end: 21_000,
  running: false,
  busy: idle,
  budgetLeft: 10_000,
  fanning: false,
  full: false,
  lastTaken: 1,
  room: Infinity,
  canHandOver: true,
  tickChunk: 100,
  tickFanout: 4,
  tickPollMs: 1_000,
  tickIdlePeekMs: 20_000,
  ...more,
});

describe("nextDrainStep", () => {
  it("claims what the budget and the topic's room allow, keeping a subrequest for a handover", () => {
    expect(nextDrainStep(facts())).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
    expect(nextDrainStep(facts({ room: 7 }))).toEqual({ kind: "claim", max: 7 });
    // A handover's subrequest, a chunk's overhead (its claim at most, its settle) and one job.
    expect(nextDrainStep(facts({ budgetLeft: CHUNK_OVERHEAD + 2 }))).toEqual({ kind: "claim", max: 1 });
  });

  it("sleeps until the next step is due, and holds while every slot is taken", () => {
    expect(nextDrainStep(facts({ next: 1_250 }))).toEqual({ kind: "sleep", ms: 250 });
    expect(nextDrainStep(facts({ room: 0, running: true, busy: { here: true, fanned: false } }))).toEqual({ kind: "hold" });
  });

  it("fans a backlog out in TICK_FANOUT chunks, and a chunk past the pace in one", () => {
    expect(nextDrainStep(facts({ fanning: true, full: true }))).toEqual({ kind: "fan-out", chunks: 4 });
    // 99 subrequests over 20 poll intervals: a chunk here of 12 is past the pace.
    expect(nextDrainStep(facts({ fanning: true, lastTaken: 10, budgetLeft: 100 }))).toEqual({ kind: "fan-out", chunks: 1 });
    // Within the pace a trickle runs here.
    expect(nextDrainStep(facts({ fanning: true, lastTaken: 10 }))).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
  });

  it("gives a topic whose chunk is still out no second fan-out: served here if the pace allows, else it holds", () => {
    const out = { here: false, fanned: true };
    expect(nextDrainStep(facts({ fanning: true, full: true, running: true, busy: out }))).toEqual({ kind: "claim", max: 9_999 - CHUNK_OVERHEAD });
    expect(nextDrainStep(facts({ fanning: true, lastTaken: 10, budgetLeft: 100, running: true, busy: out }))).toEqual({ kind: "hold" });
  });

  it("out of budget, waits for what runs, then hands the rest of the horizon over if it can", () => {
    expect(nextDrainStep(facts({ budgetLeft: 3, running: true }))).toEqual({ kind: "wait-all" });
    expect(nextDrainStep(facts({ budgetLeft: 3 }))).toEqual({ kind: "hand-over", horizonMs: 20_000 });
    expect(nextDrainStep(facts({ budgetLeft: 3, canHandOver: false }))).toEqual({ kind: "end" });
    expect(nextDrainStep(facts({ budgetLeft: 0 }))).toEqual({ kind: "end" });
  });

  it("past its horizon, waits for running chunks, then follows a retry due within a peek only while the tick sleeps", () => {
    expect(nextDrainStep(facts({ next: null, running: true }))).toEqual({ kind: "wait" });
    expect(nextDrainStep(facts({ next: 30_000, running: true }))).toEqual({ kind: "wait" });
    expect(nextDrainStep(facts({ next: null }))).toEqual({ kind: "end" });
    expect(nextDrainStep(facts({ now: 20_000, next: 30_000 }))).toEqual({ kind: "ask-tick", until: 30_000 });
    // Later than a peek from now, a sleeping look still finds it in time; and asking costs a subrequest.
    expect(nextDrainStep(facts({ now: 20_000, next: 40_001 }))).toEqual({ kind: "end" });
    expect(nextDrainStep(facts({ now: 20_000, next: 30_000, budgetLeft: 1 }))).toEqual({ kind: "end" });
  });
});

describe("nextAfterClaim", () => {
  const base = { claimed: 5, more: false, nextLookAt: 1_100, stepAt: 1_000, now: 1_010, end: 21_000, budgetLeft: 101, tickPollMs: 1_000, pacedUntil: 500 };

  it("paces a trickle: steps like this one must not spend the budget before the horizon ends", () => {
    // 7 subrequests a step, 100 left over 20 s: a step every 1,400 ms, at most a poll interval apart.
    expect(nextAfterClaim(base)).toEqual({ next: 2_000, pacedUntil: 2_000 });
    expect(nextAfterClaim({ ...base, budgetLeft: 1_401 })).toEqual({ next: 1_100, pacedUntil: 1_100 });
    // A claim that got nothing is priced at one subrequest.
    expect(nextAfterClaim({ ...base, claimed: 0, budgetLeft: 401 })).toEqual({ next: 1_100, pacedUntil: 1_050 });
  });

  it("works a backlog off at once, and leaves a claim that names no next look to the running chunks", () => {
    expect(nextAfterClaim({ ...base, more: true, nextLookAt: 1_010 })).toEqual({ next: 1_010, pacedUntil: -Infinity });
    expect(nextAfterClaim({ ...base, nextLookAt: null })).toEqual({ next: null, pacedUntil: -Infinity });
  });

  it("never spins on a claim that got nothing and wants to be back at once: the tick's next look takes over", () => {
    expect(nextAfterClaim({ ...base, claimed: 0, nextLookAt: 1_010 })).toEqual({ next: null, pacedUntil: 500 });
    expect(nextAfterClaim({ ...base, claimed: 0, nextLookAt: 900 })).toEqual({ next: null, pacedUntil: 500 });
  });
});
