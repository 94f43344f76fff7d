/**
 * The CI-sized part of `npm run chaos` (chaos/): handler failure rates and
 * time edges, with every job accounted for. Code handlers fail by a hash of
 * (id, attempt), so what must happen follows from the ids alone and every
 * count — attempts, retries, dead letters — is checked exactly. Time is
 * virtual: the loop's sleeps advance it, so minutes of retries run at once.
 */
import { describe, expect, it } from "vitest";
import type { JobContext } from "../../../src/handlers/registry.js";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import { tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000;

/** Whether attempt `attempt` of job `id` fails at `percent` %: the same hash rule as chaos/receiver.ts. */
async function fails(id: string, attempt: number, percent: number): Promise<boolean> {
  if (percent <= 0) return false;
  if (percent >= 100) return true;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${id}:${attempt}`)));
  return new DataView(digest.buffer).getUint32(0) % 10_000 < percent * 100;
}

describe("handler failure rates: retries and dead letters exactly as the ids say", () => {
  it.each([10, 50, 100])("%i percent of attempts failing", async (percent) => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", TICK_SUBREQUEST_BUDGET: "5000" }, clock);
    const topic = uniqueTopic(`fail${percent}`);
    const seen: string[] = [];
    d.handlers.define(topic, async (job) => {
      seen.push(`${job.id}#${job.attempt}`);
      if (await fails(job.id, job.attempt, percent)) throw new Error(`chaos: attempt ${job.attempt} fails`);
    });
    const maxAttempts = 3;
    const jobs = await d.queue.enqueueBatch(
      Array.from({ length: 200 }, (_, i) => ({ topic, payload: i, runAt: T0, maxAttempts, backoff: normalizeBackoff({ type: "fixed", delay: "2s" }) })),
    );
    const report = await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });

    const expected = { succeeded: 0, retried: 0, dead: 0 };
    const attemptsOf = new Map<string, number>();
    const deadIds = new Set<string>();
    for (const { id } of jobs) {
      let k = 1;
      while (k <= maxAttempts && (await fails(id, k, percent))) k++;
      attemptsOf.set(id, Math.min(k, maxAttempts));
      if (k <= maxAttempts) {
        expected.succeeded++;
        expected.retried += k - 1;
      } else {
        deadIds.add(id);
        expected.dead++;
        expected.retried += maxAttempts - 1;
      }
    }
    // Every attempt ran exactly once: no job lost, none delivered twice.
    const want = jobs.flatMap(({ id }) => Array.from({ length: attemptsOf.get(id)! }, (_, i) => `${id}#${i + 1}`));
    expect(seen.sort()).toEqual(want.sort());
    expect(report.outcomes).toEqual({ ack: expected.succeeded, retry: expected.retried, dead: expected.dead, stale: 0 });
    const stats = await d.queue.topicStats(topic);
    expect(stats).toMatchObject({ scheduled: 0, inflight: 0, dead: expected.dead });
    expect(stats.counters).toEqual({
      dispatched: want.length,
      succeeded: expected.succeeded,
      retried: expected.retried,
      dead: expected.dead,
      dropped: 0,
      expired: 0,
    });
    const dead = await d.queue.deadLetters(topic, { limit: 1_000 });
    expect(dead.entries.map((e) => e.id).sort()).toEqual([...deadIds].sort());
    for (const { id } of jobs) {
      const job = await d.queue.get(id);
      expect(job?.attempts, id).toBe(attemptsOf.get(id));
      expect(job?.state, id).toBe(deadIds.has(id) ? "dead" : "succeeded");
    }
    if (percent === 100) expect(expected).toEqual({ succeeded: 0, retried: 400, dead: 200 });
  });
});

describe("time edges", () => {
  it("a past runAt is due now, due-now runs now, 365 days stay scheduled, and 10,000 jobs due in one millisecond each run once, in enqueue order, none early", {
    timeout: 120_000,
  }, async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", TICK_SUBREQUEST_BUDGET: "30000", TICK_CHUNK: "1000" }, clock);
    const topic = uniqueTopic("time");
    const seen: Array<{ id: string; at: number; dueAt: number }> = [];
    // One batch at a time, in claim order.
    d.handlers.define(topic, {
      batchSize: 1_000,
      concurrency: 1,
      batchHandler: (batch: JobContext[]) => {
        for (const job of batch) seen.push({ id: job.id, at: clock.now(), dueAt: job.dueAt });
        return batch.map(() => undefined);
      },
    });
    const day = 86_400_000;
    const [past, epoch, now, far, farAt] = await d.queue.enqueueBatch([
      { topic, payload: "an hour ago", runAt: T0 - 3_600_000 },
      { topic, payload: "epoch 1000", runAt: 1_000 },
      { topic, payload: "now", runAt: T0 },
      { topic, payload: "in 365 days", delayMs: 365 * day },
      { topic, payload: "at 365 days", runAt: T0 + 365 * day },
    ]);
    for (const j of [past!, epoch!, now!]) expect(j.dueAt).toBe(T0);
    expect(far!.dueAt).toBe(T0 + 365 * day);
    const same = T0 + 5_000;
    const burst: string[] = [];
    for (let b = 0; b < 10; b++) {
      const jobs = await d.queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic, payload: b * 1_000 + i, runAt: same })));
      burst.push(...jobs.map((j) => j.id));
    }
    const report = await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });

    expect(
      seen
        .slice(0, 3)
        .map((s) => s.id)
        .sort(),
    ).toEqual([past!.id, epoch!.id, now!.id].sort());
    const burstSeen = seen.slice(3);
    expect(burstSeen.map((s) => s.id)).toEqual(burst);
    for (const s of seen) expect(s.at).toBeGreaterThanOrEqual(s.dueAt);
    expect(burstSeen.every((s) => s.dueAt === same)).toBe(true);
    expect(report.outcomes).toEqual({ ack: 10_003, retry: 0, dead: 0, stale: 0 });
    for (const j of [far!, farAt!]) expect(await d.queue.get(j.id)).toMatchObject({ state: "scheduled", dueAt: T0 + 365 * day });
    expect(await d.queue.topicStats(topic)).toMatchObject({
      scheduled: 2,
      inflight: 0,
      dead: 0,
      counters: { dispatched: 10_003, succeeded: 10_003, retried: 0, dead: 0 },
    });
  });
});
