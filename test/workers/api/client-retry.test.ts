/**
 * The client's retries, idempotency keys, timeouts and error classes,
 * against the real Worker (its fetch entry point in workerd) on the test
 * Redis. Faults are made where they happen in production: a Worker whose
 * Redis is unreachable answers a real 503; an answer lost on the way back
 * is a fetch that throws after the Worker has handled the request; a 429
 * is what a rate limiter in front of the Worker would answer.
 */
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  Delayline,
  DelaylineAuthError,
  DelaylineConflictError,
  DelaylineError,
  DelaylineNotFoundError,
  DelaylineRateLimitError,
  DelaylineUnavailableError,
  DelaylineValidationError,
  type DelaylineOptions,
  type RetryEvent,
} from "../../../src/client/index.js";
import type { Env } from "../../../src/env.js";
import worker from "../../../app/worker.js";
import { isolatedEnv, TOKEN } from "./helpers.js";

type Fault = "lose-answer" | "redis-down" | { status: 429; retryAfter: string } | "hang" | null;

/**
 * A client whose fetch goes to the Worker, with `faults[i]` applied to
 * attempt i (none after the list). Records every request it sends.
 */
function harness(faults: Fault[], options: Partial<DelaylineOptions> = {}) {
  const env = isolatedEnv();
  // Same prefix, a Redis nobody listens for: the Worker answers what it answers in an outage.
  const down: Env = { ...env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" };
  const sent: Request[] = [];
  const retries: RetryEvent[] = [];
  const dl = new Delayline({
    baseUrl: "http://delayline.test",
    token: TOKEN,
    retry: { backoff: () => 0 },
    onRetry: (e) => retries.push(e),
    ...options,
    fetch: async (request) => {
      const fault = faults[sent.length] ?? null;
      sent.push(request.clone());
      if (fault === "hang") return new Promise<Response>((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason)));
      if (fault !== null && typeof fault === "object") return new Response("slow down", { status: fault.status, headers: { "retry-after": fault.retryAfter } });
      const res = await worker.fetch(request, fault === "redis-down" ? down : env, createExecutionContext());
      if (fault === "lose-answer") {
        await res.text();
        throw new TypeError("connection reset by peer");
      }
      return res;
    },
  });
  // The same Worker with no faults, to look at what was stored.
  const plain = new Delayline({ baseUrl: "http://delayline.test", token: TOKEN, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
  return { dl, plain, sent, retries };
}

describe("client retries", () => {
  it("an enqueue whose answer was lost is retried with the same Idempotency-Key, and returns the job the first attempt stored: one job", async () => {
    const { dl, plain, sent, retries } = harness(["lose-answer"]);
    const job = await dl.jobs.enqueue({ topic: "lost", payload: { n: 1 }, delay: "1h" });
    expect(sent).toHaveLength(2);
    const keys = sent.map((r) => r.headers.get("idempotency-key"));
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(retries).toMatchObject([{ method: "POST", path: "/v1/jobs", attempt: 1, delayMs: 0 }]);
    expect(retries[0]!.error).toBeInstanceOf(DelaylineUnavailableError);
    expect(retries[0]!.error.status).toBe(0);
    // No earlier call of the caller's made the job, so it is not reported as a repeat.
    expect(job.deduplicated).toBe(false);
    const listed = await plain.jobs.list("lost");
    expect(listed.jobs.map((j) => j.id)).toEqual([job.id]);
  });

  it("a caller's own idempotency key is the one every attempt carries, and a repeat it made is reported as one", async () => {
    const { dl, plain, sent } = harness(["lose-answer"]);
    const job = await dl.jobs.enqueue({ topic: "own-key", delay: "1h", idempotencyKey: "order-42" });
    expect(sent.map((r) => r.headers.get("idempotency-key"))).toEqual(["order-42", "order-42"]);
    // The lost attempt stored it under the caller's key; the retry found it there.
    expect(job.deduplicated).toBe(true);
    expect((await plain.jobs.list("own-key")).jobs.map((j) => j.id)).toEqual([job.id]);
  });

  it("a batch whose answer was lost is retried, and stores each job once", async () => {
    const { dl, plain, sent } = harness(["lose-answer"]);
    const made = await dl.jobs.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ topic: "lost-batch", payload: i, delay: "1h" })));
    expect(sent).toHaveLength(2);
    const bodies = await Promise.all(sent.map(async (r) => (await r.json()) as { jobs: Array<{ idempotencyKey: string }> }));
    expect(bodies[1]!.jobs.map((j) => j.idempotencyKey)).toEqual(bodies[0]!.jobs.map((j) => j.idempotencyKey));
    expect(new Set(bodies[0]!.jobs.map((j) => j.idempotencyKey)).size).toBe(5);
    expect(made.every((j) => !j.deduplicated)).toBe(true);
    const listed = await plain.jobs.list("lost-batch");
    expect(listed.jobs.map((j) => j.id).sort()).toEqual(made.map((j) => j.id).sort());
  });

  it("the Worker's 503 while Redis is unreachable is retried after its Retry-After, then the enqueue succeeds once", async () => {
    const { dl, plain, retries } = harness(["redis-down", "redis-down"]);
    const job = await dl.jobs.enqueue({ topic: "outage", delay: "1h" });
    expect(retries).toHaveLength(2);
    for (const r of retries) {
      expect(r.error).toBeInstanceOf(DelaylineUnavailableError);
      expect(r.error.status).toBe(503);
      expect(r.error.problem.detail).toMatch(/Idempotency-Key/);
      // The backoff here is 0; the wait is the 1 s the Worker's Retry-After asks for.
      expect(r.delayMs).toBe(1_000);
    }
    expect((await plain.jobs.list("outage")).jobs.map((j) => j.id)).toEqual([job.id]);
  });

  it("a 429 waits what Retry-After asks (seconds or an HTTP date); one asking more than a minute is the caller's to wait", async () => {
    const seconds = harness([{ status: 429, retryAfter: "1" }]);
    await seconds.dl.topics.list();
    expect(seconds.retries.map((r) => r.delayMs)).toEqual([1_000]);
    expect(seconds.retries[0]!.error).toBeInstanceOf(DelaylineRateLimitError);

    const date = harness([{ status: 429, retryAfter: new Date(Date.now() - 5_000).toUTCString() }]);
    await date.dl.topics.list();
    expect(date.retries.map((r) => r.delayMs)).toEqual([0]);

    const long = harness([{ status: 429, retryAfter: "120" }]);
    const err = await long.dl.topics.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DelaylineRateLimitError);
    expect(err).toMatchObject({ status: 429, retryAfterMs: 120_000, attempts: 1 });
    expect(long.sent).toHaveLength(1);
  });

  it("gives up after the retries allowed, with the last error and how many attempts it made", async () => {
    const { dl, sent } = harness(["redis-down", "redis-down", "redis-down"], { retry: { retries: 2, backoff: () => 0 } });
    const err = await dl.stats.get().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DelaylineUnavailableError);
    expect(err).toMatchObject({ status: 503, attempts: 3, retryAfterMs: 1_000 });
    expect(sent).toHaveLength(3);
  });

  it("an attempt with no answer within timeoutMs is a DelaylineUnavailableError (status 0) and is retried", async () => {
    const { dl, sent, retries } = harness(["hang", "hang"], { timeoutMs: 50 });
    const { topics } = await dl.topics.list();
    expect(topics).toEqual([]);
    expect(sent).toHaveLength(3);
    expect(retries.map((r) => [r.error.constructor, r.error.status, r.error.problem.type])).toEqual([
      [DelaylineUnavailableError, 0, "urn:delayline:client:timeout"],
      [DelaylineUnavailableError, 0, "urn:delayline:client:timeout"],
    ]);
  });

  it("sends claim, ack, nack, ingest and keyless enqueues (idempotencyKeys: false) once: repeating them could do more than once", async () => {
    for (const call of [
      (dl: Delayline) => dl.jobs.claim("work"),
      (dl: Delayline) => dl.jobs.ack("work.01ARZ3NDEKTSV4RRFFQ69G5FAV", 1),
      (dl: Delayline) => dl.jobs.nack("work.01ARZ3NDEKTSV4RRFFQ69G5FAV", 1, { error: "x" }),
      (dl: Delayline) => dl.hooks.ingest("work", "{}", { contentType: "application/json" }),
    ]) {
      const { dl, sent } = harness(["redis-down"]);
      await expect(call(dl)).rejects.toBeInstanceOf(DelaylineUnavailableError);
      expect(sent).toHaveLength(1);
    }
    const { dl, sent } = harness(["redis-down"], { idempotencyKeys: false });
    await expect(dl.jobs.enqueue({ topic: "t" })).rejects.toMatchObject({ status: 503, attempts: 1 });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers.has("idempotency-key")).toBe(false);
  });

  it("a flow key's set, pause and delete whose answers were lost are retried: setting or removing again does no more", async () => {
    const { dl, plain, sent } = harness(["lose-answer", null, null, "lose-answer", null, "lose-answer"]);
    expect((await dl.flowKeys.set("fk", "tenant", { weight: 2 })).settings).toEqual({ weight: 2 });
    expect((await dl.flowKeys.pause("fk", "tenant")).settings).toEqual({ weight: 2, paused: true });
    expect((await plain.flowKeys.get("fk", "tenant"))!.settings).toEqual({ weight: 2, paused: true });
    // The lost attempt removed the settings; the retry finds none, so false, as for schedules.delete.
    expect(await dl.flowKeys.delete("fk", "tenant")).toBe(false);
    expect(sent.map((r) => r.method)).toEqual(["PUT", "PUT", "GET", "PUT", "PUT", "DELETE", "DELETE"]);
    expect(await plain.flowKeys.get("fk", "tenant")).toBeNull();
  });

  it("retry: false sends everything once", async () => {
    const { dl, sent } = harness(["redis-down"], { retry: false });
    await expect(dl.topics.list()).rejects.toBeInstanceOf(DelaylineUnavailableError);
    await expect(dl.jobs.enqueue({ topic: "t" })).resolves.toMatchObject({ deduplicated: false });
    expect(sent).toHaveLength(2);
    expect(sent[1]!.headers.has("idempotency-key")).toBe(false);
  });

  it("a cancel whose answer was lost succeeds on the retry that finds the job cancelled", async () => {
    const { dl, plain, sent } = harness([null, "lose-answer"]);
    const job = await dl.jobs.enqueue({ topic: "cancel-lost", delay: "1h" });
    await dl.jobs.cancel(job.id);
    expect(sent.map((r) => r.method)).toEqual(["POST", "DELETE", "DELETE", "GET"]);
    expect((await plain.jobs.get(job.id))!.state).toBe("cancelled");
    // Without a lost answer, cancelling a cancelled job is still a conflict.
    await expect(plain.jobs.cancel(job.id)).rejects.toBeInstanceOf(DelaylineConflictError);
  });
});

