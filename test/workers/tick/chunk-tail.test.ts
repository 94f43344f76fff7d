import { describe, expect, it } from "vitest";
import { ChunkTail } from "../../../src/tick/chunk-tail.js";

/** A tail watcher on a hand-moved clock, recording when it fired and with how many jobs queued. */
function watch(jobs: number, lanes: number, claimMs: number) {
  let now = 0;
  const fired: Array<{ at: number; queued: number }> = [];
  const tail = new ChunkTail({ jobs, lanes, claimMs, now: () => now, reached: (queued) => fired.push({ at: now, queued }) });
  const at = (t: number) => {
    now = t;
  };
  return { tail, fired, at };
}

describe("a chunk's tail", () => {
  it("is reached when every job has started, whatever the rate", () => {
    const w = watch(4, 2, 0);
    w.tail.started(1);
    w.tail.started(1);
    w.at(10);
    w.tail.ended();
    w.tail.started(1);
    expect(w.fired).toEqual([]);
    w.tail.started(1);
    expect(w.fired).toEqual([{ at: 10, queued: 0 }]);
    // Once only.
    w.tail.ended();
    w.tail.ended();
    expect(w.fired).toHaveLength(1);
  });

  it("is reached early when the handlers will run out of jobs within three claims' time", () => {
    // 100 jobs on 10 lanes, a job ending every ms, claims of 5 ms: the tail comes with 15 jobs queued.
    const w = watch(100, 10, 5);
    for (let i = 0; i < 10; i++) w.tail.started(1);
    for (let t = 1; w.fired.length === 0 && t <= 90; t++) {
      w.at(t);
      w.tail.ended();
      w.tail.started(1);
    }
    expect(w.fired).toHaveLength(1);
    expect(w.fired[0]!.queued).toBeLessThanOrEqual(15);
    expect(w.fired[0]!.queued).toBeGreaterThanOrEqual(14);
  });

  it("waits for a lane's worth of ended jobs before it trusts the rate", () => {
    const w = watch(20, 10, 1_000);
    for (let i = 0; i < 10; i++) w.tail.started(1);
    w.at(1);
    for (let i = 0; i < 9; i++) w.tail.ended();
    expect(w.fired).toEqual([]);
    w.tail.ended();
    expect(w.fired).toEqual([{ at: 1, queued: 10 }]);
  });
});
