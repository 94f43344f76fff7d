/**
 * What of one chunk's jobs counts against the room a new chunk gets beside
 * it, on its own (the room's effect on claims is the loop tests' and the
 * model test's).
 */
import { describe, expect, it } from "vitest";
import { RoomCount } from "../../../src/tick/room-count.js";

/** A count whose changes are summed as ChunksInFlight sums them. */
function counting() {
  const count = new RoomCount();
  const sum = { jobs: 0 };
  const add = (jobs: number) => {
    sum.jobs += jobs;
  };
  return { count, sum, add };
}

describe("RoomCount", () => {
  it("counts a chunk's jobs from its claim until it ends, less what it settled early", () => {
    const c = counting();
    c.count.claimed(10, c.add);
    expect(c.sum.jobs).toBe(10);
    c.count.settled(4);
    expect(c.sum.jobs).toBe(6);
    c.count.ended();
    expect(c.sum.jobs).toBe(0);
    // Ending twice, or settling after, takes nothing more.
    c.count.ended();
    c.count.settled(3);
    expect(c.sum.jobs).toBe(0);
  });

  it("counts nothing of a chunk in its tail", () => {
    const c = counting();
    c.count.claimed(10, c.add);
    c.count.settled(2);
    c.count.tail();
    expect(c.sum.jobs).toBe(0);
    c.count.settled(5);
    c.count.ended();
    expect(c.sum.jobs).toBe(0);
  });

  it("remembers what was settled early or reached the tail before the claim was back", () => {
    const early = counting();
    early.count.settled(3);
    early.count.claimed(10, early.add);
    expect(early.sum.jobs).toBe(7);
    early.count.ended();
    expect(early.sum.jobs).toBe(0);

    const tail = counting();
    tail.count.tail();
    tail.count.claimed(10, tail.add);
    expect(tail.sum.jobs).toBe(0);
    tail.count.ended();
    expect(tail.sum.jobs).toBe(0);
  });
});
