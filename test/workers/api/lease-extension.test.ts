/**
 * POST /v1/jobs/:id/extend: a pull consumer's lease extension through the
 * HTTP API (the client's jobs.extend: client.test.ts). Time that must pass (a lease lapsing) passes on
 * the queue's own clock: a claim on the same keys an hour ahead reaps it.
 */
import { describe, expect, it } from "vitest";
import { settings, type Env } from "../../../src/env.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { call, isolatedEnv } from "./helpers.js";

const UNKNOWN = "work.01ARZ3NDEKTSV4RRFFQ69G5FAV";

/** A pull topic "work" with one job, claimed through the API under a lease of `leaseMs`. */
async function claimedPullJob(env: Env, leaseMs: number): Promise<{ id: string; attempt: number; leaseExpiresAt: string }> {
  await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", backoff: { type: "fixed", delay: 0 } } });
  const { id } = (await call(env, "/v1/jobs", { body: { topic: "work", payload: { n: 1 } } })).body;
  const [job] = (await call(env, "/v1/topics/work/claim", { body: { max: 1, leaseMs } })).body.jobs;
  expect(job.id).toBe(id);
  return job;
}

function expectProblem(r: Awaited<ReturnType<typeof call>>, status: number, detail?: RegExp) {
  expect(r.status).toBe(status);
  expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  if (detail) expect(r.body.detail).toMatch(detail);
}

describe("POST /v1/jobs/:id/extend", () => {
  it("moves the lease to now + leaseMs: the reply, the job and the listing show the new deadline, and the ack then succeeds", async () => {
    const env = isolatedEnv();
    const job = await claimedPullJob(env, 60_000);
    const before = Date.now();
    const r = await call(env, `/v1/jobs/${job.id}/extend`, { body: { attempt: 1, leaseMs: 3_600_000 } });
    const after = Date.now();
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: job.id, attempt: 1, leaseExpiresAt: expect.any(String) });
    const deadline = Date.parse(r.body.leaseExpiresAt);
    expect(deadline).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(deadline).toBeLessThanOrEqual(after + 3_600_000);
    expect((await call(env, `/v1/jobs/${job.id}`)).body).toMatchObject({ state: "inflight", leaseExpiresAt: r.body.leaseExpiresAt });
    expect((await call(env, "/v1/topics/work/jobs?state=inflight")).body.jobs.map((j: { leaseExpiresAt: string }) => j.leaseExpiresAt)).toEqual([
      r.body.leaseExpiresAt,
    ]);
    // A minute past the first lease, a claim finds the job still leased: the first deadline no longer holds.
    const later = queueFromSettings(settings(env), { now: () => after + 120_000 });
    expect((await later.claim("work", { max: 1, leaseMs: 60_000, mode: "pull" })).jobs).toEqual([]);
    expect((await call(env, `/v1/jobs/${job.id}/ack`, { body: { attempt: 1 } })).body).toEqual({ id: job.id, state: "succeeded" });
  });

  it("409 problem+json for another attempt, an attempt reaped after its lease expired, a settled job, a job never claimed and a push topic's job", async () => {
    const env = isolatedEnv();
    const job = await claimedPullJob(env, 1_000);
    expectProblem(await call(env, `/v1/jobs/${job.id}/extend`, { body: { attempt: 2, leaseMs: 30_000 } }), 409, /attempt 2 .* is not the one leased/);

    // An hour later on the queue's clock the lease has lapsed: a claim reaps attempt 1 and takes the job as attempt 2.
    const hourLater = queueFromSettings(settings(env), { now: () => Date.now() + 3_600_000 });
    const [again] = (await hourLater.claim("work", { max: 1, leaseMs: 60_000, mode: "pull" })).jobs;
    expect(again).toMatchObject({ id: job.id, attempt: 2 });
    expectProblem(await call(env, `/v1/jobs/${job.id}/extend`, { body: { attempt: 1, leaseMs: 30_000 } }), 409, /attempt 1 .* is not the one leased/);
    expect((await call(env, `/v1/jobs/${job.id}`)).body.history.map((h: { attempt: number; outcome: string }) => [h.attempt, h.outcome])).toEqual([
      [1, "expired"],
    ]);

    expect((await call(env, `/v1/jobs/${job.id}/ack`, { body: { attempt: 2 } })).status).toBe(200);
    expectProblem(await call(env, `/v1/jobs/${job.id}/extend`, { body: { attempt: 2, leaseMs: 30_000 } }), 409);

    const waiting = (await call(env, "/v1/jobs", { body: { topic: "work", delay: "1h" } })).body.id;
    expectProblem(await call(env, `/v1/jobs/${waiting}/extend`, { body: { attempt: 1, leaseMs: 30_000 } }), 409);

    // A push topic's job, leased by a claim as the tick's is.
    const pushed = (await call(env, "/v1/jobs", { body: { topic: "pushed" } })).body.id;
    const [leased] = (await queueFromSettings(settings(env)).claim("pushed", { max: 1, leaseMs: 30_000 })).jobs;
    expect(leased!.id).toBe(pushed);
    expectProblem(await call(env, `/v1/jobs/${pushed}/extend`, { body: { attempt: 1, leaseMs: 30_000 } }), 409, /push topic/);
  });

  it("404 problem+json for an unknown job and for a shard the deployment does not have", async () => {
    const env = isolatedEnv();
    expectProblem(await call(env, `/v1/jobs/${UNKNOWN}/extend`, { body: { attempt: 1, leaseMs: 30_000 } }), 404, /no job/);
    expectProblem(await call(env, "/v1/jobs/elsewhere~work.01ARZ3NDEKTSV4RRFFQ69G5FAV/extend", { body: { attempt: 1, leaseMs: 30_000 } }), 404, /shard/);
  });

  it("422 for a bad body, answered without Redis: the same deployment with Redis down answers the good one 503", async () => {
    const down = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" });
    const bad: Array<[unknown, string]> = [
      [{ attempt: 1 }, "leaseMs"],
      [{ leaseMs: 30_000 }, "attempt"],
      [{ attempt: 0, leaseMs: 30_000 }, "attempt"],
      [{ attempt: 1.5, leaseMs: 30_000 }, "attempt"],
      [{ attempt: 1, leaseMs: 999 }, "leaseMs"],
      [{ attempt: 1, leaseMs: 3_600_001 }, "leaseMs"],
      [{ attempt: 1, leaseMs: "30s" }, "leaseMs"],
      [{ attempt: 1, leaseMs: 30_000, extra: true }, ""],
    ];
    for (const [body, path] of bad) {
      const r = await call(down, `/v1/jobs/${UNKNOWN}/extend`, { body });
      expectProblem(r, 422);
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    expectProblem(await call(down, `/v1/jobs/${UNKNOWN}/extend`, { raw: "{", headers: { "content-type": "application/json" } }), 400);
    expectProblem(await call(down, `/v1/jobs/${UNKNOWN}/extend`, { body: { attempt: 1, leaseMs: 30_000 } }), 503);
  });
});
