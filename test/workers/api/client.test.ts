import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  Delayline,
  DelaylineConflictError,
  DelaylineError,
  DelaylineNotFoundError,
  Receiver,
  signPayload,
  verifySignature,
} from "../../../src/client/index.js";
import worker from "../../../app/worker.js";
import { isolatedEnv, TOKEN } from "./helpers.js";

function client(token = TOKEN) {
  const env = isolatedEnv();
  return new Delayline({ baseUrl: "http://delayline.test/", token, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
}

describe("Delayline client", () => {
  it("manages schedules: upsert, get, list and iterate, pause, resume, delete", async () => {
    const dl = client();
    const made = await dl.schedules.upsert("digest", {
      cron: "0 9 * * 1-5",
      timezone: "Europe/Berlin",
      topic: "mail",
      payload: { kind: "digest" },
      startAt: "2027-01-01T00:00:00Z",
    });
    expect(made.nextRuns[1]).toBe("2027-01-04T09:00:00+01:00");
    for (const id of ["a", "b", "c"]) await dl.schedules.upsert(id, { every: "1h", topic: "t" });
    const ids: string[] = [];
    for await (const s of dl.schedules.all()) ids.push(s.id);
    expect(ids).toEqual(["a", "b", "c", "digest"]);
    expect((await dl.schedules.list({ limit: 2 })).nextCursor).toBe("b");
    expect((await dl.schedules.pause("a")).paused).toBe(true);
    expect((await dl.schedules.resume("a")).paused).toBe(false);
    expect(await dl.schedules.delete("a")).toBe(true);
    expect(await dl.schedules.delete("a")).toBe(false);
    expect(await dl.schedules.get("a")).toBeNull();
    await expect(dl.schedules.upsert("bad", { topic: "t", every: "1h", timezone: "Nowhere/City" })).rejects.toMatchObject({ status: 422 });
  });

  it("lists a topic's jobs page by page, and iterates over every page with for await", async () => {
    const dl = client();
    const made = await dl.jobs.enqueueBatch(
      Array.from({ length: 25 }, (_, i) => ({ topic: "list", payload: i, runAt: Date.UTC(2099, 0, 1) + (24 - i) * 1_000 })),
    );
    const inDueOrder = made.map((j) => j.id).reverse();
    const first = await dl.jobs.list("list", { limit: 10, payload: true });
    expect(first.jobs.map((j) => j.payload)).toEqual([24, 23, 22, 21, 20, 19, 18, 17, 16, 15]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await dl.jobs.list("list", { limit: 10, cursor: first.nextCursor! });
    expect(second.jobs.map((j) => j.id)).toEqual(inDueOrder.slice(10, 20));
    expect(second.jobs[0]!.payload).toBeUndefined();

    const fetched: string[] = [];
    for await (const job of dl.jobs.all("list", { state: "scheduled", limit: 7 })) fetched.push(job.id);
    expect(fetched).toEqual(inDueOrder);
    const window: string[] = [];
    for await (const job of dl.jobs.all("list", { from: Date.UTC(2099, 0, 1), to: "2099-01-01T00:00:02Z" })) window.push(job.id);
    expect(window).toEqual(inDueOrder.slice(0, 3));
    for await (const job of dl.jobs.all("list", { state: "inflight" })) throw new Error(`nothing is in flight, got ${job.id}`);

    expect(await dl.jobs.bulkCancel("list", { ids: [inDueOrder[0]!] })).toEqual({ cancelled: 1, inflight: 0, notScheduled: 0 });
    expect(await dl.jobs.bulkCancel("list", { dueTo: "2099-01-01T00:00:09Z" })).toEqual({ cancelled: 9, inflight: 0 });
    expect(await dl.jobs.bulkCancel("list", { all: true })).toEqual({ cancelled: 15, inflight: 0 });
    expect((await dl.jobs.list("list")).jobs).toEqual([]);
  });

  it("round-trips every operation against the Worker", async () => {
    const dl = client();
    const job = await dl.jobs.enqueue({ topic: "mail", payload: { to: "ada" }, delay: "1h", idempotencyKey: "k1" });
    expect(job).toMatchObject({ topic: "mail", deduplicated: false });
    expect((await dl.jobs.enqueue({ topic: "mail", idempotencyKey: "k1" })).id).toBe(job.id);
    const batch = await dl.jobs.enqueueBatch([
      { topic: "mail", payload: 1 },
      { topic: "mail", payload: 2, delay: 5_000 },
    ]);
    expect(batch).toHaveLength(2);
    expect(await dl.jobs.get(job.id)).toMatchObject({ state: "scheduled", payload: { to: "ada" } });
    expect(await dl.jobs.reschedule(job.id, { runAt: "2099-01-01T00:00:00Z" })).toEqual({ id: job.id, dueAt: "2099-01-01T00:00:00.000Z" });
    await dl.jobs.cancel(job.id);
    expect((await dl.jobs.get(job.id))!.state).toBe("cancelled");
    expect(await dl.jobs.get("mail.01ARZ3NDEKTSV4RRFFQ69G5FAV")).toBeNull();

    expect((await dl.topics.configure("work", { mode: "pull", maxAttempts: 1 })).settings.mode).toBe("pull");
    expect((await dl.topics.pause("work")).settings.paused).toBe(true);
    expect((await dl.topics.resume("work")).settings.paused).toBe(false);
    const [w1, w2] = await dl.jobs.enqueueBatch([
      { topic: "work", payload: "a" },
      { topic: "work", payload: "b" },
    ]);
    const claimed = await dl.jobs.claim("work", { max: 5, leaseMs: 30_000 });
    expect(claimed.map((c) => c.id)).toEqual([w1!.id, w2!.id]);
    const extended = await dl.jobs.extend(w1!.id, 1, 600_000);
    expect(extended).toEqual({ id: w1!.id, attempt: 1, leaseExpiresAt: expect.any(String) });
    expect(Date.parse(extended.leaseExpiresAt)).toBeGreaterThan(Date.parse(claimed[0]!.leaseExpiresAt));
    await expect(dl.jobs.extend(w1!.id, 2, 600_000)).rejects.toBeInstanceOf(DelaylineConflictError);
    await expect(dl.jobs.extend("work.01ARZ3NDEKTSV4RRFFQ69G5FAV", 1, 600_000)).rejects.toBeInstanceOf(DelaylineNotFoundError);
    await dl.jobs.ack(w1!.id, 1);
    expect(await dl.jobs.nack(w2!.id, 1, { error: "boom" })).toBe("dead");
    const dead = await dl.deadLetters.list("work", { limit: 10 });
    expect(dead.entries.map((e) => e.id)).toEqual([w2!.id]);
    expect(await dl.deadLetters.replay("work", { ids: [w2!.id] })).toEqual({ replayed: 1, notFound: [] });
    const again = await dl.jobs.claim("work");
    await dl.jobs.nack(again[0]!.id, 1, { error: "again", permanent: true });
    expect(await dl.deadLetters.purge("work")).toBe(1);
    expect((await dl.topics.list()).topics.map((t) => t.topic)).toEqual(["mail", "work"]);
    expect((await dl.topics.get("work")).counters).toMatchObject({ succeeded: 1, dead: 2 });
    const stats = await dl.stats.get({ minutes: 5 });
    const work = stats.topics.find((t) => t.topic === "work")!;
    expect(work).toMatchObject({ mode: "pull", dead: 0, counters: { dispatched: 3, succeeded: 1, retried: 0, dead: 2 } });
    expect(work.series).toHaveLength(5);
    expect(work.series.reduce((n, p) => n + p.succeeded + p.dead, 0)).toBe(3);
    expect(await dl.stats.prometheus()).toContain('delayline_jobs_dead_total{topic="work"} 2\n');

    const hook = await dl.hooks.ingest("hooks", "plain text", { contentType: "text/plain", delay: "1m" });
    expect((await dl.jobs.get(hook.id))!.payload).toEqual({ contentType: "text/plain", text: "plain text" });

    await expect(dl.topics.delete("mail")).rejects.toMatchObject({ status: 409 });
    expect(await dl.topics.delete("mail", { purge: true })).toEqual({ topic: "mail", deleted: true, purged: { scheduled: 2, dead: 0 } });
    expect((await dl.topics.list()).topics.map((t) => t.topic)).toEqual(["hooks", "work"]);
  });

  it("flow keys: a job's flowKey and priority, a topic's flow settings, and a key's own settings set, read, listed, paused, resumed and removed", async () => {
    const dl = client();
    const flow = { parallelism: 2, ratePerSec: 5, burst: 3, weight: 2, priorityStepMs: 1_000 };
    expect((await dl.topics.configure("shaped", { mode: "pull", flow })).settings.flow).toEqual(flow);
    expect((await dl.topics.get("shaped")).settings.flow).toEqual(flow);

    const one = await dl.jobs.enqueue({ topic: "shaped", flowKey: "tenant A", priority: 9, delay: "1h" });
    const [two, three] = await dl.jobs.enqueueBatch([
      { topic: "shaped", flowKey: "tenant B", priority: 3 },
      { topic: "shaped", flowKey: "tenant A" },
    ]);
    expect(await dl.jobs.get(one.id)).toMatchObject({ state: "scheduled", flowKey: "tenant A", priority: 9 });
    expect(await dl.jobs.get(two!.id)).toMatchObject({ flowKey: "tenant B", priority: 3 });
    expect(await dl.jobs.get(three!.id)).toMatchObject({ flowKey: "tenant A" });
    expect((await dl.jobs.get(three!.id))!.priority).toBeUndefined();
    await expect(dl.jobs.enqueue({ topic: "shaped", flowKey: "a\tb" })).rejects.toMatchObject({ status: 422 });
    await expect(dl.jobs.enqueue({ topic: "shaped", priority: 10 })).rejects.toMatchObject({ status: 422 });

    // A key without settings of its own is known by its jobs: its length, its settings {}.
    expect(await dl.flowKeys.get("shaped", "tenant A")).toEqual({ topic: "shaped", key: "tenant A", settings: {}, length: 2 });
    expect(await dl.flowKeys.get("shaped", "nobody")).toBeNull();
    expect(await dl.flowKeys.set("shaped", "tenant A", { weight: 3, parallelism: 1 })).toEqual({
      topic: "shaped",
      key: "tenant A",
      settings: { weight: 3, parallelism: 1 },
      length: 2,
    });
    // Pausing keeps the key's other settings; its due job waits while tenant B's is claimed.
    expect((await dl.flowKeys.pause("shaped", "tenant A")).settings).toEqual({ weight: 3, parallelism: 1, paused: true });
    expect((await dl.jobs.claim("shaped", { max: 10 })).map((j) => j.id)).toEqual([two!.id]);
    expect((await dl.flowKeys.get("shaped", "tenant A"))!.settings.paused).toBe(true);
    // Resuming keeps them too, and the key's job is claimed.
    expect((await dl.flowKeys.resume("shaped", "tenant A")).settings).toEqual({ weight: 3, parallelism: 1 });
    expect((await dl.jobs.claim("shaped", { max: 10 })).map((j) => j.id)).toEqual([three!.id]);
    // A key whose only setting was the pause has none of its own once resumed.
    await dl.flowKeys.pause("shaped", "tenant C");
    expect((await dl.flowKeys.get("shaped", "tenant C"))!.settings).toEqual({ paused: true });
    expect(await dl.flowKeys.resume("shaped", "tenant C")).toEqual({ topic: "shaped", key: "tenant C", settings: {}, length: 0 });
    expect(await dl.flowKeys.get("shaped", "tenant C")).toBeNull();

    expect((await dl.flowKeys.list("shaped")).keys).toEqual([{ topic: "shaped", key: "tenant A", settings: { weight: 3, parallelism: 1 }, length: 1 }]);
    expect(await dl.flowKeys.delete("shaped", "tenant A")).toBe(true);
    expect(await dl.flowKeys.delete("shaped", "tenant A")).toBe(false);
    expect(await dl.flowKeys.get("shaped", "tenant A")).toEqual({ topic: "shaped", key: "tenant A", settings: {}, length: 1 });
    // Its scheduled job, listed and cancelled by its key.
    expect((await dl.jobs.list("shaped", { flowKey: "tenant A" })).jobs.map((j) => j.id)).toEqual([one.id]);
    expect(await dl.jobs.bulkCancel("shaped", { flowKey: "tenant A" })).toMatchObject({ cancelled: 1 });
    expect(await dl.flowKeys.get("shaped", "tenant A")).toBeNull();
    await expect(dl.flowKeys.set("shaped", "k", { weight: 0 })).rejects.toMatchObject({ status: 422 });

    // Past one page: every key is walked, each at least once. More keys than
    // redis-server keeps in a compact hash (hash-max-listpack-entries, 512),
    // which it would list whole whatever the limit.
    const keys = Array.from({ length: 600 }, (_, i) => `key-${i}`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((key) => dl.flowKeys.set("paged", key, { weight: 2 })));
    const first = await dl.flowKeys.list("paged", { limit: 100 });
    expect(first.keys.length).toBeLessThan(keys.length);
    expect(first.nextCursor).toEqual(expect.any(String));
    const walked = new Set<string>();
    for await (const k of dl.flowKeys.all("paged", { limit: 100 })) {
      expect(k).toEqual({ topic: "paged", key: k.key, settings: { weight: 2 }, length: 0 });
      walked.add(k.key);
    }
    expect([...walked].sort()).toEqual([...keys].sort());

    // flow: null removes the topic's flow settings.
    expect((await dl.topics.configure("shaped", { flow: null })).settings).not.toHaveProperty("flow");
  });

  it("upserts by job key: created, replaced, ignored; an enqueue with a jobKey is an upsert (the client adds no idempotency key)", async () => {
    const dl = client();
    const made = await dl.jobs.upsert({ topic: "digest", jobKey: "user-1", payload: 1, delay: "1m", maxWait: "5m" });
    expect(made).toMatchObject({ topic: "digest", result: "created", deduplicated: false });
    expect(await dl.jobs.upsert({ topic: "digest", jobKey: "user-1", payload: 2, delay: "1m" })).toMatchObject({ id: made.id, result: "replaced" });
    expect(await dl.jobs.upsert({ topic: "digest", jobKey: "user-1", payload: 3, onConflict: "ignore" })).toMatchObject({ id: made.id, result: "ignored" });
    expect(await dl.jobs.enqueue({ topic: "digest", jobKey: "user-1", payload: 4, onConflict: "keepDue" })).toMatchObject({ id: made.id, result: "replaced" });
    expect(await dl.jobs.get(made.id)).toMatchObject({ payload: 4, jobKey: "user-1", replacements: 2 });
    await expect(dl.jobs.upsert({ topic: "digest", jobKey: "user-1", delay: "10m", maxWait: "5m" })).rejects.toMatchObject({ status: 422 });
  });

  it("throws typed errors carrying the problem document", async () => {
    const err = await client()
      .jobs.enqueue({ topic: "bad topic" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DelaylineError);
    expect((err as DelaylineError).status).toBe(422);
    expect((err as DelaylineError).problem.errors![0]!.path).toBe("topic");
    const unauthorized = await client("wrong-token-000")
      .topics.list()
      .catch((e: unknown) => e);
    expect((unauthorized as DelaylineError).status).toBe(401);
  });
});

describe("delivery signatures", () => {
  const body = JSON.stringify({ hello: "world" });

  it("verify what sign produced, with the current or the next secret", async () => {
    const header = await signPayload("current-secret", body, 1_800_000_000);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(await verifySignature({ header, body, secrets: "current-secret", nowSec: 1_800_000_010 })).toEqual({ ok: true });
    expect(await verifySignature({ header, body, secrets: ["old", "current-secret"], nowSec: 1_800_000_010 })).toEqual({ ok: true });
    const receiver = new Receiver({ currentSecret: "old", nextSecret: "current-secret" });
    expect(await receiver.verify(await signPayload("current-secret", body), body)).toBe(true);
  });

  it("refuse tampered bodies, wrong secrets, stale timestamps and malformed headers", async () => {
    const header = await signPayload("s3cret", body, 1_800_000_000);
    const now = 1_800_000_000;
    expect(await verifySignature({ header, body: `${body} `, secrets: "s3cret", nowSec: now })).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifySignature({ header, body, secrets: "other", nowSec: now })).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifySignature({ header, body, secrets: "s3cret", nowSec: now + 301 })).toEqual({ ok: false, reason: "expired" });
    expect(await verifySignature({ header, body, secrets: "s3cret", nowSec: now + 30, toleranceSec: 10 })).toEqual({ ok: false, reason: "expired" });
    expect(await verifySignature({ header: "v1=abc", body, secrets: "s3cret" })).toEqual({ ok: false, reason: "malformed" });
    expect(await verifySignature({ header: null, body, secrets: "s3cret" })).toEqual({ ok: false, reason: "missing" });
  });
});
