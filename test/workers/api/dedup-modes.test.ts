import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../../app/worker.js";
import { Delayline } from "../../../src/client/index.js";
import type { Env } from "../../../src/env.js";
import { sleep } from "../../../harness/util.js";
import { call, isolatedEnv, TOKEN } from "./helpers.js";

// The three ways an enqueue is deduplicated, over HTTP: an idempotency key
// held for its window (the default), one held until its job has finished,
// and a topic's content dedup; and a dead letter's replay, which none of
// them swallows.

const enqueue = (env: Env, body: Record<string, unknown>) => call(env, "/v1/jobs", { body });
const stateOf = async (env: Env, id: string) => (await call(env, `/v1/jobs/${id}`)).body.state as string;
const scheduledIds = async (env: Env, topic: string) => (await call(env, `/v1/topics/${topic}/jobs`)).body.jobs.map((j: { id: string }) => j.id) as string[];

/** A pull topic whose jobs die at their first failure unless `maxAttempts` says otherwise. */
async function pullTopic(env: Env, topic: string, settings: Record<string, unknown> = {}) {
  expect((await call(env, `/v1/topics/${topic}`, { method: "PUT", body: { mode: "pull", maxAttempts: 1, ...settings } })).status).toBe(200);
}

/** Claims the topic's due jobs (a pull consumer's lease); returns their ids and attempts. */
async function claim(env: Env, topic: string): Promise<Array<{ id: string; attempt: number }>> {
  return (await call(env, `/v1/topics/${topic}/claim`, { body: { max: 10 } })).body.jobs;
}

describe("idempotency keys held for their window (the default)", () => {
  it("a repeat, with idempotencyUntil window or none, is the first job: 200, deduplicated, one job stored; also once that job has finished", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "w");
    const first = await enqueue(env, { topic: "w", payload: 1, idempotencyKey: "k" });
    expect(first.status).toBe(201);
    expect(first.body.deduplicated).toBe(false);
    const again = await enqueue(env, { topic: "w", payload: 2, idempotencyKey: "k", idempotencyUntil: "window" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ id: first.body.id, topic: "w", dueAt: first.body.dueAt, deduplicated: true });
    expect(await scheduledIds(env, "w")).toEqual([first.body.id]);

    const [job] = await claim(env, "w");
    await call(env, `/v1/jobs/${job!.id}/ack`, { body: { attempt: job!.attempt } });
    expect(await stateOf(env, first.body.id)).toBe("succeeded");
    const late = await enqueue(env, { topic: "w", payload: 3, idempotencyKey: "k" });
    expect(late.status).toBe(200);
    expect(late.body).toEqual({ id: first.body.id, topic: "w", dueAt: null, deduplicated: true });
    expect(await scheduledIds(env, "w")).toEqual([]);
  });
});

