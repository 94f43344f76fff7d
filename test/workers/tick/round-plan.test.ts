/**
 * The round planner and the sleep mark's state, as plain unit tests (the
 * tick's other decisions: decisions.test.ts; its behaviour over time: the model test).
 */
import { describe, expect, it } from "vitest";
import { MAX_BATCH } from "../../../src/limits.js";
import { CHUNK_OVERHEAD, planRound, type DueTopic, type RoundLimits, type RoundPlan } from "../../../src/tick/round-plan.js";
import { SleepMark } from "../../../src/tick/sleep-mark.js";
import { TopicMemory } from "../../../src/tick/topic-memory.js";

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

describe("planRound with weights", () => {
  const here = limits({ fanning: false, tickChunk: 8, tickConcurrency: 4, freeSlots: Infinity });
  const sized = (plan: RoundPlan) => Object.fromEntries(plan.local.map((l) => [l.topic, l.max]));

  it("sizes the chunks of topics contending for TICK_CONCURRENCY by their shares: the lightest TICK_CHUNK, a weight-3 topic three times that", () => {
    expect(sized(planRound([topic("a", { weight: 3 }), topic("b")], 0, here))).toEqual({ a: 24, b: 8 });
    // Only the ratio counts: weights 6 and 2 are 3 and 1.
    expect(sized(planRound([topic("a", { weight: 6 }), topic("b", { weight: 2 })], 0, here))).toEqual({ a: 24, b: 8 });
    // At most MAX_BATCH.
    expect(sized(planRound([topic("a", { weight: 100, room: 5_000 }), topic("b")], 0, limits({ ...here, tickChunk: 100, budgetLeft: 100_000 })))).toEqual({
      a: MAX_BATCH,
      b: 100,
    });
  });

  it("changes nothing where topics do not contend: every one can run all its handlers at once, or all share one weight", () => {
    const roomy = limits({ ...here, tickConcurrency: 50 });
    expect(sized(planRound([topic("a", { weight: 3, slots: 10 }), topic("b", { slots: 10 })], 0, roomy))).toEqual({ a: 8, b: 8 });
    for (const turn of [0, 1, 2]) {
      const weighted = [topic("a", { weight: 2, served: 9 }), topic("b", { weight: 2 }), topic("c", { weight: 2, served: 1 })];
      // Served as much for their weight as the weighted ones: one weight, whatever it is, is no weight.
      const plain = [topic("a", { served: 9 }), topic("b"), topic("c", { served: 1 })];
      for (const l of [here, limits({ freeSlots: 10 }), limits({ fanning: false, budgetLeft: 2 + 2 * (CHUNK_OVERHEAD + 1) })])
        expect(planRound(weighted, turn, l)).toEqual(planRound(plain, turn, l));
    }
  });

  it("gives a topic that can run fewer handlers than its weight's share its handlers' worth, and the others the rest by weight", () => {
    // 20 slots by weight 3:1:1 would be 12, 4, 4: a can run 10, so b and c get 5 each, and a's chunk is twice theirs.
    const due = [topic("a", { weight: 3, slots: 10 }), topic("b", { slots: 10 }), topic("c", { slots: 10 })];
    expect(sized(planRound(due, 0, limits({ ...here, tickChunk: 10, tickConcurrency: 20 })))).toEqual({ a: 20, b: 10, c: 10 });
  });

  it("lets the topic served least take the free slots first among topics of one weight too, whatever the rotation", () => {
    const due = [topic("a", { served: 12 }), topic("b", { served: 11 })];
    for (const turn of [0, 1]) expect(planRound(due, turn, limits({ ...here, freeSlots: 1 })).local).toEqual([{ topic: "b", max: 1 }]);
  });

  it("lets the topic served least for its weight take the free slots first, whatever the rotation", () => {
    const due = [topic("a", { weight: 3, served: 10 }), topic("b", { served: 12 })];
    for (const turn of [0, 1]) expect(planRound(due, turn, limits({ ...here, freeSlots: 4 })).local).toEqual([{ topic: "a", max: 4 }]);
    // b took 12 jobs, a 36: even, for their weights; the rotation breaks the tie.
    const even = [topic("a", { weight: 3, served: 12 }), topic("b", { served: 12 })];
    expect(planRound(even, 1, limits({ ...here, freeSlots: 4 })).local).toEqual([{ topic: "b", max: 4 }]);
  });

  it("shares a tight budget by weight", () => {
    const tight = limits({ fanning: false, budgetLeft: 2 + 4 * (CHUNK_OVERHEAD + 5), tickChunk: 100, freeSlots: 100 });
    // 4 × (overhead + 5) subrequests (two more kept for the lock and a handover) shared 3:1: a chunk's
    // overhead and 2 × overhead + 15 jobs, and a chunk's overhead and 5 jobs.
    expect(sized(planRound([topic("a", { weight: 3 }), topic("b")], 0, tight))).toEqual({ a: 2 * CHUNK_OVERHEAD + 15, b: 5 });
  });

  it("reads a weight written into the conf hash by hand as a whole number from 1 to 100", () => {
    const odd = [topic("a", { weight: 250 }), topic("b", { weight: 0.5 })];
    expect(sized(planRound(odd, 0, limits({ ...here, tickChunk: 1 })))).toEqual({ a: 100, b: 1 });
  });
});

describe("TopicMemory", () => {
  it("counts what each topic was served for its weight, and brings one that comes back level with the least served of the last round", () => {
    const m = new TopicMemory();
    m.dueNow(["a", "b"]);
    m.claimed("a", 30, true, { weight: 3, slots: 10 });
    m.claimed("b", 8, true);
    m.claimed("a", 6, true, { weight: 3 });
    expect(m.view("a", idle, 5)).toMatchObject({ weight: 3, slots: 10, served: 12, lastTaken: 6 });
    expect(m.view("b", idle, 5)).toMatchObject({ served: 8 });
    m.dueNow(["a", "b"]);
    // c was not due before: it starts at b's 8, not at 0, so it does not take every slot until it caught up.
    m.dueNow(["a", "c"]);
    expect(m.view("c", idle, 5)).toMatchObject({ served: 8 });
    expect(m.view("a", idle, 5)).toMatchObject({ served: 12 });
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
