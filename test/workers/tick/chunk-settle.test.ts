/**
 * A chunk's settle planning on its own: when it settles (once, at a retry's
 * time, at its tail), what, and the outcome sums (the chunk's behaviour
 * against Redis is the loop tests' and the cost tests').
 */
import { describe, expect, it } from "vitest";
import { noOutcomes } from "../../../src/env.js";
import type { Outcome } from "../../../src/queue/queue.js";
import { ChunkSettles, settlesAtTail, tallySettled } from "../../../src/tick/chunk-settle.js";
import { SimClock } from "./sim-clock.js";

const T0 = 1_900_000_000_000;
const ack = (id: string): Outcome => ({ id, attempt: 1, kind: "ack" });
const retry = (id: string, at: number): Outcome => ({ id, attempt: 1, kind: "retry", at, error: "boom" });
const dead = (id: string): Outcome => ({ id, attempt: 3, kind: "dead", error: "boom" });

/** A chunk's settles on a virtual clock, recording each settle call (when, which jobs) and each early settle it reports. */
function chunk(stale: string[] = []) {
  const clock = new SimClock(T0);
  const calls: Array<{ at: number; ids: string[] }> = [];
  const early: Array<{ jobs: number; retryTimes: number[] }> = [];
  const outcomes = noOutcomes();
  const settles = new ChunkSettles({
    clock,
    settle: async (batch) => {
      calls.push({ at: clock.now() - T0, ids: batch.map((b) => b.id) });
      return batch.map((b) => ({ applied: !stale.includes(b.id) }));
    },
    outcomes,
    onEarlySettle: (jobs, retryTimes) => early.push({ jobs, retryTimes: retryTimes.map((t) => t - T0) }),
  });
  /** Ends each outcome at its time (ms after T0), then the chunk; resolves with what finish returned. */
  const run = async (ends: Array<[number, Outcome]>) => {
    let earliest = 0;
    void clock.spawn("chunk", async () => {
      for (const [at, outcome] of ends) {
        await clock.sleep(T0 + at - clock.now());
        settles.add(outcome);
        settles.settleAtRetry(outcome);
      }
      earliest = (await settles.finish()) - T0;
    });
    await clock.run();
    return earliest;
  };
  return { settles, calls, early, outcomes, run };
}

describe("ChunkSettles", () => {
  it("settles once, when the chunk ends, while no retry falls due before", async () => {
    const c = chunk();
    expect(
      await c.run([
        [10, ack("a")],
        [20, retry("b", T0 + 500)],
        [30, dead("c")],
      ]),
    ).toBe(500);
    expect(c.calls).toEqual([{ at: 30, ids: ["a", "b", "c"] }]);
    expect(c.early).toEqual([]);
    expect(c.outcomes).toEqual({ ack: 1, retry: 1, dead: 1, stale: 0 });
  });

  it("settles what has ended at a retry's time when the chunk still runs then, and says so", async () => {
    const c = chunk();
    expect(
      await c.run([
        [10, retry("a", T0 + 50)],
        [20, ack("b")],
        [100, ack("c")],
      ]),
    ).toBe(50);
    expect(c.calls).toEqual([
      { at: 50, ids: ["a", "b"] },
      { at: 100, ids: ["c"] },
    ]);
    expect(c.early).toEqual([{ jobs: 2, retryTimes: [50] }]);
    expect(c.outcomes).toEqual({ ack: 2, retry: 1, dead: 0, stale: 0 });
  });

  it("keeps one timer, for the earliest retry not yet settled", async () => {
    const c = chunk();
    await c.run([
      [10, retry("a", T0 + 40)],
      [20, retry("b", T0 + 80)],
      [50, retry("c", T0 + 70)],
      [60, retry("d", T0 + 65)],
      [100, ack("e")],
    ]);
    // a's time settles a and b (b's later time gets no timer); d's, earlier than c's, settles both; c's then finds nothing left.
    expect(c.calls.map((k) => k.at)).toEqual([40, 65, 100]);
    expect(c.early).toEqual([
      { jobs: 2, retryTimes: [40, 80] },
      { jobs: 2, retryTimes: [70, 65] },
    ]);
  });

  it("counts an outcome that did not apply as stale, and no retry of it", async () => {
    const c = chunk(["a"]);
    expect(
      await c.run([
        [10, retry("a", T0 + 50)],
        [100, ack("b")],
      ]),
    ).toBe(Infinity);
    expect(c.calls).toEqual([
      { at: 50, ids: ["a"] },
      { at: 100, ids: ["b"] },
    ]);
    expect(c.early).toEqual([{ jobs: 1, retryTimes: [] }]);
    expect(c.outcomes).toEqual({ ack: 1, retry: 0, dead: 0, stale: 1 });
  });

  it("settles what has ended when asked (a chunk's tail), and nothing when nothing waits", async () => {
    const c = chunk();
    c.settles.settleEnded();
    expect(c.settles.waiting).toBe(0);
    c.settles.add(ack("a"));
    c.settles.add(ack("b"));
    expect(c.settles.waiting).toBe(2);
    c.settles.settleEnded();
    expect(c.settles.waiting).toBe(0);
    expect(await c.run([[10, ack("c")]])).toBe(Infinity);
    expect(c.calls).toEqual([
      { at: 0, ids: ["a", "b"] },
      { at: 10, ids: ["c"] },
    ]);
    expect(c.early).toEqual([{ jobs: 2, retryTimes: [] }]);
  });
});

describe("tallySettled", () => {
  it("sums applied outcomes by kind, stale ones apart, and returns the applied retries' times in order", () => {
    const into = { ack: 1, retry: 0, dead: 0, stale: 0 };
    const batch = [retry("a", 30), ack("b"), retry("c", 10), dead("d"), retry("e", 20)];
    expect(tallySettled(batch, [{ applied: true }, { applied: true }, { applied: true }, { applied: false }, { applied: false }], into)).toEqual([30, 10]);
    expect(into).toEqual({ ack: 2, retry: 2, dead: 0, stale: 2 });
  });
});

describe("settlesAtTail", () => {
  const at = { claimsNext: true, backlog: true, jobs: 20, lanes: 10, waiting: 3, queued: 5, budgetLeft: 7 };

  it("settles at the tail when the next chunk is claimed now for a backlog, and the chunk is bigger than its lanes", () => {
    expect(settlesAtTail(at)).toBe(true);
    expect(settlesAtTail({ ...at, claimsNext: false })).toBe(false);
    expect(settlesAtTail({ ...at, backlog: false })).toBe(false);
    expect(settlesAtTail({ ...at, jobs: 10 })).toBe(false);
    expect(settlesAtTail({ ...at, waiting: 0 })).toBe(false);
  });

  it("only while the budget holds the queued deliveries, this settle and the final one", () => {
    expect(settlesAtTail({ ...at, budgetLeft: 6 })).toBe(false);
  });
});
