/**
 * Bulk cancel: a due window walked through cursors, or given ids, each Redis
 * call bounded (the time of each call is measured in bounded-calls.test.ts).
 */
import { describe, expect, it } from "vitest";
import { BULK_CANCEL_BATCH, type ListPosition, type Queue } from "../../../src/queue/queue.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;

/** Cancels a window through every cursor; returns the calls' results. */
async function cancelThrough(queue: Queue, topic: string, window: { dueFrom?: number; dueTo?: number }) {
  const calls: Array<{ cancelled: number; inflight: number }> = [];
  let after: ListPosition | undefined;
  for (;;) {
    const r = await queue.cancelWindow(topic, { ...window, ...(after ? { after } : {}) });
    calls.push(r);
    if (!r.next) return calls;
    after = r.next;
  }
}

describe("bulk cancel", () => {
  it("large payloads cost a call nothing: it reads metas, never records, so 60 jobs of 200 KB go in one call", async () => {
    const { queue } = testQueue({ clock: { now: T0 } });
    const big = "y".repeat(200_000);
    // Two batches: one of 60 (12 MB) would pass Upstash's 10 MB request limit, which the bridge holds.
    const ids: string[] = [];
    for (const from of [0, 30]) {
      const stored = await queue.enqueueBatch(
        Array.from({ length: 30 }, (_, j) => ({ topic: "big", payload: { i: from + j, big }, runAt: T0 + 1_000 + from + j })),
      );
      ids.push(...stored.map((j) => j.id));
    }
    const calls = await cancelThrough(queue, "big", {});
    // 12 MB of payloads, none read: one call, bounded by its job count alone.
    expect(calls.map((c) => c.cancelled)).toEqual([60]);
    expect((await queue.listJobs("big", { state: "scheduled" })).jobs).toEqual([]);
    // The records were left as they were: a cancelled job still reads with its payload.
    expect(await queue.get(ids[59]!)).toMatchObject({ state: "cancelled", payload: { i: 59, big } });
  });

  it("all: true cancels every scheduled job and leaves jobs in flight, counting them; a job enqueued behind the walk stays", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const flying = await queue.enqueue({ topic: "a", payload: 0 });
    await queue.claim("a", { max: 1, leaseMs: 60_000 });
    const scheduled = await queue.enqueueBatch(Array.from({ length: BULK_CANCEL_BATCH + 100 }, (_, i) => ({ topic: "a", payload: i, runAt: T0 + 10 + i })));
    const first = await queue.cancelWindow("a");
    expect(first).toMatchObject({ cancelled: BULK_CANCEL_BATCH, inflight: 1 });
    // Due before the position the walk reached: not in its way any more.
    const behind = await queue.enqueue({ topic: "a", payload: "behind", runAt: T0 + 10 });
    const second = await queue.cancelWindow("a", { after: first.next! });
    expect(second).toEqual({ cancelled: 100, inflight: 1, next: null });
    expect((await queue.listJobs("a", { state: "scheduled" })).jobs.map((j) => j.id)).toEqual([behind.id]);
    expect((await queue.get(flying.id))!.state).toBe("inflight");
    expect((await queue.get(scheduled[0]!.id))!.state).toBe("cancelled");
  });

  it("given ids: cancels the scheduled ones once each, counts those in flight and those not scheduled; keeps each job's history", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const [flying, retried, plain] = await queue.enqueueBatch([0, 1, 2].map((i) => ({ topic: "i", payload: i })));
    await queue.claim("i", { max: 2, leaseMs: 60_000 });
    await queue.settle("i", [{ id: retried!.id, attempt: 1, kind: "retry", at: T0 + 60_000, error: "later" }]);
    const finished = await queue.enqueue({ topic: "i", payload: 3, runAt: T0 + 5 });
    expect(await queue.cancel(finished.id)).toBe("cancelled");
    const unknown = "i.01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const r = await queue.cancelIds("i", [retried!.id, plain!.id, flying!.id, finished.id, unknown, plain!.id]);
    expect(r).toEqual({ cancelled: 2, inflight: 1, notScheduled: 2 });
    expect(await queue.get(retried!.id)).toMatchObject({
      state: "cancelled",
      attempts: 1,
      lastError: "later",
      history: [expect.objectContaining({ outcome: "retry", error: "later" })],
    });
    expect((await queue.get(plain!.id))!.state).toBe("cancelled");
    expect((await queue.get(flying!.id))!.state).toBe("inflight");
  });
});
