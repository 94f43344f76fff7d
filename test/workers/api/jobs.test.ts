import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env.js";
import { call, isolatedEnv } from "./helpers.js";

const isProblem = (r: { headers: Headers; body: any }, status: number) => {
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  expect(r.body).toMatchObject({ status, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
};

describe("POST /v1/jobs", () => {
  it("enqueues with a delay, with runAt, and a past runAt means now", async () => {
    const env = isolatedEnv();
    const before = Date.now();
    const a = await call(env, "/v1/jobs", { body: { topic: "mail", payload: { to: "ada" }, delay: "90s" } });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ id: expect.stringMatching(/^mail\.[0-9A-Z]{26}$/), topic: "mail", deduplicated: false });
    expect(Date.parse(a.body.dueAt) - before).toBeGreaterThanOrEqual(90_000);
    const b = await call(env, "/v1/jobs", { body: { topic: "mail", runAt: "2099-01-01T09:00:00Z" } });
    expect(b.body.dueAt).toBe("2099-01-01T09:00:00.000Z");
    const c = await call(env, "/v1/jobs", { body: { topic: "mail", runAt: 1_000 } });
    expect(Date.parse(c.body.dueAt)).toBeGreaterThanOrEqual(before);
  });

  it("deduplicates by idempotencyKey or the Idempotency-Key header", async () => {
    const env = isolatedEnv();
    const first = await call(env, "/v1/jobs", { body: { topic: "pay", payload: 1 }, headers: { "idempotency-key": "order-7" } });
    const again = await call(env, "/v1/jobs", { body: { topic: "pay", payload: 2, idempotencyKey: "order-7" } });
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, deduplicated: true });
  });

  it("a repeat answers the stored job's due time, not its own, and null once the job is in flight (found by npm run chaos)", async () => {
    const env = isolatedEnv();
    const first = await call(env, "/v1/jobs", { body: { topic: "pay", delay: "1h", idempotencyKey: "k" } });
    const again = await call(env, "/v1/jobs", { body: { topic: "pay", delay: "2h", idempotencyKey: "k" } });
    expect(again.body).toEqual({ id: first.body.id, topic: "pay", dueAt: first.body.dueAt, deduplicated: true });
    await call(env, "/v1/topics/pulled", { method: "PUT", body: { mode: "pull" } });
    const pulled = await call(env, "/v1/jobs", { body: { topic: "pulled", idempotencyKey: "k" } });
    await call(env, "/v1/topics/pulled/claim", { body: { max: 1 } });
    const late = await call(env, "/v1/jobs", { body: { topic: "pulled", idempotencyKey: "k" } });
    expect(late.body).toEqual({ id: pulled.body.id, topic: "pulled", dueAt: null, deduplicated: true });
  });

  it.each([
    [{ payload: 1 }, "topic"],
    [{ topic: "bad topic!" }, "topic"],
    [{ topic: "x".repeat(65) }, "topic"],
    [{ topic: "t", delay: "90s", runAt: 5 }, "runAt"],
    [{ topic: "t", delay: "366d" }, "delay"],
    [{ topic: "t", delay: "soon" }, "delay"],
    [{ topic: "t", runAt: "yesterday" }, "runAt"],
    [{ topic: "t", maxAttempts: 0 }, "maxAttempts"],
    [{ topic: "t", maxAttempts: 101 }, "maxAttempts"],
    [{ topic: "t", backoff: { type: "linear" } }, "backoff"],
    [{ topic: "t", backoff: { type: "schedule", delays: [] } }, "backoff.delays"],
    [{ topic: "t", idempotencyKey: "k".repeat(201) }, "idempotencyKey"],
    [{ topic: "t", target: { url: "ftp://x" } }, "target.url"],
    [{ topic: "t", target: { url: "https://x", headers: { "bad header": "v" } } }, "target.headers"],
    [{ topic: "t", timeoutMs: 1 }, "timeoutMs"],
    [{ topic: "t", surprise: true }, ""],
  ])("422 for %j naming %s", async (body, path) => {
    const r = await call(isolatedEnv(), "/v1/jobs", { body });
    expect(r.status).toBe(422);
    isProblem(r, 422);
    const paths: string[] = r.body.errors.map((e: { path: string }) => e.path);
    expect(
      paths.some((p) => p === path || p.startsWith(`${path}.`)),
      paths.join(", "),
    ).toBe(true);
  });

  it("400 for malformed JSON, invalid UTF-8 and absurd nesting; 415 for other types; 413 for big bodies and payloads", async () => {
    const env = isolatedEnv({ MAX_PAYLOAD_BYTES: "1000", MAX_BODY_BYTES: "4096" });
    const headers = { "content-type": "application/json" };
    isProblem(await call(env, "/v1/jobs", { raw: '{"topic": ', headers }), 400);
    isProblem(await call(env, "/v1/jobs", { raw: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d]), headers }), 400);
    isProblem(await call(env, "/v1/jobs", { raw: "[".repeat(100) + "]".repeat(100), headers }), 400);
    isProblem(await call(env, "/v1/jobs", { raw: "topic=x", headers: { "content-type": "application/x-www-form-urlencoded" } }), 415);
    isProblem(await call(env, "/v1/jobs", { raw: "x".repeat(10_000), headers }), 413);
    isProblem(await call(env, "/v1/jobs", { body: { topic: "t", payload: "y".repeat(2_000) } }), 413);
    // Counted in UTF-8 bytes as serialized: 500 two-byte characters are 1,002 bytes, 400 of them 802.
    isProblem(await call(env, "/v1/jobs", { body: { topic: "t", payload: "é".repeat(500) } }), 413);
    expect((await call(env, "/v1/jobs", { body: { topic: "t", payload: "é".repeat(400) } })).status).toBe(201);
  });

  it("401 with WWW-Authenticate without a token or with a wrong one; several tokens rotate", async () => {
    const env = isolatedEnv({ DELAYLINE_TOKEN: "old-token-123456, new-token-654321" });
    for (const token of [null, "nope-nope-nope"]) {
      const r = await call(env, "/v1/jobs", { body: { topic: "t" }, token });
      isProblem(r, 401);
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
    expect((await call(env, "/v1/jobs", { body: { topic: "t" }, token: "old-token-123456" })).status).toBe(201);
    expect((await call(env, "/v1/jobs", { body: { topic: "t" }, token: "new-token-654321" })).status).toBe(201);
  });
});

