import { describe, expect, it } from "vitest";
import { call, isolatedEnv } from "./helpers.js";

describe("GET /v1/topics/:topic/jobs", () => {
  it("pages scheduled jobs in due order with nextCursor, within a due window, with payloads when asked", async () => {
    const env = isolatedEnv();
    const runAt = (s: number) => new Date(Date.UTC(2099, 0, 1, 0, 0, s)).toISOString();
    const jobs = Array.from({ length: 9 }, (_, i) => ({ topic: "mail", payload: { i }, runAt: runAt(8 - i) }));
    const ids: string[] = (await call(env, "/v1/jobs/batch", { body: { jobs } })).body.jobs.map((j: { id: string }) => j.id);
    const inDueOrder = [...ids].reverse();

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await call(env, `/v1/topics/mail/jobs?limit=4${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.jobs.map((j: { id: string }) => j.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(inDueOrder);
    expect(pages).toBe(3);

    const first = await call(env, "/v1/topics/mail/jobs?limit=1");
    expect(first.body.jobs).toEqual([{ id: inDueOrder[0], state: "scheduled", dueAt: runAt(0), attempts: 0, lastError: null, createdAt: expect.any(String) }]);
    expect(Date.parse(first.body.jobs[0].createdAt)).toBeLessThanOrEqual(Date.now());

    const window = await call(env, `/v1/topics/mail/jobs?from=${runAt(2)}&to=${Date.parse(runAt(4))}&payload=true`);
    expect(window.body.jobs.map((j: { payload: { i: number } }) => j.payload.i)).toEqual([6, 5, 4]);
    expect(window.body.nextCursor).toBeNull();
  });

  it("lists jobs in flight with their lease deadline and attempt", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull" } });
    const { id } = (await call(env, "/v1/jobs", { body: { topic: "work", payload: 1 } })).body;
    const claimed = (await call(env, "/v1/topics/work/claim", { body: { max: 1, leaseMs: 60_000 } })).body.jobs[0];
    const res = await call(env, "/v1/topics/work/jobs?state=inflight");
    expect(res.body).toEqual({
      jobs: [
        { id, state: "inflight", dueAt: claimed.dueAt, attempts: 1, lastError: null, createdAt: expect.any(String), leaseExpiresAt: claimed.leaseExpiresAt },
      ],
      nextCursor: null,
    });
    expect((await call(env, "/v1/topics/work/jobs")).body.jobs).toEqual([]);
  });

  it("refuses bad input with 422 before reaching Redis", async () => {
    const env = isolatedEnv();
    const ids: string[] = (await call(env, "/v1/jobs/batch", { body: { jobs: [1, 2, 3].map(() => ({ topic: "a", delay: "1h" })) } })).body.jobs.map(
      (j: { id: string }) => j.id,
    );
    await call(env, "/v1/jobs", { body: { topic: "b", delay: "1h" } });
    const scheduledCursor = (await call(env, "/v1/topics/a/jobs?limit=1")).body.nextCursor as string;
    expect(scheduledCursor).toEqual(expect.any(String));
    expect((await call(env, `/v1/topics/a/jobs?limit=1&cursor=${scheduledCursor}`)).body.jobs[0].id).toBe(ids[1]);

    // Nothing listens on port 9: a request that reached Redis would be a 503.
    const offline = isolatedEnv({ DELAYLINE_PREFIX: env.DELAYLINE_PREFIX, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" });
    const cases: Array<[string, string]> = [
      ["/v1/topics/a/jobs?state=succeeded", "state"],
      ["/v1/topics/a/jobs?limit=0", "limit"],
      ["/v1/topics/a/jobs?limit=1001", "limit"],
      ["/v1/topics/a/jobs?from=yesterday", "from"],
      ["/v1/topics/a/jobs?from=2099-01-02T00:00:00Z&to=2099-01-01T00:00:00Z", "to"],
      ["/v1/topics/a/jobs?payload=yes", "payload"],
      ["/v1/topics/a/jobs?cursor=not-a-cursor", "cursor"],
      [`/v1/topics/a/jobs?state=inflight&cursor=${scheduledCursor}`, "cursor"],
      [`/v1/topics/b/jobs?cursor=${scheduledCursor}`, "cursor"],
    ];
    for (const [path, field] of cases) {
      const res = await call(offline, path);
      expect(res.status, path).toBe(422);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(
        res.body.errors.map((e: { path: string }) => e.path),
        path,
      ).toContain(field);
    }
    expect((await call(offline, "/v1/topics/a/jobs")).status).toBe(503);
  });
});

describe("POST /v1/topics/:topic/jobs/cancel", () => {
  it("cancels a due window call by call through the cursor, all scheduled jobs with all: true, or given ids", async () => {
    const env = isolatedEnv();
    const at = (s: number) => Date.UTC(2099, 0, 1, 0, 0, s);
    const jobs = Array.from({ length: 1_000 }, (_, i) => ({ topic: "t", runAt: at(i % 10) }));
    const ids: string[] = (await call(env, "/v1/jobs/batch", { body: { jobs } })).body.jobs.map((j: { id: string }) => j.id);
    await call(env, "/v1/jobs/batch", { body: { jobs } });

    // Due at seconds 2 to 6: 5 of every 10 jobs of both batches, 1,000 jobs.
    let cancelled = 0;
    let calls = 0;
    let cursor: string | null = null;
    do {
      const res: Awaited<ReturnType<typeof call>> = await call(env, "/v1/topics/t/jobs/cancel", {
        body: { dueFrom: new Date(at(2)).toISOString(), dueTo: at(6), ...(cursor ? { cursor } : {}) },
      });
      expect(res.status).toBe(200);
      cancelled += res.body.cancelled;
      cursor = res.body.nextCursor;
      calls++;
    } while (cursor);
    expect(cancelled).toBe(1_000);
    expect(calls).toBeGreaterThan(1);
    const left = (await call(env, "/v1/topics/t/jobs?limit=1000")).body.jobs as Array<{ dueAt: string }>;
    expect(left).toHaveLength(1_000);
    expect(left.every((j) => Date.parse(j.dueAt) < at(2) || Date.parse(j.dueAt) > at(6))).toBe(true);
    expect((await call(env, `/v1/jobs/${ids[2]}`)).body.state).toBe("cancelled");

    const byIds = await call(env, "/v1/topics/t/jobs/cancel", { body: { ids: [ids[0], ids[2], "t.01ARZ3NDEKTSV4RRFFQ69G5FAV"] } });
    expect(byIds.body).toEqual({ cancelled: 1, inflight: 0, notScheduled: 2, nextCursor: null });

    let all = 0;
    cursor = null;
    do {
      const res: Awaited<ReturnType<typeof call>> = await call(env, "/v1/topics/t/jobs/cancel", { body: { all: true, ...(cursor ? { cursor } : {}) } });
      all += res.body.cancelled;
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(all).toBe(999);
    expect((await call(env, "/v1/topics/t")).body.scheduled).toBe(0);
  });

  it("refuses bad input with 422 before reaching Redis", async () => {
    const offline = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" });
    const id = "t.01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const cases: Array<[unknown, string]> = [
      [{}, "ids"],
      [{ ids: [id], all: true }, "ids"],
      [{ ids: [id], dueTo: 5 }, "ids"],
      [{ all: false }, "all"],
      [{ ids: [] }, "ids"],
      [{ ids: Array.from({ length: 1_001 }, () => id) }, "ids"],
      [{ ids: [id], cursor: "x" }, "cursor"],
      [{ ids: ["other.01ARZ3NDEKTSV4RRFFQ69G5FAV"] }, "ids[0]"],
      [{ dueFrom: 10, dueTo: 5 }, "dueTo"],
      [{ all: true, cursor: "not-a-cursor" }, "cursor"],
      [{ all: true, limit: 5 }, ""],
    ];
    for (const [body, field] of cases) {
      const res = await call(offline, "/v1/topics/t/jobs/cancel", { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(
        res.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(field);
    }
    expect((await call(offline, "/v1/topics/t/jobs/cancel", { body: { all: true } })).status).toBe(503);
  });
});
