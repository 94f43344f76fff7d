import { describe, expect, it } from "vitest";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;

describe("enqueue", () => {
  it("schedules by delay or absolute time; a past time means now", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const a = await queue.enqueue({ topic: "mail", payload: { n: 1 }, delayMs: 90_000 });
    const b = await queue.enqueue({ topic: "mail", payload: { n: 2 }, runAt: T0 + 5_000 });
    const c = await queue.enqueue({ topic: "mail", payload: { n: 3 }, runAt: T0 - 60_000 });
    expect([a.dueAt, b.dueAt, c.dueAt]).toEqual([T0 + 90_000, T0 + 5_000, T0]);
    expect(a.id).toMatch(/^mail\.[0-9A-Z]{26}$/);
    expect(a.deduplicated).toBe(false);
    const view = await queue.get(a.id);
    expect(view).toMatchObject({ id: a.id, topic: "mail", state: "scheduled", dueAt: T0 + 90_000, attempts: 0, maxAttempts: 5, payload: { n: 1 } });
  });

  it("keeps enqueue order for jobs due at the same millisecond", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await queue.enqueue({ topic: "same", payload: i, runAt: T0 + 10 })).id);
    const batch = await queue.enqueueBatch(Array.from({ length: 30 }, (_, i) => ({ topic: "same", payload: 30 + i, runAt: T0 + 10 })));
    ids.push(...batch.map((r) => r.id));
    clock.now = T0 + 10;
    const claimed = await queue.claim("same", { max: 100, leaseMs: 60_000 });
    expect(claimed.jobs.map((j) => j.id)).toEqual(ids);
    expect(claimed.jobs.map((j) => j.record.payload)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it("keeps payloads exactly, numbers and unicode included", async () => {
    const { queue } = testQueue();
    // biome-ignore lint/suspicious/noApproximativeNumericConstant: the literal digits must survive the round trip, not Math.PI.
    const payload = { big: 9007199254740991, tiny: 5e-324, pi: 3.141592653589793, s: "zażółć 🦊 \u0000", nested: [null, true, { a: [] }] };
    const { id } = await queue.enqueue({ topic: "exact", payload });
    const [job] = (await queue.claim("exact", { max: 1, leaseMs: 60_000 })).jobs;
    expect(job!.id).toBe(id);
    expect(job!.record.payload).toEqual(payload);
  });

  it("a batch of 1,000 is one call and all or nothing in order", async () => {
    const { queue } = testQueue();
    const results = await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: i % 2 ? "odd" : "even", payload: i })));
    expect(results).toHaveLength(1_000);
    expect(new Set(results.map((r) => r.id)).size).toBe(1_000);
    expect((await queue.topicStats("odd")).scheduled).toBe(500);
    expect((await queue.topicStats("even")).scheduled).toBe(500);
    expect(await queue.listTopics()).toEqual(["even", "odd"]);
    await expect(queue.enqueueBatch(Array.from({ length: 1_001 }, () => ({ topic: "x", payload: 1 })))).rejects.toThrow(RangeError);
  });
});

describe("idempotency", () => {
  it("20 concurrent enqueues with the same key make exactly one job", async () => {
    const { queue } = testQueue();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => queue.enqueue({ topic: "pay", payload: { i }, idempotencyKey: "order-42" })));
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => !r.deduplicated)).toHaveLength(1);
    expect((await queue.topicStats("pay")).scheduled).toBe(1);
  });

  it("a repeat inside a batch returns the first id; keys are per topic; the window expires", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock, idempotencyWindowMs: 50 });
    const [a, b, c] = await queue.enqueueBatch([
      { topic: "t1", payload: 1, idempotencyKey: "k" },
      { topic: "t1", payload: 2, idempotencyKey: "k" },
      { topic: "t2", payload: 3, idempotencyKey: "k" },
    ]);
    expect(b).toMatchObject({ id: a!.id, deduplicated: true });
    expect(c!.id).not.toBe(a!.id);
    // The window is real Redis time (PX); wait it out with a bounded poll.
    let again = await queue.enqueue({ topic: "t1", payload: 4, idempotencyKey: "k" });
    for (let i = 0; i < 50 && again.deduplicated; i++) {
      await new Promise((r) => setTimeout(r, 20));
      again = await queue.enqueue({ topic: "t1", payload: 4, idempotencyKey: "k" });
    }
    expect(again.deduplicated).toBe(false);
  });
});

