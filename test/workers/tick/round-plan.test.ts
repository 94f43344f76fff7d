/**
 * The round planner and the sleep mark's state, as plain unit tests (the
 * tick's other decisions: decisions.test.ts; its behaviour over time: the model test).
 */
import { describe, expect, it } from "vitest";
import { CHUNK_OVERHEAD, planRound, type DueTopic, type RoundLimits } from "../../../src/tick/round-plan.js";
import { SleepMark } from "../../../src/tick/sleep-mark.js";

const idle = { here: false, fanned: false };
const topic = (name: string, more: Partial<DueTopic> = {}): DueTopic => ({ topic: name, backlog: false, noFanOut: false, running: idle, room: 100, ...more });
const limits = (more: Partial<RoundLimits> = {}): RoundLimits => ({
  tickChunk: 100,
  tickFanout: 4,
  tickPollMs: 1_000,
  budgetLeft: 10_000,
  fanning: true,
  windowLeftMs: 60_000,
  freeSlots: 50,
  ...more,
});

describe("planRound", () => {
  it("runs a trickle here, sharing TICK_CONCURRENCY's free slots out rather than promising them twice", () => {
    expect(planRound([topic("a", { lastTaken: 3 }), topic("b")], 0, limits())).toEqual({
      local: [{ topic: "a", max: 50 }],
      remote: [],
      waiting: ["b"],
      unserved: 0,
      slotBound: true,
    });
  });

  it("fans a backlog out in TICK_FANOUT chunks, and a topic past the pace in one", () => {
    expect(planRound([topic("c", { backlog: true })], 0, limits()).remote).toEqual(Array(4).fill({ topic: "c", max: 100 }));
    // 98 subrequests over 60 polls: a chunk here of 12 is past the pace.
    expect(planRound([topic("d", { lastTaken: 10 })], 0, limits({ budgetLeft: 100 }))).toEqual({
      local: [],
      remote: [{ topic: "d", max: 100 }],
      waiting: [],
      unserved: 0,
      slotBound: false,
    });
  });

  it("gives a topic whose fanned-out chunk is still out no second one: served here if the pace allows, else it waits", () => {
    const out = { here: false, fanned: true };
    expect(planRound([topic("e", { backlog: true, running: out })], 0, limits()).local).toEqual([{ topic: "e", max: 50 }]);
    expect(planRound([topic("f", { lastTaken: 10, running: out })], 0, limits({ budgetLeft: 100 }))).toEqual({
      local: [],
      remote: [],
      waiting: ["f"],
      unserved: 0,
      slotBound: false,
    });
  });

  it("says when a topic waits only for TICK_CONCURRENCY's slots that topics before it were given", () => {
    expect(planRound([topic("a"), topic("b")], 0, limits({ freeSlots: 10 }))).toMatchObject({
      local: [{ topic: "a", max: 10 }],
      waiting: ["b"],
      slotBound: true,
    });
    expect(planRound([topic("a"), topic("b", { room: 0 })], 0, limits({ freeSlots: 10 })).slotBound).toBe(false);
  });

  it("lets a topic with no free slot wait, and never fans out a topic whose fan-out failed", () => {
    expect(planRound([topic("g", { room: 0 })], 0, limits()).waiting).toEqual(["g"]);
    expect(planRound([topic("h", { backlog: true, noFanOut: true })], 0, limits()).local).toEqual([{ topic: "h", max: 50 }]);
  });

  it("shares a tight budget evenly from the rotation's start, and counts who it could not reach", () => {
    const due = [topic("a"), topic("b"), topic("c")];
    // Two chunks of one job fit (a chunk costs its job and CHUNK_OVERHEAD), the third does not.
    const tight = limits({ fanning: false, budgetLeft: 2 + 2 * (CHUNK_OVERHEAD + 1), freeSlots: 50 });
    expect(planRound(due, 1, tight)).toEqual({
      local: [
        { topic: "b", max: 1 },
        { topic: "c", max: 1 },
      ],
      remote: [],
      waiting: [],
      unserved: 1,
      slotBound: false,
    });
    expect(planRound(due, 2, tight).local.map((l) => l.topic)).toEqual(["c", "a"]);
  });
});

describe("SleepMark", () => {
  const s = { tickIdlePeekMs: 20_000, tickPollMs: 1_000 };

  it("clears a stale mark first, marks after three quiet rounds, and sleeps once every producer has seen the mark", () => {
    const mark = new SleepMark(s);
    expect(mark.pending).toBe("clear");
    mark.polled(0);
    expect([mark.idle(0, Infinity), mark.idle(100, Infinity)]).toEqual([null, null]);
    expect(mark.pending).toBeUndefined();
    expect(mark.idle(200, Infinity)).toBeNull();
    expect(mark.pending).toBe(60_000);
    expect(mark.asleep).toBe(true);
    mark.polled(3_000);
    // The producers' view may be a second stale: keep polling a second and a poll more.
    expect(mark.idle(4_999, Infinity)).toBeNull();
    expect(mark.idle(5_000, Infinity)).toBe(20_000);
    // Asleep, it looks a poll before known work.
    mark.polled(5_000);
    expect(mark.idle(25_000, 25_000 + 20_500)).toBe(19_500);
  });

  it("clears the mark when work starts or something is due within a peek", () => {
    const mark = new SleepMark(s);
    mark.polled(0);
    for (const t of [0, 1, 2]) mark.idle(t, Infinity);
    mark.polled(3);
    mark.worked();
    expect(mark.pending).toBe("clear");
    expect(mark.asleep).toBe(false);
    mark.polled(4);
    for (const t of [5, 6, 7]) mark.idle(t, Infinity);
    mark.polled(8);
    expect(mark.idle(9, 9 + 5_000)).toBeNull();
    expect(mark.pending).toBe("clear");
  });

  it("never marks with TICK_IDLE_PEEK_MS=0", () => {
    const mark = new SleepMark({ tickIdlePeekMs: 0, tickPollMs: 1_000 });
    mark.polled(0);
    for (let t = 0; t < 10; t++) expect(mark.idle(t, Infinity)).toBeNull();
    expect(mark.pending).toBeUndefined();
  });
});
