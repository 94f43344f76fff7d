/**
 * Expiry over the HTTP API (issue 37): `expiresAt` or `ttl` on enqueue, batch
 * and upsert, refused with 422 (nothing stored) when it would not come after
 * the job's due time; shown by reads; a pull consumer's claim ends a job past
 * it instead of leasing it; the topic's maxLateness and keepExpired settings.
 * The tick's side is test/workers/tick/expiry.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env.js";
import { call, isolatedEnv } from "./helpers.js";

const MIN = 60_000;

async function ok(res: Promise<{ status: number; body: any }>, status = 200) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

const enqueue = (env: Env, body: Record<string, unknown>) => call(env, "/v1/jobs", { body: { topic: "ttl", payload: 1, ...body } });

describe("expiresAt and ttl", () => {
  it("are stored and shown: GET /v1/jobs/:id, the listing of scheduled jobs; ttl counts from the enqueue", async () => {
    const env = isolatedEnv();
    const at = Date.now() + 10 * MIN;
    const a = await ok(enqueue(env, { delay: "1m", expiresAt: new Date(at).toISOString() }), 201);
    const before = Date.now();
    const b = await ok(enqueue(env, { delay: "1m", ttl: "5m" }), 201);
    const after = Date.now();
    expect((await ok(call(env, `/v1/jobs/${a.id}`))).expiresAt).toBe(new Date(at).toISOString());
    const bAt = Date.parse((await ok(call(env, `/v1/jobs/${b.id}`))).expiresAt);
    expect(bAt).toBeGreaterThanOrEqual(before + 5 * MIN);
    expect(bAt).toBeLessThanOrEqual(after + 5 * MIN);
    for (const query of ["", "&payload=true"]) {
      const listed = await ok(call(env, `/v1/topics/ttl/jobs?state=scheduled${query}`));
      expect(listed.jobs.map((j: { expiresAt?: string }) => j.expiresAt)).toEqual([new Date(at).toISOString(), new Date(bAt).toISOString()]);
    }
    // A job without one shows none.
    const c = await ok(enqueue(env, {}), 201);
    expect(await ok(call(env, `/v1/jobs/${c.id}`))).not.toHaveProperty("expiresAt");
  });

  it("an expiry at or before the job's due time, or both fields, is 422 and stores nothing (batches whole)", async () => {
    const env = isolatedEnv();
    const now = Date.now();
    const refused = [
      { delay: "1h", ttl: "30m" },
      { runAt: now + 2 * MIN, expiresAt: now + MIN },
      { runAt: now + MIN, expiresAt: now + MIN },
      { expiresAt: now - MIN },
      { ttl: "1m", expiresAt: now + 2 * MIN },
    ];
    for (const body of refused) {
      const r = await enqueue(env, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.headers.get("content-type")).toContain("application/problem+json");
    }
    const batch = await call(env, "/v1/jobs/batch", {
      body: {
        jobs: [
          { topic: "ttl", payload: 1, ttl: "1m" },
          { topic: "ttl", payload: 2, delay: "2m", ttl: "1m" },
        ],
      },
    });
    expect(batch.status).toBe(422);
    expect(batch.body.errors).toEqual([expect.objectContaining({ path: "jobs[1].ttl" })]);
    const upsert = await call(env, "/v1/jobs", { body: { topic: "ttl", jobKey: "k", payload: 1, delay: "1h", ttl: "1m" } });
    expect(upsert.status).toBe(422);
    // Nothing reached Redis: the topic was never registered.
    expect((await ok(call(env, "/v1/topics"))).total).toBe(0);
  });

  it("an upsert that replaces the key's pending job gives it the new expiry, or none", async () => {
    const env = isolatedEnv();
    const upsert = (body: Record<string, unknown>, status = 200) =>
      ok(call(env, "/v1/jobs", { body: { topic: "ttl", jobKey: "k", payload: 1, delay: "1m", ...body } }), status);
    const made = await upsert({ ttl: "10m" }, 201);
    const first = (await ok(call(env, `/v1/jobs/${made.id}`))).expiresAt;
    expect(first).toBeTypeOf("string");
    const later = new Date(Date.now() + 60 * MIN).toISOString();
    expect(await upsert({ expiresAt: later })).toMatchObject({ id: made.id, result: "replaced" });
    expect((await ok(call(env, `/v1/jobs/${made.id}`))).expiresAt).toBe(later);
    await upsert({});
    expect(await ok(call(env, `/v1/jobs/${made.id}`))).not.toHaveProperty("expiresAt");
  });
});

describe("a pull topic", () => {
  it("a claim over HTTP ends the jobs past their expiresAt or maxLateness instead of leasing them; the rest it leases", async () => {
    const env = isolatedEnv();
    await ok(call(env, "/v1/topics/pulled", { method: "PUT", body: { mode: "pull", maxLateness: 60 * MIN } }));
    // One expires 2 s on (an expiry must come after the due time, so the API stores none already past), one an hour on.
    const expiresAt = Date.now() + 2_000;
    const soon = await ok(call(env, "/v1/jobs", { body: { topic: "pulled", payload: "soon", expiresAt } }), 201);
    const later = await ok(call(env, "/v1/jobs", { body: { topic: "pulled", payload: "later", ttl: "1h" } }), 201);
    while (Date.now() <= expiresAt) await new Promise((r) => setTimeout(r, expiresAt + 1 - Date.now()));
    const claimed = await ok(call(env, "/v1/topics/pulled/claim", { body: { max: 10 } }));
    expect(claimed.jobs.map((j: { id: string }) => j.id)).toEqual([later.id]);
    expect(await ok(call(env, `/v1/jobs/${soon.id}`))).toMatchObject({ state: "expired", attempts: 0 });
    const view = await ok(call(env, "/v1/topics/pulled"));
    expect(view.counters).toMatchObject({ expired: 1, dispatched: 1 });
    expect(view.settings).toMatchObject({ mode: "pull", maxLateness: 60 * MIN, keepExpired: false });
  });
});

describe("topic settings", () => {
  it("maxLateness takes ms or a duration and null clears it; keepExpired is a boolean; bad values are 422", async () => {
    const env = isolatedEnv();
    expect((await ok(call(env, "/v1/topics/s", { method: "PUT", body: { maxLateness: "2s", keepExpired: true } }))).settings).toMatchObject({
      maxLateness: 2_000,
      keepExpired: true,
    });
    const cleared = (await ok(call(env, "/v1/topics/s", { method: "PUT", body: { maxLateness: null, keepExpired: null } }))).settings;
    expect(cleared).not.toHaveProperty("maxLateness");
    expect(cleared.keepExpired).toBe(false);
    for (const body of [{ maxLateness: -1 }, { maxLateness: "soon" }, { keepExpired: "yes" }]) {
      expect((await call(env, "/v1/topics/s", { method: "PUT", body })).status, JSON.stringify(body)).toBe(422);
    }
  });
});