describe("claim and settle", () => {
  it("delivers due jobs only, with attempts, and acks them", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const now = await queue.enqueue({ topic: "w", payload: "now" });
    const later = await queue.enqueue({ topic: "w", payload: "later", delayMs: 1_000 });
    const first = await queue.claim("w", { max: 10, leaseMs: 30_000 });
    expect(first.jobs.map((j) => [j.id, j.attempt, j.dueAt])).toEqual([[now.id, 1, T0]]);
    expect(first.jobs[0]!.leaseExpiresAt).toBe(T0 + 30_000);
    expect(first.nextDueAt).toBe(T0 + 1_000);
    expect(await queue.get(now.id)).toMatchObject({ state: "inflight", attempts: 1, dueAt: T0, leaseExpiresAt: T0 + 30_000 });

    expect(await queue.settle("w", [{ id: now.id, attempt: 1, kind: "ack" }])).toEqual([{ id: now.id, applied: true }]);
    expect(await queue.get(now.id)).toMatchObject({ state: "succeeded", attempts: 1, payload: "now", finishedAt: T0 });

    clock.now = T0 + 1_000;
    const second = await queue.claim("w", { max: 10, leaseMs: 30_000 });
    expect(second.jobs.map((j) => j.id)).toEqual([later.id]);
    expect(second.nextDueAt).toBeNull();
  });

  it("a push claim with a lead takes jobs due within it, each leased from its due time, only on topics without limits", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const soon = await queue.enqueue({ topic: "ahead", payload: 1, runAt: T0 + 400 });
    const later = await queue.enqueue({ topic: "ahead", payload: 2, runAt: T0 + 1_500 });
    const c = await queue.claim("ahead", { max: 10, leadMs: 1_000 });
    expect(c.jobs.map((j) => [j.id, j.dueAt, j.leaseExpiresAt])).toEqual([[soon.id, T0 + 400, T0 + 400 + 30_000 + 30_000]]);
    // The tick looks again when `later` comes within the lead.
    expect(c.nextLookAt).toBe(T0 + 500);
    // In flight from its claim: it can no longer be cancelled or rescheduled.
    expect(await queue.cancel(soon.id)).toBe("inflight");
    expect(await queue.reschedule(soon.id, T0 + 5_000)).toBe("inflight");
    expect(await queue.get(soon.id)).toMatchObject({ state: "inflight", dueAt: T0 + 400, leaseExpiresAt: T0 + 60_400 });
    expect(await queue.cancel(later.id)).toBe("cancelled");

    // A rate or a concurrency limit counts jobs as they are claimed: such topics take only due jobs.
    for (const [topic, patch] of [
      ["rated", { ratePerSec: 5 }],
      ["capped", { concurrency: 2 }],
    ] as const) {
      await queue.configureTopic(topic, patch);
      const j = await queue.enqueue({ topic, payload: 3, runAt: T0 + 400 });
      const none = await queue.claim(topic, { max: 10, leadMs: 1_000 });
      expect(none.jobs).toEqual([]);
      expect(none.nextLookAt).toBe(T0 + 400);
      clock.now = T0 + 400;
      expect((await queue.claim(topic, { max: 10, leadMs: 1_000 })).jobs.map((x) => x.id)).toEqual([j.id]);
      clock.now = T0;
    }
    // A pull consumer never claims ahead.
    await queue.configureTopic("pulled", { mode: "pull" });
    await queue.enqueue({ topic: "pulled", payload: 4, runAt: T0 + 400 });
    expect((await queue.claim("pulled", { max: 10, leadMs: 1_000, mode: "pull" })).jobs).toEqual([]);
  });

  it("retry puts the job back with its error; dead records it and keeps the record", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "r", payload: 1 });
    const [j1] = (await queue.claim("r", { max: 1, leaseMs: 10_000 })).jobs;
    await queue.settle("r", [{ id, attempt: j1!.attempt, kind: "retry", at: T0 + 500, error: "HTTP 503" }]);
    expect(await queue.get(id)).toMatchObject({ state: "scheduled", attempts: 1, lastError: "HTTP 503", dueAt: T0 + 500 });
    clock.now = T0 + 500;
    const [j2] = (await queue.claim("r", { max: 1, leaseMs: 10_000 })).jobs;
    expect(j2!.attempt).toBe(2);
    await queue.settle("r", [{ id, attempt: 2, kind: "dead", error: "HTTP 404" }]);
    expect(await queue.get(id)).toMatchObject({ state: "dead", attempts: 2, lastError: "HTTP 404" });
    const dead = await queue.deadLetters("r");
    expect(dead.entries).toEqual([
      {
        id,
        attempts: 2,
        lastError: "HTTP 404",
        failedAt: T0 + 500,
        history: [
          { attempt: 1, run: 1, startedAt: T0, durationMs: 0, outcome: "retry", error: "HTTP 503" },
          { attempt: 2, run: 1, startedAt: T0 + 500, durationMs: 0, outcome: "dead", error: "HTTP 404" },
        ],
        job: expect.objectContaining({ payload: 1, createdAt: T0 }),
      },
    ]);
    const stats = await queue.topicStats("r");
    expect(stats.counters).toEqual({ dispatched: 2, succeeded: 0, retried: 1, dead: 1, dropped: 0, expired: 0 });
    expect(stats).toMatchObject({ scheduled: 0, inflight: 0, dead: 1 });
  });

  it("a claim that is never settled is delivered again after its lease, and the stale settle changes nothing", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "k", payload: "x", backoff: normalizeBackoff({ type: "fixed", delay: 0 }) });
    const [first] = (await queue.claim("k", { max: 1, leaseMs: 1_000 })).jobs;
    expect(first!.attempt).toBe(1);
    // Still leased: nobody else gets it.
    clock.now = T0 + 999;
    expect((await queue.claim("k", { max: 1, leaseMs: 1_000 })).jobs).toEqual([]);
    // The worker died; after the lease the job comes back with attempt 2.
    clock.now = T0 + 1_001;
    const again = await queue.claim("k", { max: 1, leaseMs: 1_000 });
    expect(again.reaped).toEqual({ retried: 1, dead: 0 });
    expect(again.jobs.map((j) => [j.id, j.attempt])).toEqual([[id, 2]]);
    expect(await queue.get(id)).toMatchObject({ lastError: expect.stringMatching(/lease expired/) });
    // The first worker wakes up and acks attempt 1: stale, nothing changes.
    expect(await queue.settle("k", [{ id, attempt: 1, kind: "ack" }])).toEqual([{ id, applied: false }]);
    expect(await queue.get(id)).toMatchObject({ state: "inflight", attempts: 2 });
    expect(await queue.settle("k", [{ id, attempt: 2, kind: "ack" }])).toEqual([{ id, applied: true }]);
    expect(await queue.get(id)).toMatchObject({ state: "succeeded", attempts: 2 });
    // A second ack of the same attempt is stale too.
    expect(await queue.settle("k", [{ id, attempt: 2, kind: "ack" }])).toEqual([{ id, applied: false }]);
  });

  it("an expired lease on the last attempt goes to dead", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "l", payload: 1, maxAttempts: 1 });
    await queue.claim("l", { max: 1, leaseMs: 100 });
    clock.now = T0 + 200;
    const r = await queue.claim("l", { max: 1, leaseMs: 100 });
    expect(r.reaped).toEqual({ retried: 0, dead: 1 });
    expect(await queue.get(id)).toMatchObject({ state: "dead", attempts: 1, lastError: expect.stringMatching(/lease expired/) });
    expect((await queue.deadLetters("l")).entries.map((e) => e.id)).toEqual([id]);
  });

  it("paused topics claim nothing; concurrency caps jobs in flight", async () => {
    const { queue } = testQueue();
    await queue.enqueueBatch(Array.from({ length: 10 }, (_, i) => ({ topic: "c", payload: i })));
    await queue.configureTopic("c", { paused: true });
    expect(await queue.claim("c", { max: 10, leaseMs: 60_000 })).toMatchObject({ jobs: [], paused: true });
    await queue.configureTopic("c", { paused: false, concurrency: 3 });
    const first = await queue.claim("c", { max: 10, leaseMs: 60_000 });
    expect(first.jobs).toHaveLength(3);
    expect((await queue.claim("c", { max: 10, leaseMs: 60_000 })).jobs).toHaveLength(0);
    await queue.settle("c", [{ id: first.jobs[0]!.id, attempt: 1, kind: "ack" }]);
    expect((await queue.claim("c", { max: 10, leaseMs: 60_000 })).jobs).toHaveLength(1);
    await queue.configureTopic("c", { concurrency: null });
    expect((await queue.claim("c", { max: 10, leaseMs: 60_000 })).jobs).toHaveLength(6);
  });
});

