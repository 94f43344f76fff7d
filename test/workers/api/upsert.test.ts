import { describe, expect, it } from "vitest";
import { call, isolatedEnv } from "./helpers.js";

/** A 422 problem naming these paths. */
function refused(r: { status: number; headers: Headers; body: any }, paths: string[]) {
  expect(r.status).toBe(422);
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual(paths);
}

describe("POST /v1/jobs with a jobKey", () => {
  it("creates (201), replaces (200, the same id) and ignores; the job shows its key and replacements", async () => {
    const env = isolatedEnv();
    const upsert = (body: Record<string, unknown>) => call(env, "/v1/jobs", { body: { topic: "digest", jobKey: "user-1", ...body } });
    const created = await upsert({ payload: { n: 1 }, delay: "1m", maxWait: "5m" });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), topic: "digest", dueAt: expect.any(String), deduplicated: false, result: "created" });
    const replaced = await upsert({ payload: { n: 2 }, delay: "2m", maxWait: "5m" });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id: created.body.id, deduplicated: true, result: "replaced" });
    expect(Date.parse(replaced.body.dueAt)).toBeGreaterThan(Date.parse(created.body.dueAt));
    const ignored = await upsert({ payload: { n: 3 }, onConflict: "ignore" });
    expect(ignored.status).toBe(200);
    expect(ignored.body).toEqual({ ...replaced.body, result: "ignored" });
    const kept = await upsert({ payload: { n: 4 }, delay: "1h", onConflict: "keepDue" });
    expect(kept.body).toEqual({ ...replaced.body, result: "replaced" });
    const job = await call(env, `/v1/jobs/${created.body.id}`);
    expect(job.body).toMatchObject({ state: "scheduled", payload: { n: 4 }, dueAt: replaced.body.dueAt, jobKey: "user-1", replacements: 2 });
    // Cancelled, the key is free again: the next upsert creates.
    expect((await call(env, `/v1/jobs/${created.body.id}`, { method: "DELETE" })).status).toBe(200);
    const again = await upsert({ payload: { n: 5 } });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(created.body.id);
    expect((await call(env, "/v1/topics/digest")).body.scheduled).toBe(1);
  });

  it("refuses with 422, before Redis, a delay or runAt past maxWait and what an upsert cannot take", async () => {
    // Redis unreachable: any request that reached it would be a 503.
    const env = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" });
    const post = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      call(env, "/v1/jobs", { body: { topic: "digest", payload: 1, ...body }, headers });
    refused(await post({ jobKey: "k", delay: "6s", maxWait: "5s" }), ["delay"]);
    refused(await post({ jobKey: "k", delay: 5_001, maxWait: 5_000 }), ["delay"]);
    refused(await post({ jobKey: "k", runAt: Date.now() + 60_000, maxWait: "5s" }), ["runAt"]);
    refused(await post({ jobKey: "k", idempotencyKey: "i" }), ["idempotencyKey"]);
    refused(await post({ jobKey: "k" }, { "idempotency-key": "i" }), ["idempotency-key"]);
    refused(await post({ onConflict: "ignore" }), ["jobKey"]);
    refused(await post({ maxWait: "5s" }), ["jobKey"]);
    refused(await post({ jobKey: "" }), ["jobKey"]);
    refused(await post({ jobKey: "é".repeat(101) }), ["jobKey"]);
    refused(await post({ jobKey: "k", onConflict: "merge" }), ["onConflict"]);
    refused(await call(env, "/v1/jobs/batch", { body: { jobs: [{ topic: "t" }, { topic: "t", jobKey: "k" }] } }), ["jobs[1].jobKey"]);
    // A delay of maxWait itself is an upsert: it reaches Redis, which is down.
    expect((await post({ jobKey: "k", delay: "5s", maxWait: "5s" })).status).toBe(503);
  });
});