describe('idempotencyUntil: "finished"', () => {
  const finished = (env: Env, header = false) =>
    header
      ? call(env, "/v1/jobs", { body: { topic: "f", payload: "x", idempotencyUntil: "finished" }, headers: { "idempotency-key": "order-1" } })
      : enqueue(env, { topic: "f", payload: "x", idempotencyKey: "order-1", idempotencyUntil: "finished" });

  it("a repeat while the job is scheduled, waiting for a retry or in flight is that job; once it succeeded, a new job takes the key", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "f", { maxAttempts: 2, backoff: { type: "fixed", delay: "1h" } });
    const first = await finished(env);
    expect(first.status).toBe(201);
    const scheduled = await finished(env, true);
    expect(scheduled.status).toBe(200);
    expect(scheduled.body).toEqual({ id: first.body.id, topic: "f", dueAt: first.body.dueAt, deduplicated: true });

    let [job] = await claim(env, "f");
    expect(await stateOf(env, first.body.id)).toBe("inflight");
    const inFlight = await finished(env);
    expect(inFlight.status).toBe(200);
    expect(inFlight.body).toEqual({ id: first.body.id, topic: "f", dueAt: null, deduplicated: true });

    // A failure with an attempt left: the job waits for its retry, an hour off, and still holds the key.
    await call(env, `/v1/jobs/${job!.id}/nack`, { body: { attempt: job!.attempt, error: "busy" } });
    const retryAt = (await call(env, `/v1/jobs/${first.body.id}`)).body.dueAt as string;
    const waiting = await finished(env);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toEqual({ id: first.body.id, topic: "f", dueAt: retryAt, deduplicated: true });
    expect(await scheduledIds(env, "f")).toEqual([first.body.id]);

    await call(env, `/v1/jobs/${first.body.id}`, { method: "PATCH", body: { delay: 0 } });
    [job] = await claim(env, "f");
    await call(env, `/v1/jobs/${job!.id}/ack`, { body: { attempt: job!.attempt } });
    expect(await stateOf(env, first.body.id)).toBe("succeeded");
    const next = await finished(env);
    expect(next.status).toBe(201);
    expect(next.body.deduplicated).toBe(false);
    expect(next.body.id).not.toBe(first.body.id);
    expect(await stateOf(env, next.body.id)).toBe("scheduled");
    // The key is the new job's now.
    expect((await finished(env)).body).toMatchObject({ id: next.body.id, deduplicated: true });
    expect(await scheduledIds(env, "f")).toEqual([next.body.id]);
  });

  it("a job that died or was cancelled frees the key", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "f");
    const first = await finished(env);
    const [job] = await claim(env, "f");
    await call(env, `/v1/jobs/${job!.id}/nack`, { body: { attempt: job!.attempt, error: "boom" } });
    expect(await stateOf(env, first.body.id)).toBe("dead");
    const afterDead = await finished(env);
    expect(afterDead.status).toBe(201);
    expect(afterDead.body.id).not.toBe(first.body.id);
    expect(await stateOf(env, afterDead.body.id)).toBe("scheduled");

    expect((await call(env, `/v1/jobs/${afterDead.body.id}`, { method: "DELETE" })).body.state).toBe("cancelled");
    const afterCancel = await finished(env);
    expect(afterCancel.status).toBe(201);
    expect(afterCancel.body.id).not.toBe(afterDead.body.id);
    expect(await stateOf(env, afterCancel.body.id)).toBe("scheduled");
    expect(await stateOf(env, first.body.id)).toBe("dead");
    expect(await scheduledIds(env, "f")).toEqual([afterCancel.body.id]);
  });

  it("in a batch: a repeat of a live job is it, a key its job left is the new job's, and a key twice in the batch is one job", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "f");
    const live = await enqueue(env, { topic: "f", payload: 1, idempotencyKey: "live", idempotencyUntil: "finished" });
    const ended = await enqueue(env, { topic: "f", payload: 2, idempotencyKey: "ended", idempotencyUntil: "finished" });
    await call(env, `/v1/jobs/${ended.body.id}`, { method: "DELETE" });
    const r = await call(env, "/v1/jobs/batch", {
      body: {
        jobs: [
          { topic: "f", payload: 1, idempotencyKey: "live", idempotencyUntil: "finished" },
          { topic: "f", payload: 2, idempotencyKey: "ended", idempotencyUntil: "finished" },
          { topic: "f", payload: 3, idempotencyKey: "twice", idempotencyUntil: "finished" },
          { topic: "f", payload: 3, idempotencyKey: "twice", idempotencyUntil: "finished" },
        ],
      },
    });
    expect(r.status).toBe(201);
    const [a, b, c, d] = r.body.jobs;
    expect(a).toMatchObject({ id: live.body.id, deduplicated: true });
    expect(b).toMatchObject({ deduplicated: false });
    expect(b.id).not.toBe(ended.body.id);
    expect(c).toMatchObject({ deduplicated: false });
    expect(d).toEqual({ ...c, deduplicated: true });
    expect((await scheduledIds(env, "f")).sort()).toEqual([live.body.id, b.id, c.id].sort());
  });

  it("the key is kept for the job's delay plus the idempotency window: past it, a repeat makes a second job", async () => {
    const env = isolatedEnv({ IDEMPOTENCY_WINDOW_MS: "1000" });
    await pullTopic(env, "f");
    const first = await finished(env);
    await sleep(1_100);
    const again = await finished(env);
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
  });

  it("is refused (422, nothing stored) without an idempotency key, beside a jobKey, or as another word", async () => {
    const env = isolatedEnv();
    for (const body of [
      { topic: "f", idempotencyUntil: "finished" },
      { topic: "f", jobKey: "j", idempotencyUntil: "finished" },
      { topic: "f", idempotencyKey: "k", idempotencyUntil: "forever" },
    ]) {
      const r = await enqueue(env, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.errors.map((e: { path: string }) => e.path)).toContain("idempotencyUntil");
    }
    const batch = await call(env, "/v1/jobs/batch", { body: { jobs: [{ topic: "f", idempotencyUntil: "finished" }] } });
    expect(batch.status).toBe(422);
    expect(batch.body.errors.map((e: { path: string }) => e.path)).toContain("jobs[0].idempotencyUntil");
    expect((await call(env, "/v1/topics")).body.total).toBe(0);
  });
});