describe("cancel, reschedule, get", () => {
  it("cancels and reschedules scheduled jobs only", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const a = await queue.enqueue({ topic: "c", payload: "a", delayMs: 10_000 });
    const b = await queue.enqueue({ topic: "c", payload: "b" });
    expect(await queue.reschedule(a.id, T0 + 20_000)).toBe("rescheduled");
    expect(await queue.get(a.id)).toMatchObject({ state: "scheduled", dueAt: T0 + 20_000 });
    expect(await queue.cancel(a.id)).toBe("cancelled");
    expect(await queue.get(a.id)).toMatchObject({ state: "cancelled", payload: "a" });
    expect(await queue.cancel(a.id)).toBe("not-found");
    expect(await queue.reschedule(a.id, T0)).toBe("not-found");
    await queue.claim("c", { max: 1, leaseMs: 60_000 });
    expect(await queue.cancel(b.id)).toBe("inflight");
    expect(await queue.reschedule(b.id, T0 + 1)).toBe("inflight");
    expect(await queue.get("c.01ARZ3NDEKTSV4RRFFQ69G5FAV")).toBeNull();
    expect(await queue.get("not an id")).toBeNull();
    expect(await queue.cancel("../../etc")).toBe("not-found");
  });

  it("finished jobs stay readable for the retention window, then not", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock, retentionMs: 60_000 });
    const { id } = await queue.enqueue({ topic: "ret", payload: 1 });
    await queue.claim("ret", { max: 1, leaseMs: 1_000 });
    await queue.settle("ret", [{ id, attempt: 1, kind: "ack" }]);
    clock.now = T0 + 60_000;
    expect(await queue.get(id)).toMatchObject({ state: "succeeded" });
    clock.now = T0 + 60_001;
    expect(await queue.get(id)).toBeNull();
  });
});