describe("POST /v1/jobs/batch", () => {
  it("enqueues all in order", async () => {
    const env = isolatedEnv();
    const r = await call(env, "/v1/jobs/batch", {
      body: {
        jobs: [
          { topic: "a", payload: 1 },
          { topic: "b", payload: 2, delay: 1000 },
        ],
      },
    });
    expect(r.status).toBe(201);
    expect(r.body.jobs.map((j: { topic: string }) => j.topic)).toEqual(["a", "b"]);
  });

  it("is all or nothing: one bad job rejects the batch and stores nothing", async () => {
    const env = isolatedEnv();
    const r = await call(env, "/v1/jobs/batch", { body: { jobs: [{ topic: "ok", payload: 1 }, { topic: "bad topic" }] } });
    expect(r.status).toBe(422);
    expect(r.body.errors[0].path).toBe("jobs[1].topic");
    expect((await call(env, "/v1/topics/ok")).body.scheduled).toBe(0);
    expect((await call(env, "/v1/jobs/batch", { body: { jobs: [] } })).status).toBe(422);
    expect((await call(env, "/v1/jobs/batch", { body: { jobs: Array.from({ length: 1_001 }, () => ({ topic: "t" })) } })).status).toBe(422);
  });
});

describe("GET, DELETE, PATCH /v1/jobs/:id", () => {
  it("reads, reschedules and cancels a scheduled job", async () => {
    const env = isolatedEnv();
    const { body: created } = await call(env, "/v1/jobs", { body: { topic: "c", payload: { x: 1 }, delay: "1h", maxAttempts: 3 } });
    const got = await call(env, `/v1/jobs/${created.id}`);
    expect(got.body).toMatchObject({ id: created.id, topic: "c", state: "scheduled", attempts: 0, maxAttempts: 3, lastError: null, payload: { x: 1 } });
    const patched = await call(env, `/v1/jobs/${created.id}`, { method: "PATCH", body: { runAt: "2099-06-01T00:00:00Z" } });
    expect(patched.body).toEqual({ id: created.id, dueAt: "2099-06-01T00:00:00.000Z" });
    expect((await call(env, `/v1/jobs/${created.id}`, { method: "PATCH", body: { delay: "1m", runAt: 5 } })).status).toBe(422);
    expect((await call(env, `/v1/jobs/${created.id}`, { method: "DELETE" })).body).toEqual({ id: created.id, state: "cancelled" });
    expect((await call(env, `/v1/jobs/${created.id}`)).body.state).toBe("cancelled");
    isProblem(await call(env, `/v1/jobs/${created.id}`, { method: "DELETE" }), 409);
    isProblem(await call(env, `/v1/jobs/${created.id}`, { method: "PATCH", body: { delay: "5s" } }), 409);
  });

  it("404 for unknown ids, 409 for jobs in flight", async () => {
    const env = isolatedEnv();
    isProblem(await call(env, "/v1/jobs/c.01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404);
    isProblem(await call(env, "/v1/jobs/whatever", { method: "DELETE" }), 404);
    await call(env, "/v1/topics/p", { method: "PUT", body: { mode: "pull" } });
    const { body: job } = await call(env, "/v1/jobs", { body: { topic: "p" } });
    await call(env, "/v1/topics/p/claim", { body: { max: 1 } });
    isProblem(await call(env, `/v1/jobs/${job.id}`, { method: "DELETE" }), 409);
    isProblem(await call(env, `/v1/jobs/${job.id}`, { method: "PATCH", body: { delay: 0 } }), 409);
    expect((await call(env, `/v1/jobs/${job.id}`)).body.state).toBe("inflight");
  });
});

describe("errors at the edge", () => {
  it("405 with Allow for a known path and the wrong method; 404 otherwise", async () => {
    const env = isolatedEnv();
    const r = await call(env, "/v1/jobs", { method: "GET" });
    isProblem(r, 405);
    expect(r.headers.get("allow")).toBe("POST");
    isProblem(await call(env, "/v1/nothing-here"), 404);
  });

  it("503 problem+json when Redis is unreachable, and nothing is acknowledged", async () => {
    const env = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" });
    const r = await call(env, "/v1/jobs", { body: { topic: "t", payload: 1 } });
    isProblem(r, 503);
    expect(r.headers.get("retry-after")).toBe("1");
    // Bad input is refused before Redis is touched: still a 4xx during an outage.
    expect((await call(env, "/v1/jobs", { body: { topic: "bad topic" } })).status).toBe(422);
  });

  it("an isolate serving deployments with other Redis settings and tokens keeps each one's apart", async () => {
    // Writes share one Redis client per isolate and token digests are kept:
    // both must follow the settings of the request at hand.
    const env = isolatedEnv();
    const down = { ...env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" };
    const rotated = { ...env, DELAYLINE_TOKEN: "another-token-0123456789" };
    const enqueue = (e: Env, token?: string) => call(e, "/v1/jobs", { body: { topic: "iso", payload: 1, delay: "1h" }, ...(token ? { token } : {}) });
    expect((await enqueue(env)).status).toBe(201);
    isProblem(await enqueue(down), 503);
    expect((await enqueue(env)).status).toBe(201);
    isProblem(await enqueue(rotated), 401);
    expect((await enqueue(rotated, "another-token-0123456789")).status).toBe(201);
    expect((await enqueue(env)).status).toBe(201);
    expect((await enqueue(env, "another-token-0123456789")).status).toBe(401);
    expect((await call(env, "/v1/topics/iso")).body.scheduled).toBe(4);
  });
});