describe("content dedup (a topic's contentDedupMs)", () => {
  const target = { url: "https://example.com/hook" };

  it("byte-identical jobs within the window are one (200, deduplicated); another payload or target is another job", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "c", { contentDedupMs: 86_400_000 });
    expect((await call(env, "/v1/topics/c")).body.settings.contentDedupMs).toBe(86_400_000);
    const body = JSON.stringify({ topic: "c", payload: { order: 7, items: ["a", "b"] }, target, delay: "1h" });
    const headers = { "content-type": "application/json" };
    const first = await call(env, "/v1/jobs", { raw: body, headers });
    expect(first.status).toBe(201);
    const same = await call(env, "/v1/jobs", { raw: body, headers });
    expect(same.status).toBe(200);
    expect(same.body).toEqual({ id: first.body.id, topic: "c", dueAt: first.body.dueAt, deduplicated: true, deduplicatedBy: "content" });
    // Its own idempotency key (the client sends one with every enqueue) does not make it another job.
    const keyed = await call(env, "/v1/jobs", { raw: body, headers: { ...headers, "idempotency-key": "client-made" } });
    expect(keyed.body).toMatchObject({ id: first.body.id, deduplicated: true, deduplicatedBy: "content" });
    // … and that key names the job now: its retry gets the same answer.
    expect((await enqueue(env, { topic: "c", payload: "else", idempotencyKey: "client-made" })).body).toMatchObject({
      id: first.body.id,
      deduplicated: true,
      deduplicatedBy: "content",
    });

    const otherPayload = await enqueue(env, { topic: "c", payload: { order: 8, items: ["a", "b"] }, target, delay: "1h" });
    const otherTarget = await enqueue(env, { topic: "c", payload: { order: 7, items: ["a", "b"] }, target: { url: "https://example.com/other" }, delay: "1h" });
    for (const r of [otherPayload, otherTarget]) {
      expect(r.status).toBe(201);
      expect(r.body.deduplicated).toBe(false);
    }
    expect(new Set([first.body.id, otherPayload.body.id, otherTarget.body.id]).size).toBe(3);
    expect((await scheduledIds(env, "c")).sort()).toEqual([first.body.id, otherPayload.body.id, otherTarget.body.id].sort());
    expect(await stateOf(env, first.body.id)).toBe("scheduled");
  });

  it("the client, which gives every enqueue a key of its own, reports a repeat by content as deduplicated, and its own keys' jobs as new", async () => {
    const env = isolatedEnv();
    const dl = new Delayline({ baseUrl: "http://delayline.test", token: TOKEN, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
    await dl.topics.configure("c", { mode: "pull", contentDedupMs: 60_000 });
    const first = await dl.jobs.enqueue({ topic: "c", payload: { n: 1 } });
    expect(first.deduplicated).toBe(false);
    expect(await dl.jobs.enqueue({ topic: "c", payload: { n: 1 } })).toEqual({ ...first, deduplicated: true, deduplicatedBy: "content" });
    expect((await dl.jobs.enqueue({ topic: "c", payload: { n: 2 } })).deduplicated).toBe(false);
    const batch = await dl.jobs.enqueueBatch([
      { topic: "c", payload: { n: 1 } },
      { topic: "c", payload: { n: 3 } },
    ]);
    expect(batch.map((e) => [e.id === first.id, e.deduplicated])).toEqual([
      [true, true],
      [false, false],
    ]);
    const made = await dl.jobs.enqueue({ topic: "c", payload: "mine", idempotencyKey: "mine", idempotencyUntil: "finished" });
    expect(await dl.jobs.enqueue({ topic: "c", payload: "mine", idempotencyKey: "mine", idempotencyUntil: "finished" })).toEqual({
      ...made,
      deduplicated: true,
    });
  });

  it("in a batch, identical jobs are one; a topic without the setting keeps both", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "c", { contentDedupMs: 60_000 });
    await pullTopic(env, "plain");
    const r = await call(env, "/v1/jobs/batch", {
      body: {
        jobs: [
          { topic: "c", payload: 1 },
          { topic: "c", payload: 1 },
          { topic: "c", payload: 2 },
          { topic: "plain", payload: 1 },
          { topic: "plain", payload: 1 },
        ],
      },
    });
    const [a, b, c, p, q] = r.body.jobs;
    expect(b).toEqual({ ...a, deduplicated: true, deduplicatedBy: "content" });
    expect(c.deduplicated).toBe(false);
    expect(c.id).not.toBe(a.id);
    expect([p.deduplicated, q.deduplicated]).toEqual([false, false]);
    expect(p.id).not.toBe(q.id);
    expect((await scheduledIds(env, "c")).sort()).toEqual([a.id, c.id].sort());
  });

  it("on a full topic (maxLength), a repeat by content or of a live finished-mode key is answered, not refused: it adds no job", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "full", { contentDedupMs: 60_000, maxLength: 2 });
    const a = await enqueue(env, { topic: "full", payload: "a" });
    const b = await enqueue(env, { topic: "full", payload: "b", idempotencyKey: "k", idempotencyUntil: "finished" });
    expect((await enqueue(env, { topic: "full", payload: "a" })).body).toMatchObject({ id: a.body.id, deduplicated: true, deduplicatedBy: "content" });
    expect((await enqueue(env, { topic: "full", payload: "other", idempotencyKey: "k", idempotencyUntil: "finished" })).body).toMatchObject({
      id: b.body.id,
      deduplicated: true,
    });
    expect((await enqueue(env, { topic: "full", payload: "c" })).status).toBe(429);
    // Once the keyed job ended, its key's repeat (with content of its own) is a job the cap counts.
    await call(env, `/v1/jobs/${b.body.id}`, { method: "DELETE" });
    expect((await enqueue(env, { topic: "full", payload: "b2", idempotencyKey: "k", idempotencyUntil: "finished" })).status).toBe(201);
    expect((await enqueue(env, { topic: "full", payload: "d", idempotencyKey: "k2", idempotencyUntil: "finished" })).status).toBe(429);
  });

  it("past the window the same content is a new job", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "c", { contentDedupMs: 1 });
    const first = await enqueue(env, { topic: "c", payload: "same" });
    await sleep(20);
    const again = await enqueue(env, { topic: "c", payload: "same" });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
  });

  it("set on a topic this isolate already enqueued to, applies to its next enqueue; cleared with null, jobs are kept apart again", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "c");
    await enqueue(env, { topic: "c", payload: "warm" });
    await call(env, "/v1/topics/c", { method: "PUT", body: { contentDedupMs: 60_000 } });
    const first = await enqueue(env, { topic: "c", payload: "same" });
    expect((await enqueue(env, { topic: "c", payload: "same" })).body).toMatchObject({ id: first.body.id, deduplicated: true });
    await call(env, "/v1/topics/c", { method: "PUT", body: { contentDedupMs: null } });
    expect((await call(env, "/v1/topics/c")).body.settings.contentDedupMs).toBeUndefined();
    expect((await enqueue(env, { topic: "c", payload: "same" })).status).toBe(201);
  });

  it.each([0, 86_400_001, 1.5, "1h"])("contentDedupMs %j is 422", async (contentDedupMs) => {
    const r = await call(isolatedEnv(), "/v1/topics/c", { method: "PUT", body: { contentDedupMs } });
    expect(r.status).toBe(422);
    expect(r.body.errors.map((e: { path: string }) => e.path)).toContain("contentDedupMs");
  });
});

