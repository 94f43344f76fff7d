/**
 * A dead-letter replay with edits over HTTP: a new payload, target or
 * webhook headers for each replayed job, written while it is still dead
 * (an "edited" marker in its history), then delivered as changed; a replay
 * into another topic, where each letter becomes a new job and leaves the
 * old topic's dead letters as "moved"; and bad edits refused as an enqueue
 * refuses them, before anything reaches Redis.
 */
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../../app/worker.js";
import { Delayline } from "../../../src/client/index.js";
import { settings, type Env } from "../../../src/env.js";
import { tickOnce } from "../fixtures.js";
import { call, deliveries, isolatedEnv, TOKEN } from "./helpers.js";

const receiver = () => inject("receiverUrl");

/** Ticks until the job is in `state` (bounded: a slow machine only waits longer). */
async function tickUntil(env: Env, id: string, state: string): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await tickOnce(settings(env), { scheduledTime: Date.now(), windowMs: 500 });
    if ((await call(env, `/v1/jobs/${id}`)).body.state === state) return;
  }
  throw new Error(`job ${id} never reached ${state}`);
}

/** A pull topic `work` with `n` dead letters, the i-th failed with `error(i)`; their ids. */
async function deadLetters(env: Env, n: number, error: (i: number) => string = () => "boom"): Promise<string[]> {
  await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
  const jobs = Array.from({ length: n }, (_, i) => ({ topic: "work", payload: { i }, flowKey: "tenant-1", maxAttempts: 4 }));
  const ids: string[] = (await call(env, "/v1/jobs/batch", { body: { jobs } })).body.jobs.map((j: { id: string }) => j.id);
  expect((await call(env, "/v1/topics/work/claim", { body: { max: 100 } })).body.jobs).toHaveLength(n);
  for (const [i, id] of ids.entries()) await call(env, `/v1/jobs/${id}/nack`, { body: { attempt: 1, error: error(i), permanent: true } });
  return ids;
}

const outcomes = (job: { history: Array<{ outcome: string }> }) => job.history.map((h) => h.outcome);