describe("client errors", () => {
  it("are classes per case, each a DelaylineError with the problem document", async () => {
    const { plain } = harness([]);
    const cases: Array<[() => Promise<unknown>, new (...a: never[]) => DelaylineError, number]> = [
      [
        () =>
          new Delayline({
            baseUrl: "http://delayline.test",
            token: "wrong-token-000",
            fetch: (r) => worker.fetch(r, isolatedEnv(), createExecutionContext()),
          }).topics.list(),
        DelaylineAuthError,
        401,
      ],
      [() => plain.jobs.cancel("mail.01ARZ3NDEKTSV4RRFFQ69G5FAV"), DelaylineNotFoundError, 404],
      [() => plain.jobs.enqueue({ topic: "bad topic" }), DelaylineValidationError, 422],
      [() => plain.jobs.enqueueBatch([]), DelaylineValidationError, 422],
    ];
    for (const [call, type, status] of cases) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(type);
      expect(err).toBeInstanceOf(DelaylineError);
      expect(err).toMatchObject({ status, name: type.name, problem: { status, detail: expect.any(String) } });
    }
    await plain.jobs.enqueue({ topic: "full", delay: "1h" });
    const conflict = await plain.topics.delete("full").catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(DelaylineConflictError);
    expect((conflict as DelaylineError).problem.detail).toMatch(/purge=true/);
    const invalid = (await plain.jobs.enqueue({ topic: "bad topic" }).catch((e: unknown) => e)) as DelaylineError;
    expect(invalid.problem.errors![0]!.path).toBe("topic");
  });

  it("health.get() answers in both states: a 503 from /healthz is its answer, not an error", async () => {
    const up = harness([]);
    expect(await up.dl.health.get()).toMatchObject({ ok: true, redis: "up" });
    const down = harness(["redis-down"]);
    expect(await down.dl.health.get()).toEqual({
      ok: false,
      redis: "down",
      lastTickAt: null,
      tickAgeMs: null,
      shards: [],
      partial: true,
      missingShards: ["main"],
    });
    expect(down.sent).toHaveLength(1);
  });

  it("a 2xx that is not a JSON object (a base URL that is not the Worker's) is an error naming the request, not a value", async () => {
    for (const [body, shown] of [
      ["ok", '"ok"'],
      ["<html>hello</html>", '"<html>hello</html>"'],
      ["42", '"42"'],
    ] as const) {
      const dl = new Delayline({ baseUrl: "http://not-the-worker.test", token: TOKEN, fetch: async () => new Response(body, { status: 200 }) });
      const err = (await dl.topics.get("t").catch((e: unknown) => e)) as DelaylineError;
      expect(err).toBeInstanceOf(DelaylineError);
      expect(err.problem).toMatchObject({ type: "urn:delayline:client:not-the-api", status: 0 });
      expect(err.problem.detail).toBe(
        `GET http://not-the-worker.test/v1/topics/t answered ${shown}, not a JSON object as delayline's API does: is the base URL the Worker's?`,
      );
    }
  });
});
