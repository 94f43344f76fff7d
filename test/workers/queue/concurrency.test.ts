import { describe, expect, it } from "vitest";
import { backoffDelay, normalizeBackoff, type BackoffInput } from "../../../src/queue/policy/backoff.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;

describe("concurrent claims", () => {
  it("8 claim loops over 5,000 due jobs: each job claimed exactly once, all claimed", async () => {
    const { queue } = testQueue();
    for (let i = 0; i < 5; i++) {
      await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, j) => ({ topic: "race", payload: i * 1_000 + j })));
    }
    const seen = new Map<string, number>();
    const loop = async () => {
      for (;;) {
        const { jobs } = await queue.claim("race", { max: 37, leaseMs: 600_000 });
        if (jobs.length === 0) return;
        for (const j of jobs) seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 8 }, loop));
    expect(seen.size).toBe(5_000);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(await queue.topicStats("race")).toMatchObject({ scheduled: 0, inflight: 5_000 });
  });
});

describe("token bucket", () => {
  it("a topic at 20/s with burst 5 is held within 2 % of rate·t + burst over a simulated 10 s", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("rl", { ratePerSec: 20, burst: 5 });
    await queue.enqueueBatch(Array.from({ length: 400 }, (_, i) => ({ topic: "rl", payload: i })));
    let claimed = 0;
    const claimsAt: number[] = [];
    for (let t = 0; t <= 10_000; t += 25) {
      clock.now = T0 + t;
      const { jobs } = await queue.claim("rl", { max: 100, leaseMs: 600_000 });
      claimed += jobs.length;
      for (const _ of jobs) claimsAt.push(t);
    }
    const limit = 20 * 10 + 5;
    expect(claimed).toBeLessThanOrEqual(limit);
    expect(claimed).toBeGreaterThanOrEqual(Math.floor(0.98 * limit));
    // At no point in the window did the claims run ahead of the bucket.
    for (let i = 0; i < claimsAt.length; i++) expect(i + 1).toBeLessThanOrEqual((claimsAt[i]! * 20) / 1000 + 5);
  });

  it("no rate means no limit; a changed rate starts from a full bucket", async () => {
    const { queue } = testQueue();
    await queue.enqueueBatch(Array.from({ length: 300 }, (_, i) => ({ topic: "free", payload: i })));
    expect((await queue.claim("free", { max: 250, leaseMs: 60_000 })).jobs).toHaveLength(250);
    await queue.configureTopic("free", { ratePerSec: 1, burst: 10 });
    expect((await queue.claim("free", { max: 50, leaseMs: 60_000 })).jobs).toHaveLength(10);
    expect((await queue.claim("free", { max: 50, leaseMs: 60_000 })).jobs.length).toBeLessThanOrEqual(1);
  });
});

describe("backoff in Lua equals backoff in TypeScript", () => {
  const policies: BackoffInput[] = [
    { type: "fixed", delay: "7s" },
    { type: "schedule", delays: ["5s", "30s", "60s"] },
    { type: "exponential", delay: "250ms", factor: 3, maxDelay: "1m", jitter: false },
  ];

  it.each(policies)("reaping expired leases follows %j", async (input) => {
    const backoff = normalizeBackoff(input);
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "b", payload: 1, backoff, maxAttempts: 6 });
    for (let attempt = 1; attempt <= 5; attempt++) {
      const claim = await queue.claim("b", { max: 1, leaseMs: 1_000 });
      expect(claim.jobs.map((j) => j.attempt)).toEqual([attempt]);
      clock.now += 1_001;
      // This claim reaps the expired lease and schedules the retry.
      const reap = await queue.claim("b", { max: 0, leaseMs: 1_000 });
      expect(reap.reaped.retried).toBe(1);
      expect((await queue.get(id))!.dueAt).toBe(clock.now + backoffDelay(backoff, attempt, 0));
      clock.now = (await queue.get(id))!.dueAt!;
    }
  });

  it("full jitter in Lua stays within [0, capped delay]", async () => {
    const backoff = normalizeBackoff({ type: "exponential", delay: "1s", maxDelay: "4s" });
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const ids = (await queue.enqueueBatch(Array.from({ length: 40 }, (_, i) => ({ topic: "j", payload: i, backoff, maxAttempts: 9 })))).map((r) => r.id);
    await queue.claim("j", { max: 40, leaseMs: 1_000 });
    clock.now += 1_001;
    await queue.claim("j", { max: 0, leaseMs: 1_000 });
    const delays = await Promise.all(ids.map(async (id) => (await queue.get(id))!.dueAt! - clock.now));
    expect(delays.every((d) => d >= 0 && d <= 1_000)).toBe(true);
    expect(new Set(delays).size).toBeGreaterThan(20);
  });
});