describe("dead letters", () => {
  it("the cap trims the oldest at the topic's next claim; replay puts jobs back with fresh attempts", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock, deadLetterCap: 3 });
    const ids = (await queue.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ topic: "d", payload: i, maxAttempts: 1 })))).map((r) => r.id);
    const claimed = await queue.claim("d", { max: 5, leaseMs: 1_000 });
    await queue.settle(
      "d",
      claimed.jobs.map((j) => ({ id: j.id, attempt: 1, kind: "dead" as const, error: `boom ${j.record.payload}` })),
    );
    // A settle cannot drop keys it was not given: the topic's next claim names the oldest past the cap, and its caller sweeps them.
    expect((await queue.deadLetters("d", { limit: 10 })).entries).toHaveLength(5);
    expect((await queue.claim("d", { max: 5, leaseMs: 1_000 })).jobs).toEqual([]);
    expect(await queue.get(ids[0]!)).toBeNull();
    const page = await queue.deadLetters("d", { limit: 2 });
    expect(page.entries.map((e) => e.id)).toEqual([ids[4], ids[3]]);
    expect(page.next).toEqual({ score: T0, id: ids[3] });
    const rest = await queue.deadLetters("d", { limit: 2, after: page.next! });
    expect(rest.entries.map((e) => e.id)).toEqual([ids[2]]);
    expect(rest.next).toBeNull();

    expect(await queue.replayDeadLetters("d", { ids: [ids[3]!, "d.01ARZ3NDEKTSV4RRFFQ69G5FAV"] })).toEqual({
      replayed: 1,
      notFound: ["d.01ARZ3NDEKTSV4RRFFQ69G5FAV"],
    });
    expect((await queue.deadLetters("d")).entries.map((e) => e.id)).toEqual([ids[4], ids[2]]);
    const back = await queue.claim("d", { max: 5, leaseMs: 1_000 });
    expect(back.jobs.map((j) => [j.id, j.attempt])).toEqual([[ids[3], 1]]);

    clock.now = T0 + 10;
    expect(await queue.replayDeadLettersMatching("d", { dueAt: T0 + 5_000 })).toBe(2);
    expect((await queue.deadLetters("d")).entries).toEqual([]);
    expect(await queue.get(ids[2]!)).toMatchObject({ state: "scheduled", attempts: 0, dueAt: T0 + 5_000 });
    // Equal due times keep the original order (ids sort in enqueue order).
    clock.now = T0 + 5_000;
    expect((await queue.claim("d", { max: 5, leaseMs: 1_000 })).jobs.map((j) => j.id)).toEqual([ids[2], ids[4]]);
  });

  it("purge drops every letter and says how many", async () => {
    const { queue } = testQueue();
    await queue.enqueueBatch(Array.from({ length: 4 }, (_, i) => ({ topic: "p", payload: i })));
    const c = await queue.claim("p", { max: 4, leaseMs: 1_000 });
    await queue.settle(
      "p",
      c.jobs.map((j) => ({ id: j.id, attempt: 1, kind: "dead" as const, error: "x" })),
    );
    expect(await queue.purgeDeadLetters("p")).toBe(4);
    expect(await queue.purgeDeadLetters("p")).toBe(0);
    expect((await queue.topicStats("p")).dead).toBe(0);
  });
});