describe("a dead letter's replay is never swallowed by its own key", () => {
  /** A pull topic's job that died at its first attempt, enqueued with `extra`. */
  async function deadJob(env: Env, topic: string, extra: Record<string, unknown>): Promise<string> {
    const { body } = await enqueue(env, { topic, payload: "p", ...extra });
    const [job] = await claim(env, topic);
    await call(env, `/v1/jobs/${job!.id}/nack`, { body: { attempt: job!.attempt, error: "boom" } });
    expect(await stateOf(env, body.id)).toBe("dead");
    return body.id;
  }

  it.each([
    ["a window key", "w", {}, { idempotencyKey: "k" }],
    ["a finished key, taken by a newer job", "f", {}, { idempotencyKey: "k", idempotencyUntil: "finished" }],
    ["its content", "c", { contentDedupMs: 86_400_000 }, {}],
  ])("held by %s: replayed by id, back on the schedule under its own id", async (_what, topic, settings, extra) => {
    const env = isolatedEnv();
    await pullTopic(env, topic, settings);
    const id = await deadJob(env, topic, extra);
    // The key still names the letter (window, content), or a job made since (finished).
    const repeat = await enqueue(env, { topic, payload: "p", ...extra });
    if (topic === "f") expect(repeat.status).toBe(201);
    else expect(repeat.body).toMatchObject({ id, deduplicated: true });

    const replay = await call(env, `/v1/topics/${topic}/dead/replay`, { body: { ids: [id] } });
    expect(replay.body).toEqual({ replayed: 1, notFound: [], nextCursor: null });
    expect(await stateOf(env, id)).toBe("scheduled");
    expect(await scheduledIds(env, topic)).toContain(id);
  });

  it("into another topic that dedups by content and holds the same content: a job of its own", async () => {
    const env = isolatedEnv();
    await pullTopic(env, "from", { contentDedupMs: 86_400_000 });
    await pullTopic(env, "to", { contentDedupMs: 86_400_000 });
    const id = await deadJob(env, "from", { idempotencyKey: "k", idempotencyUntil: "finished" });
    const there = await enqueue(env, { topic: "to", payload: "p", idempotencyKey: "k", idempotencyUntil: "finished" });
    const replay = await call(env, "/v1/topics/from/dead/replay", { body: { ids: [id], topic: "to" } });
    expect(replay.status).toBe(200);
    const movedTo = replay.body.movedTo[id] as string;
    expect(movedTo).toMatch(/^to\./);
    expect(movedTo).not.toBe(there.body.id);
    expect(await stateOf(env, id)).toBe("moved");
    expect((await scheduledIds(env, "to")).sort()).toEqual([there.body.id, movedTo].sort());
  });
});
