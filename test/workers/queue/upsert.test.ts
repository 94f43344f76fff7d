import { describe, expect, it } from "vitest";
import type { Queue } from "../../../src/queue/queue.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;
const LEASE = 600_000;

/** The topic's scheduled jobs, with their payloads. */
async function scheduled(queue: Queue, topic: string) {
  return (await queue.listJobs(topic, { state: "scheduled", payload: true })).jobs;
}

describe("upsert: a job key's pending job", () => {
  it("creates, then replaces the payload and puts the due time off, bounded by maxWait from the first enqueue; the id stays", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const first = await queue.upsert({ topic: "deb", jobKey: "user-1", payload: 1, delayMs: 1_000, maxWaitMs: 2_500 });
    expect(first).toMatchObject({ topic: "deb", dueAt: T0 + 1_000, result: "created" });
    clock.now = T0 + 800;
    expect(await queue.upsert({ topic: "deb", jobKey: "user-1", payload: 2, delayMs: 1_000, maxWaitMs: 2_500 })).toEqual({
      id: first.id,
      topic: "deb",
      dueAt: T0 + 1_800,
      result: "replaced",
    });
    clock.now = T0 + 1_700;
    // now + delay would be T0 + 2,700: maxWait holds it to the first enqueue plus 2.5 s.
    expect(await queue.upsert({ topic: "deb", jobKey: "user-1", payload: 3, delayMs: 1_000, maxWaitMs: 2_500 })).toMatchObject({
      id: first.id,
      dueAt: T0 + 2_500,
      result: "replaced",
    });
    expect((await scheduled(queue, "deb")).map((j) => [j.id, j.payload, j.dueAt])).toEqual([[first.id, 3, T0 + 2_500]]);
    expect(await queue.get(first.id)).toMatchObject({ state: "scheduled", payload: 3, jobKey: "user-1", replacements: 2, createdAt: T0 });
    // Another key of the topic is a job of its own.
    expect((await queue.upsert({ topic: "deb", jobKey: "user-2", payload: "x" })).result).toBe("created");
    expect(await scheduled(queue, "deb")).toHaveLength(2);
  });

  it("keepDue takes the new payload and keeps the due time; ignore changes nothing and answers the pending job", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const job = await queue.upsert({ topic: "keep", jobKey: "k", payload: "a", delayMs: 5_000, target: { url: "https://example.test/a" } });
    clock.now = T0 + 1_000;
    expect(await queue.upsert({ topic: "keep", jobKey: "k", payload: "b", delayMs: 60_000, onConflict: "keepDue" })).toEqual({
      id: job.id,
      topic: "keep",
      dueAt: T0 + 5_000,
      result: "replaced",
    });
    expect(await queue.upsert({ topic: "keep", jobKey: "k", payload: "c", delayMs: 0, onConflict: "ignore" })).toEqual({
      id: job.id,
      topic: "keep",
      dueAt: T0 + 5_000,
      result: "ignored",
    });
    const got = await queue.get(job.id);
    // The record is the request's whole: the first one's target is gone with it.
    expect(got).toMatchObject({ payload: "b", dueAt: T0 + 5_000, replacements: 1 });
    clock.now = T0 + 5_000;
    const { jobs } = await queue.claim("keep", { max: 10, leaseMs: LEASE });
    expect(jobs.map((j) => [j.id, j.record.payload, j.record.target])).toEqual([[job.id, "b", undefined]]);
  });

  it("while the key's job is in flight, a new job waits behind it, and later upserts change that one: one pending job", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const first = await queue.upsert({ topic: "fly", jobKey: "k", payload: 1 });
    const [leased] = (await queue.claim("fly", { max: 1, leaseMs: LEASE })).jobs;
    expect(leased!.id).toBe(first.id);
    const behind = await queue.upsert({ topic: "fly", jobKey: "k", payload: 2, delayMs: 1_000 });
    expect(behind).toMatchObject({ result: "created", dueAt: T0 + 1_000 });
    expect(behind.id).not.toBe(first.id);
    for (const payload of [3, 4])
      expect(await queue.upsert({ topic: "fly", jobKey: "k", payload, delayMs: 1_000 })).toMatchObject({ id: behind.id, result: "replaced" });
    expect((await scheduled(queue, "fly")).map((j) => [j.id, j.payload])).toEqual([[behind.id, 4]]);
    // The leased job's record is never rewritten.
    expect(await queue.get(first.id)).toMatchObject({ state: "inflight", payload: 1, replacements: 0 });
    expect(await queue.settle("fly", [{ id: first.id, attempt: 1, kind: "ack" }])).toEqual([{ id: first.id, applied: true }]);
  });

  it("a pointer its job left behind never stands in for a job: after an ack, a cancel, a dead letter, a drop and a purge the next upsert creates", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock, retentionMs: 1_000 });
    const created = async (topic: string) => {
      const r = await queue.upsert({ topic, jobKey: "k", payload: "next" });
      expect(r.result, topic).toBe("created");
      expect((await scheduled(queue, topic)).map((j) => [j.id, j.payload])).toEqual([[r.id, "next"]]);
      return r;
    };
    // Acked; and acked, then swept past the retention window (its keys are gone).
    const finished: string[] = [];
    for (const topic of ["ack", "swept"]) {
      const a = await queue.upsert({ topic, jobKey: "k", payload: 1 });
      const [c] = (await queue.claim(topic, { max: 1, leaseMs: LEASE })).jobs;
      await queue.settle(topic, [{ id: c!.id, attempt: c!.attempt, kind: "ack" }]);
      finished.push(a.id);
    }
    await created("ack");
    clock.now += 120_000;
    await queue.claim("swept", { max: 10, leaseMs: LEASE });
    expect(await queue.get(finished[1]!)).toBeNull();
    await created("swept");
    // Cancelled.
    const cancelled = await queue.upsert({ topic: "cancel", jobKey: "k", payload: 1 });
    expect(await queue.cancel(cancelled.id)).toBe("cancelled");
    await created("cancel");
    // Dead.
    const dead = await queue.upsert({ topic: "dead", jobKey: "k", payload: 1, maxAttempts: 1 });
    const [d] = (await queue.claim("dead", { max: 1, leaseMs: LEASE })).jobs;
    await queue.settle("dead", [{ id: d!.id, attempt: d!.attempt, kind: "dead", error: "no" }]);
    expect((await queue.get(dead.id))?.state).toBe("dead");
    await created("dead");
    // Dropped for the topic's maxLength by a plain enqueue.
    await queue.configureTopic("drop", { maxLength: 1, overflow: "dropOldest" });
    const dropped = await queue.upsert({ topic: "drop", jobKey: "k", payload: 1 });
    await queue.enqueue({ topic: "drop", payload: "plain", delayMs: 1_000 });
    expect((await queue.get(dropped.id))?.state).toBe("dropped");
    await queue.configureTopic("drop", { maxLength: null });
    expect((await queue.upsert({ topic: "drop", jobKey: "k", payload: "next" })).result).toBe("created");
    // The topic purged and deleted: its jobs are gone, the pointer is not.
    await queue.upsert({ topic: "purge", jobKey: "k", payload: 1, delayMs: 60_000 });
    expect(await queue.deleteTopic("purge", { purge: true })).toMatchObject({ result: "deleted" });
    await created("purge");
  });

  it("a job waiting for a retry is replaced with its attempts started again: a new run, marked replaced", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const job = await queue.upsert({ topic: "retry", jobKey: "k", payload: 1, maxAttempts: 2 });
    const [c] = (await queue.claim("retry", { max: 1, leaseMs: LEASE })).jobs;
    await queue.settle("retry", [{ id: job.id, attempt: c!.attempt, kind: "retry", at: T0 + 60_000, error: "HTTP 503" }]);
    clock.now = T0 + 1_000;
    expect(await queue.upsert({ topic: "retry", jobKey: "k", payload: 2 })).toMatchObject({ id: job.id, result: "replaced", dueAt: T0 + 1_000 });
    const got = await queue.get(job.id);
    expect(got).toMatchObject({ state: "scheduled", attempts: 0, payload: 2 });
    expect(got!.history.map((h) => [h.outcome, h.attempt, h.run])).toEqual([
      ["retry", 1, 1],
      ["replaced", 0, 2],
    ]);
    // Its attempts count from 1 again, so maxAttempts 2 allows two more.
    const [again] = (await queue.claim("retry", { max: 1, leaseMs: LEASE })).jobs;
    expect(again).toMatchObject({ id: job.id, attempt: 1 });
    expect(again!.record.payload).toBe(2);
  });

  it("upserts of one key at once store one job, each answering it", async () => {
    const { queue } = testQueue();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => queue.upsert({ topic: "race", jobKey: "k", payload: i, delayMs: 60_000 })));
    expect(results.filter((r) => r.result === "created")).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    const jobs = await scheduled(queue, "race");
    expect(jobs).toHaveLength(1);
    expect(await queue.get(jobs[0]!.id)).toMatchObject({ replacements: 19 });
  });

  it("a topic's maxLength refuses a new job under a key, not a replacement", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("cap", { maxLength: 1 });
    const job = await queue.upsert({ topic: "cap", jobKey: "a", payload: 1 });
    await expect(queue.upsert({ topic: "cap", jobKey: "b", payload: 1 })).rejects.toMatchObject({ name: "TopicFullError", maxLength: 1 });
    expect(await queue.upsert({ topic: "cap", jobKey: "a", payload: 2 })).toMatchObject({ id: job.id, result: "replaced" });
    expect(await scheduled(queue, "cap")).toHaveLength(1);
  });

  it("a flow key's maxKeyLength refuses a new job under a key in that flow key, and the enqueues after it still meet the cap", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("kcap", { maxKeyLength: 1 });
    await queue.upsert({ topic: "kcap", jobKey: "a", payload: 1, flowKey: "tenant" });
    await expect(queue.upsert({ topic: "kcap", jobKey: "b", payload: 1, flowKey: "tenant" })).rejects.toMatchObject({
      name: "FlowKeyFullError",
      flowKey: "tenant",
      maxKeyLength: 1,
    });
    // Another flow key has room; and what the upserts learned of the topic's caps sends a plain enqueue to the check too.
    expect((await queue.upsert({ topic: "kcap", jobKey: "b", payload: 1, flowKey: "other" })).result).toBe("created");
    await expect(queue.enqueue({ topic: "kcap", payload: 2, flowKey: "tenant" })).rejects.toMatchObject({ name: "FlowKeyFullError" });
    expect(await scheduled(queue, "kcap")).toHaveLength(2);
  });
});