describe("topics", () => {
  it("settings default from the deployment and can be set, cleared and read back", async () => {
    const { queue } = testQueue({ defaults: { maxAttempts: 7 } });
    expect((await queue.topicSettings("s")).settings).toMatchObject({ maxAttempts: 7, paused: false, mode: "push", timeoutMs: 30_000 });
    await queue.configureTopic("s", {
      ratePerSec: 20,
      burst: 5,
      maxAttempts: 3,
      backoff: normalizeBackoff({ type: "schedule", delays: ["5s", "30s", "60s"] }),
      mode: "pull",
      url: "https://example.com/hook",
      signingSecret: "shh",
    });
    const { settings, secrets } = await queue.topicSettings("s");
    expect(settings).toMatchObject({ ratePerSec: 20, burst: 5, maxAttempts: 3, mode: "pull", hasSigningSecret: true, hasWebhookSecret: false });
    expect(settings.backoff).toEqual({ type: "schedule", delays: [5_000, 30_000, 60_000] });
    expect(secrets).toEqual({ signingSecret: "shh" });
    expect(JSON.stringify(settings)).not.toContain("shh");
    await queue.configureTopic("s", { maxAttempts: null, mode: null });
    expect((await queue.topicSettings("s")).settings).toMatchObject({ maxAttempts: 7, mode: "push" });
    expect(await queue.listTopics()).toEqual(["s"]);
  });

  it("stats count backlog, ready, in flight, dead and the oldest ready job", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.enqueue({ topic: "st", payload: 1, runAt: T0 - 100 });
    await queue.enqueue({ topic: "st", payload: 2, delayMs: 50 });
    await queue.enqueue({ topic: "st", payload: 3, delayMs: 60_000 });
    clock.now = T0 + 100;
    const s = await queue.topicStats("st");
    expect(s).toMatchObject({ scheduled: 3, ready: 2, inflight: 0, dead: 0, oldestReadyDueAt: T0 });
  });
});
