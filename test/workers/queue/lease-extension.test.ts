/**
 * A pull consumer's lease extension (extend-lease.lua) on the queue's own
 * clock: fenced by the attempt as an ack is, only for pull topics, and what
 * it leaves the topic index when the topic turns push.
 */
import { describe, expect, it } from "vitest";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;
const noDelay = normalizeBackoff({ type: "fixed", delay: 0 });

/** A pull topic with one job, claimed at T0 under a lease of `leaseMs`. */
async function claimedPullJob(leaseMs: number) {
  const clock = { now: T0 };
  const { queue } = testQueue({ clock });
  await queue.configureTopic("work", { mode: "pull", backoff: noDelay });
  const { id } = await queue.enqueue({ topic: "work", payload: { n: 1 } });
  const [job] = (await queue.claim("work", { max: 1, leaseMs, mode: "pull" })).jobs;
  expect(job).toMatchObject({ id, attempt: 1 });
  return { clock, queue, id };
}

describe("lease extension", () => {
  it("a job extended every 20 s by 30 s for 3 minutes is never redelivered, and its ack then succeeds", async () => {
    const { clock, queue, id } = await claimedPullJob(30_000);
    for (let at = 20_000; at <= 180_000; at += 20_000) {
      clock.now = T0 + at;
      // Without the last extension the lease would have lapsed by now (from 40 s on): this claim would reap it and take the job again.
      const between = await queue.claim("work", { max: 10, leaseMs: 30_000, mode: "pull" });
      expect(between.jobs, `claim at ${at} ms`).toEqual([]);
      expect(between.reaped).toEqual({ retried: 0, dead: 0 });
      expect(await queue.extend(id, 1, 30_000)).toEqual({ result: "extended", leaseExpiresAt: T0 + at + 30_000 });
      expect((await queue.get(id))!.leaseExpiresAt).toBe(T0 + at + 30_000);
    }
    clock.now = T0 + 195_000;
    expect(await queue.ack(id, 1)).toBe("acked");
    const job = await queue.get(id);
    expect(job!.state).toBe("succeeded");
    expect(job!.history).toEqual([{ attempt: 1, run: 1, startedAt: T0, durationMs: 195_000, outcome: "ok" }]);
  });

  it("moves a deadline sooner too: a claim past the shorter lease reaps the attempt", async () => {
    const { clock, queue, id } = await claimedPullJob(600_000);
    clock.now = T0 + 5_000;
    expect(await queue.extend(id, 1, 1_000)).toEqual({ result: "extended", leaseExpiresAt: T0 + 6_000 });
    clock.now = T0 + 6_001;
    const next = await queue.claim("work", { max: 1, leaseMs: 60_000, mode: "pull" });
    expect(next.reaped.retried).toBe(1);
    expect(next.jobs.map((j) => [j.id, j.attempt])).toEqual([[id, 2]]);
    expect((await queue.get(id))!.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, "expired"]]);
  });

  it("extends a lease past its deadline that no claim has reaped yet, as an ack would settle it", async () => {
    const { clock, queue, id } = await claimedPullJob(30_000);
    clock.now = T0 + 45_000;
    expect(await queue.extend(id, 1, 30_000)).toEqual({ result: "extended", leaseExpiresAt: T0 + 75_000 });
    expect((await queue.claim("work", { max: 1, leaseMs: 30_000, mode: "pull" })).reaped).toEqual({ retried: 0, dead: 0 });
  });

  it("is stale for another attempt, once reaped, once settled, and before any claim; unknown ids are not found", async () => {
    const { clock, queue, id } = await claimedPullJob(30_000);
    expect(await queue.extend(id, 2, 30_000)).toEqual({ result: "stale" });
    // The lease lapses and a claim reaps it, taking the job again as attempt 2.
    clock.now = T0 + 31_000;
    expect((await queue.claim("work", { max: 1, leaseMs: 30_000, mode: "pull" })).jobs.map((j) => j.attempt)).toEqual([2]);
    expect(await queue.extend(id, 1, 30_000)).toEqual({ result: "stale" });
    expect(await queue.ack(id, 2)).toBe("acked");
    expect(await queue.extend(id, 2, 30_000)).toEqual({ result: "stale" });
    // The stale extensions left no trace: the deadline of attempt 2 was never moved, and nothing was added to the history.
    expect((await queue.get(id))!.history.map((h) => [h.attempt, h.outcome])).toEqual([
      [1, "expired"],
      [2, "ok"],
    ]);

    const { id: waiting } = await queue.enqueue({ topic: "work", payload: 2, delayMs: 3_600_000 });
    expect(await queue.extend(waiting, 1, 30_000)).toEqual({ result: "stale" });
    expect(await queue.extend("work.01ARZ3NDEKTSV4RRFFQ69G5FAV", 1, 30_000)).toEqual({ result: "not-found" });
    expect(await queue.extend("not an id", 1, 30_000)).toEqual({ result: "not-found" });
  });

  it("refuses a push topic's job, which the tick holds", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "pushed", payload: 1 });
    const [job] = (await queue.claim("pushed", { max: 1, leaseMs: 30_000 })).jobs;
    expect(await queue.extend(id, job!.attempt, 600_000)).toEqual({ result: "push" });
    expect((await queue.get(id))!.leaseExpiresAt).toBe(T0 + 30_000);
  });

  it("a topic turned push after an extension is scored by the extended deadline: reaped when it passes, not before, with one claim between", async () => {
    const { clock, queue, id } = await claimedPullJob(30_000);
    clock.now = T0 + 10_000;
    expect(await queue.extend(id, 1, 120_000)).toEqual({ result: "extended", leaseExpiresAt: T0 + 130_000 });
    clock.now = T0 + 20_000;
    await queue.configureTopic("work", { mode: "push" });
    expect(await queue.extend(id, 1, 120_000)).toEqual({ result: "push" });
    // The index still holds the score the enqueue gave the topic (pull topics are not scored), which is early: the
    // tick's claim then reaps nothing and scores the topic by the extended deadline, not the claim's first one.
    expect((await queue.peek({ now: clock.now, limit: 10 })).due.map((d) => d.topic)).toEqual(["work"]);
    const early = await queue.claim("work", { max: 1, leaseMs: 30_000 });
    expect(early.reaped).toEqual({ retried: 0, dead: 0 });
    expect(early.nextLookAt).toBe(T0 + 130_000);
    clock.now = T0 + 129_999;
    expect((await queue.peek({ now: clock.now, limit: 10 })).due).toEqual([]);
    clock.now = T0 + 130_001;
    expect((await queue.peek({ now: clock.now, limit: 10 })).due.map((d) => d.topic)).toEqual(["work"]);
    const reaping = await queue.claim("work", { max: 1, leaseMs: 30_000 });
    expect(reaping.reaped.retried).toBe(1);
    expect(reaping.jobs.map((j) => [j.id, j.attempt])).toEqual([[id, 2]]);
  });
});