describe("upsert: a shaped topic's keyed job", () => {
  it("moves in its key's sets when its due time, flow key or priority changes, and is claimed once, by its new key", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const job = await queue.upsert({ topic: "shaped", jobKey: "j", payload: 1, flowKey: "a", delayMs: 1_000 });
    await queue.enqueue({ topic: "shaped", payload: "other", flowKey: "b", delayMs: 1_000 });
    // Due and held back with its key paused.
    clock.now = T0 + 1_000;
    await queue.setFlowKey("shaped", "a", { paused: true });
    expect((await queue.claim("shaped", { max: 10, leaseMs: LEASE })).jobs.map((j) => j.record.payload)).toEqual(["other"]);
    // Replaced into key c with a priority, due later; key a keeps nothing of it.
    expect(await queue.upsert({ topic: "shaped", jobKey: "j", payload: 2, flowKey: "c", priority: 3, delayMs: 2_000 })).toMatchObject({
      id: job.id,
      dueAt: T0 + 3_000,
    });
    await queue.setFlowKey("shaped", "a", null);
    clock.now = T0 + 2_000;
    expect((await queue.claim("shaped", { max: 10, leaseMs: LEASE })).jobs).toEqual([]);
    clock.now = T0 + 3_000;
    const { jobs } = await queue.claim("shaped", { max: 10, leaseMs: LEASE });
    expect(jobs.map((j) => [j.id, j.record.payload, j.record.flowKey, j.record.priority])).toEqual([[job.id, 2, "c", 3]]);
    // Then plain again: out of the keyed sets, into the due set.
    const plain = await queue.upsert({ topic: "shaped", jobKey: "p", payload: "k", flowKey: "d", delayMs: 60_000 });
    await queue.upsert({ topic: "shaped", jobKey: "p", payload: "plain", delayMs: 0 });
    clock.now = T0 + 4_000;
    const next = (await queue.claim("shaped", { max: 10, leaseMs: LEASE })).jobs;
    expect(next.map((j) => [j.id, j.record.payload, j.record.flowKey])).toEqual([[plain.id, "plain", undefined]]);
    clock.now = T0 + 120_000;
    expect((await queue.claim("shaped", { max: 10, leaseMs: LEASE })).jobs).toEqual([]);
    expect(await queue.topicStats("shaped")).toMatchObject({ scheduled: 0, ready: 0 });
  });
});