describe("a replay with edits", () => {
  it("delivers the new payload to the new target; the history says what changed and when", async () => {
    const env = isolatedEnv();
    const path = `/replay-edits-${crypto.randomUUID()}`;
    await call(env, "/v1/topics/hooks", { method: "PUT", body: { url: `${receiver()}${path}/old/status/500`, maxAttempts: 1 } });
    const { id } = (await call(env, "/v1/jobs", { body: { topic: "hooks", payload: { v: 1 } } })).body;
    await tickUntil(env, id, "dead");

    const before = Date.now();
    const target = { url: `${receiver()}${path}/new`, method: "PUT", headers: { "x-fixed": "yes" } };
    const replay = await call(env, "/v1/topics/hooks/dead/replay", { body: { ids: [id], payload: { v: 2 }, target } });
    expect(replay.body).toEqual({ replayed: 1, notFound: [], nextCursor: null });
    await tickUntil(env, id, "succeeded");

    const sent = await deliveries(`${path}/new`);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toEqual({ v: 2 });
    expect(sent[0]!.headers["x-fixed"]).toBe("yes");
    const job = (await call(env, `/v1/jobs/${id}`)).body;
    expect(job.payload).toEqual({ v: 2 });
    expect(outcomes(job)).toEqual(["dead", "edited", "replayed", "ok"]);
    const edited = job.history[1];
    expect(edited).toMatchObject({ run: 1, attempt: 0, changes: ["payload", "target"] });
    expect(Date.parse(edited.startedAt)).toBeGreaterThanOrEqual(before);
  });

  it("applies the same edits to each letter a filter picks, and leaves the others as they were", async () => {
    const env = isolatedEnv();
    const ids = await deadLetters(env, 4, (i) => (i < 3 ? "HTTP 503" : "HTTP 400"));
    const headers = { "x-github-event": "push" };
    const r = await call(env, "/v1/topics/work/dead/replay", { body: { error: "503", payload: null, webhookHeaders: headers } });
    expect(r.body).toEqual({ replayed: 3, notFound: [], nextCursor: null });
    for (const id of ids.slice(0, 3)) {
      const job = (await call(env, `/v1/jobs/${id}`)).body;
      expect(job).toMatchObject({ state: "scheduled", payload: null, webhookHeaders: headers, flowKey: "tenant-1", maxAttempts: 4 });
      expect(job.history[1].changes).toEqual(["payload", "webhookHeaders"]);
    }
    const untouched = (await call(env, `/v1/jobs/${ids[3]}`)).body;
    expect(untouched).toMatchObject({ state: "dead", payload: { i: 3 } });
    expect(outcomes(untouched)).toEqual(["dead"]);
  });

  it("into another topic: each letter becomes a new job there, and leaves the old topic's dead letters as moved", async () => {
    const env = isolatedEnv();
    const ids = await deadLetters(env, 3);
    await call(env, "/v1/topics/fixed", { method: "PUT", body: { mode: "pull" } });
    const r = (await call(env, "/v1/topics/work/dead/replay", { body: { ids: [...ids, ids[0]], topic: "fixed", payload: { fixed: true } } })).body;
    expect(r).toMatchObject({ replayed: 3, notFound: [], nextCursor: null });
    expect(Object.keys(r.movedTo)).toEqual(ids);

    for (const id of ids) {
      const to = r.movedTo[id];
      expect(to).toMatch(/^fixed\./);
      const old = (await call(env, `/v1/jobs/${id}`)).body;
      expect(old.state).toBe("moved");
      expect(old.history.at(-1)).toMatchObject({ outcome: "moved", changes: ["payload", "topic"], movedTo: to });
      const moved = (await call(env, `/v1/jobs/${to}`)).body;
      expect(moved).toMatchObject({ topic: "fixed", state: "scheduled", payload: { fixed: true }, flowKey: "tenant-1", maxAttempts: 4 });
    }
    expect((await call(env, "/v1/topics/work/dead")).body.entries).toEqual([]);
    expect((await call(env, "/v1/topics/work")).body.dead).toBe(0);
    const claimed = (await call(env, "/v1/topics/fixed/claim", { body: { max: 10 } })).body.jobs.map((j: { id: string }) => j.id);
    expect(claimed.sort()).toEqual(Object.values(r.movedTo).sort());
    // Done: a repeat finds no letter, and makes no job.
    expect((await call(env, "/v1/topics/work/dead/replay", { body: { ids, topic: "fixed" } })).body).toEqual({
      replayed: 0,
      notFound: ids,
      nextCursor: null,
      movedTo: {},
    });
  });

  it("the client: deadLetters.replay with edits and dryRun, deadLetters.purge and jobs.bulkCancel with dryRun, walking every cursor", async () => {
    const env = isolatedEnv();
    const dl = new Delayline({ baseUrl: "http://delayline.test", token: TOKEN, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
    const ids = await deadLetters(env, 3);
    expect(await dl.deadLetters.replay("work", { all: true, topic: "fixed", dryRun: true })).toEqual({ replayed: 3, notFound: [], dryRun: true, ids });
    expect(await dl.deadLetters.purge("work", { error: "boom", dryRun: true })).toEqual({ dryRun: true, purged: 3, ids });
    const scheduled = await dl.jobs.enqueueBatch(Array.from({ length: 30 }, (_, i) => ({ topic: "later", payload: i, delay: "1h" })));
    expect(await dl.jobs.bulkCancel("later", { all: true, dryRun: true })).toEqual({
      cancelled: 30,
      inflight: 0,
      dryRun: true,
      ids: scheduled.slice(0, 20).map((j) => j.id),
    });
    expect((await dl.jobs.list("later")).jobs).toHaveLength(30);

    const r = await dl.deadLetters.replay("work", { ids: ids.slice(0, 2), topic: "fixed", payload: "new" });
    expect(r).toMatchObject({ replayed: 2, notFound: [] });
    expect(Object.keys(r.movedTo!)).toEqual(ids.slice(0, 2));
    expect((await dl.jobs.get(r.movedTo![ids[0]!]!))?.payload).toBe("new");
    expect(await dl.deadLetters.replay("work", { all: true, target: { url: `${receiver()}/never-delivered` } })).toEqual({ replayed: 1, notFound: [] });
    expect((await dl.jobs.get(ids[2]!))?.history.map((h) => h.outcome)).toEqual(["dead", "edited", "replayed"]);
  });

  it("refuses bad edits as an enqueue refuses them, before reaching Redis (422, not 503)", async () => {
    const offline = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", ALLOW_PRIVATE_TARGETS: "false" });
    const ids = ["work.01ARZ3NDEKTSV4RRFFQ69G5FAV"];
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ target: { url: "ftp://example.com/" } }, "target.url"],
      [{ target: { url: "http://127.0.0.1:8080/" } }, "target.url"],
      [{ target: { url: "https://example.com/", headers: { Host: "x" } } }, "target.headers.Host"],
      [{ target: { url: "https://example.com/", extra: 1 } }, "target"],
      [{ topic: "no spaces" }, "topic"],
      [{ webhookHeaders: { "x-not-kept": "a" } }, "webhookHeaders"],
      [{ webhookHeaders: { "x-github-event": "e".repeat(257) } }, "webhookHeaders.x-github-event"],
    ];
    for (const [edit, field] of bad) {
      for (const what of [{ ids }, { all: true }]) {
        const res = await call(offline, "/v1/topics/work/dead/replay", { body: { ...what, ...edit } });
        expect(res.status, JSON.stringify(edit)).toBe(422);
        expect(res.headers.get("content-type")).toBe("application/problem+json");
        expect(res.body.errors.map((e: { path: string }) => e.path).join(), JSON.stringify(edit)).toContain(field);
      }
    }
    const big = await call(offline, "/v1/topics/work/dead/replay", { body: { ids, payload: "x".repeat(settings(offline).maxPayloadBytes) } });
    expect(big.status).toBe(413);
    // A good one goes on to Redis, which is down.
    expect((await call(offline, "/v1/topics/work/dead/replay", { body: { ids, payload: 1, target: { url: "https://example.com/" } } })).status).toBe(503);
  });
});
