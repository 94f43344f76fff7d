import { createExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { Delayline } from "../../../src/client/index.js";
import worker from "../../../app/worker.js";
import { settings, type Env } from "../../../src/env.js";
import { tickOnce } from "../fixtures.js";
import { call, isolatedEnv, TOKEN } from "./helpers.js";

/** A pull topic `work` with `n` dead letters; the i-th failed with `error(i)`. Returns their ids in the order they died. */
async function deadLetters(env: Env, n: number, error: (i: number) => string): Promise<string[]> {
  await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
  const ids: string[] = (
    await call(env, "/v1/jobs/batch", { body: { jobs: Array.from({ length: n }, (_, i) => ({ topic: "work", payload: { i } })) } })
  ).body.jobs.map((j: { id: string }) => j.id);
  const claimed = (await call(env, "/v1/topics/work/claim", { body: { max: 100 } })).body.jobs as Array<{ id: string }>;
  expect(claimed).toHaveLength(n);
  for (const [i, id] of ids.entries()) await call(env, `/v1/jobs/${id}/nack`, { body: { attempt: 1, error: error(i) } });
  return ids;
}

describe("dead letters over HTTP", () => {
  it("DELETE /v1/topics/:topic/dead/:id drops one letter; a second time, or another's, is 404", async () => {
    const env = isolatedEnv();
    const [a, b] = await deadLetters(env, 2, () => "boom");
    expect((await call(env, `/v1/topics/work/dead/${a}`, { method: "DELETE" })).body).toEqual({ id: a, deleted: true });
    const again = await call(env, `/v1/topics/work/dead/${a}`, { method: "DELETE" });
    expect(again.status).toBe(404);
    expect(again.headers.get("content-type")).toBe("application/problem+json");
    expect((await call(env, `/v1/topics/other/dead/${b}`, { method: "DELETE" })).status).toBe(404);
    expect((await call(env, "/v1/topics/work/dead")).body.entries.map((e: { id: string }) => e.id)).toEqual([b]);
    expect((await call(env, "/v1/topics/work")).body.dead).toBe(1);
  });

  it("replays those whose error holds a text, and purges by error text, through cursors; the dead letters are listed as state=dead too", async () => {
    const env = isolatedEnv();
    const ids = await deadLetters(env, 6, (i) => (i % 2 === 0 ? "HTTP 503: busy" : "HTTP 400: bad"));
    const listed = await call(env, "/v1/topics/work/jobs?state=dead&payload=true");
    expect(listed.body.jobs.map((j: { id: string }) => j.id)).toEqual([...ids].reverse());
    expect(listed.body.jobs[0]).toMatchObject({
      state: "dead",
      dueAt: null,
      attempts: 1,
      lastError: "HTTP 400: bad",
      failedAt: expect.any(String),
      payload: { i: 5 },
    });

    const replay = await call(env, "/v1/topics/work/dead/replay", { body: { error: "503", spread: "10m" } });
    expect(replay.body).toEqual({ replayed: 3, notFound: [], nextCursor: null });
    for (const id of [ids[0], ids[2], ids[4]]) {
      const job = (await call(env, `/v1/jobs/${id}`)).body;
      expect(job.state).toBe("scheduled");
      expect(Date.parse(job.dueAt) - Date.now()).toBeLessThanOrEqual(600_000);
      expect(job.history.map((h: { outcome: string }) => h.outcome)).toEqual(["dead", "replayed"]);
    }
    expect((await call(env, "/v1/topics/work/dead?error=400", { method: "DELETE" })).body).toEqual({ purged: 3, nextCursor: null });
    expect((await call(env, "/v1/topics/work")).body.dead).toBe(0);
  });

  it("the client's deadLetters.replay and purge go through every cursor; deadLetters.delete", async () => {
    const env = isolatedEnv();
    const dl = new Delayline({ baseUrl: "http://delayline.test", token: TOKEN, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
    const ids = await deadLetters(env, 4, (i) => `failure ${i}`);
    expect(await dl.deadLetters.delete("work", ids[0]!)).toBe(true);
    expect(await dl.deadLetters.delete("work", ids[0]!)).toBe(false);
    const page = await dl.deadLetters.list("work", { limit: 2 });
    expect(page.entries.map((e) => e.id)).toEqual([ids[3], ids[2]]);
    expect(page.entries[0]!.history).toEqual([expect.objectContaining({ attempt: 1, outcome: "dead", error: "failure 3" })]);
    expect((await dl.deadLetters.list("work", { cursor: page.nextCursor! })).entries.map((e) => e.id)).toEqual([ids[1]]);
    expect(await dl.deadLetters.replay("work", { failedFrom: Date.now() - 60_000, error: "failure 1" })).toEqual({ replayed: 1, notFound: [] });
    expect(await dl.deadLetters.purge("work", { error: "failure" })).toBe(2);
    expect(await dl.deadLetters.replay("work", { all: true })).toEqual({ replayed: 0, notFound: [] });
  });

  it("refuses bad input with 422 before reaching Redis", async () => {
    const offline = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" });
    const id = "work.01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const replays: Array<[unknown, string]> = [
      [{}, "ids"],
      [{ ids: [id], all: true }, "ids"],
      [{ all: true, error: "x" }, "ids"],
      [{ ids: [id], cursor: "x" }, "cursor"],
      [{ failedFrom: 10, failedTo: 5 }, "failedTo"],
      [{ error: "" }, "error"],
      [{ all: true, spread: "soon" }, "spread"],
      [{ all: true, cursor: "not-a-cursor" }, "cursor"],
    ];
    for (const [body, field] of replays) {
      const res = await call(offline, "/v1/topics/work/dead/replay", { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(
        res.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(field);
    }
    for (const [path, field] of [
      ["/v1/topics/work/dead?failedFrom=yesterday", "failedFrom"],
      ["/v1/topics/work/dead?failedFrom=10&failedTo=5", "failedTo"],
      ["/v1/topics/work/dead?cursor=abc", "cursor"],
    ] as const) {
      for (const method of ["GET", "DELETE"]) {
        const res = await call(offline, path, { method });
        expect(res.status, `${method} ${path}`).toBe(422);
        expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
      }
    }
    expect((await call(offline, "/v1/topics/work/dead/not-an-id", { method: "DELETE" })).status).toBe(404);
    expect((await call(offline, `/v1/topics/work/dead/${id}`, { method: "DELETE" })).status).toBe(503);
  });
});

describe("attempt history across a replay", () => {
  /** Ticks until the job is in `state` (bounded: a slow machine only waits longer). */
  async function tickUntil(env: Env, id: string, state: string): Promise<void> {
    for (let i = 0; i < 30; i++) {
      await tickOnce(settings(env), { scheduledTime: Date.now(), windowMs: 500 });
      if ((await call(env, `/v1/jobs/${id}`)).body.state === state) return;
    }
    throw new Error(`job ${id} never reached ${state}`);
  }

  it("attempts count per run; the replay is a marker opening run 2, and each entry names its run (GET /v1/jobs/:id)", async () => {
    const env = isolatedEnv();
    const url = `${inject("receiverUrl")}/replay-history-${crypto.randomUUID()}/status/500`;
    expect((await call(env, "/v1/topics/flaky", { method: "PUT", body: { url, maxAttempts: 3, backoff: { type: "fixed", delay: 0 } } })).status).toBe(200);
    const { id } = (await call(env, "/v1/jobs", { body: { topic: "flaky", payload: { n: 1 } } })).body;
    await tickUntil(env, id, "dead");
    const beforeReplay = Date.now();
    expect((await call(env, "/v1/topics/flaky/dead/replay", { body: { ids: [id] } })).body).toEqual({ replayed: 1, notFound: [], nextCursor: null });
    const replayed = (await call(env, `/v1/jobs/${id}`)).body;
    expect(replayed).toMatchObject({ state: "scheduled", attempts: 0 });
    await tickUntil(env, id, "dead");

    const job = (await call(env, `/v1/jobs/${id}`)).body;
    expect(job).toMatchObject({ state: "dead", attempts: 3 });
    const rows = job.history.map((h: { attempt: number; run: number; outcome: string; httpStatus?: number }) => [
      h.run,
      h.attempt,
      h.outcome,
      h.httpStatus ?? null,
    ]);
    expect(rows).toEqual([
      [1, 1, "retry", 500],
      [1, 2, "retry", 500],
      [1, 3, "dead", 500],
      [2, 0, "replayed", null],
      [2, 1, "retry", 500],
      [2, 2, "retry", 500],
      [2, 3, "dead", 500],
    ]);
    // The marker says when: after the first run ended, before the second began.
    const [firstDead, marker, secondFirst] = [job.history[2], job.history[3], job.history[4]];
    expect(Date.parse(marker.startedAt)).toBeGreaterThanOrEqual(beforeReplay);
    expect(Date.parse(marker.startedAt)).toBeGreaterThanOrEqual(Date.parse(firstDead.startedAt));
    expect(Date.parse(secondFirst.startedAt)).toBeGreaterThanOrEqual(Date.parse(marker.startedAt));
    // The dead letter shows the same history.
    const letter = (await call(env, "/v1/topics/flaky/dead")).body.entries[0];
    expect(letter.history.map((h: { run: number; outcome: string }) => `${h.run}:${h.outcome}`)).toEqual(rows.map((r: unknown[]) => `${r[0]}:${r[2]}`));
  });
});
