/**
 * Dry runs of the bulk operations over HTTP: a bulk cancel, a dead-letter
 * replay and a purge with dryRun answer the count the real call would touch
 * and its first 20 ids, change nothing (a digest of every key of a Redis of
 * their own is the same before and after) and make Redis run no write
 * command (INFO commandstats, each command's flags by COMMAND INFO); the real
 * call right after touches exactly that count, and a walk's dry run goes step
 * by step with the real walk's cursors.
 */
import { describe, expect, inject, it } from "vitest";
import type { Env } from "../../../src/env.js";
import { redisMeter, STATE_DIGEST } from "../queue/redis-meter.js";
import { call, isolatedEnv } from "./helpers.js";

const meter = redisMeter(inject("dryBridgeUrl"), inject("dryBridgeToken"));
const onDryRedis = () => isolatedEnv({ UPSTASH_REDIS_REST_URL: inject("dryBridgeUrl"), UPSTASH_REDIS_REST_TOKEN: inject("dryBridgeToken") });

/** Runs a dry run: asserts it changed no key and ran no write command; answers its reply. */
async function dry(env: Env, path: string, init: { method?: string; body?: unknown } = {}) {
  const before = await meter.command(["EVAL", STATE_DIGEST, 0]);
  const { byCommand, result } = await meter.meter(() => call(env, path, init));
  const after = await meter.command(["EVAL", STATE_DIGEST, 0]);
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  expect(after, `${path}: the dry run changed Redis`).toEqual(before);
  expect(await meter.writesAmong(Object.keys(byCommand)), `${path}: write commands`).toEqual([]);
  // It did read: the count comes from Redis, not from nothing.
  expect(Object.keys(byCommand).length).toBeGreaterThan(0);
  return result.body;
}

/** An hour from now: when the scheduled jobs of these tests are due, a millisecond apart. */
const later = () => Date.now() + 3_600_000;

/** `n` jobs enqueued into `topic`, due from `base` a millisecond apart; their ids. */
async function scheduled(env: Env, topic: string, n: number, base = later()): Promise<string[]> {
  const ids: string[] = [];
  for (let at = 0; at < n; at += 1_000) {
    const jobs = Array.from({ length: Math.min(1_000, n - at) }, (_, i) => ({ topic, payload: { i: at + i }, runAt: base + at + i }));
    ids.push(...(await call(env, "/v1/jobs/batch", { body: { jobs } })).body.jobs.map((j: { id: string }) => j.id));
  }
  return ids;
}

/**
 * A pull topic `work` with `n` dead letters, each after `attempts` attempts
 * that failed with `error(i)` (1 KB of text makes the metas long); their ids
 * in the order they died (oldest first).
 */
async function deadLetters(env: Env, n: number, error: (i: number) => string, attempts = 1): Promise<string[]> {
  await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: attempts, backoff: { type: "fixed", delay: 0 } } });
  const ids: string[] = (
    await call(env, "/v1/jobs/batch", { body: { jobs: Array.from({ length: n }, (_, i) => ({ topic: "work", payload: { i } })) } })
  ).body.jobs.map((j: { id: string }) => j.id);
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const claimed = (await call(env, "/v1/topics/work/claim", { body: { max: 100 } })).body.jobs as Array<{ id: string }>;
    expect(claimed.map((j) => j.id).sort()).toEqual([...ids].sort());
    const nack = (id: string, i: number) => call(env, `/v1/jobs/${id}/nack`, { body: { attempt, error: error(i) } });
    // The last one in id order, so the letters die (and are walked) in that order.
    if (attempt < attempts) await Promise.all(ids.map(nack));
    else for (const [i, id] of ids.entries()) await nack(id, i);
  }
  return ids;
}

describe("dry runs over HTTP", () => {
  it("a bulk cancel's dry run by window or all: the count, the first 20 ids in due order, the jobs in flight; then the real call cancels as many", async () => {
    const env = onDryRedis();
    const base = later();
    const ids = await scheduled(env, "mail", 30, base);
    await call(env, "/v1/topics/pulled", { method: "PUT", body: { mode: "pull" } });
    await call(env, "/v1/jobs", { body: { topic: "pulled", payload: 1 } });
    expect((await call(env, "/v1/topics/pulled/claim", { body: { max: 1 } })).body.jobs).toHaveLength(1);

    expect(await dry(env, "/v1/topics/mail/jobs/cancel", { body: { all: true, dryRun: true } })).toEqual({
      dryRun: true,
      cancelled: 30,
      ids: ids.slice(0, 20),
      inflight: 0,
      nextCursor: null,
    });
    const window = { dueFrom: base + 8, dueTo: base + 1_000 };
    expect(await dry(env, "/v1/topics/mail/jobs/cancel", { body: { ...window, dryRun: true } })).toEqual({
      dryRun: true,
      cancelled: 22,
      ids: ids.slice(8, 28),
      inflight: 0,
      nextCursor: null,
    });
    expect(await dry(env, "/v1/topics/pulled/jobs/cancel", { body: { all: true, dryRun: true } })).toMatchObject({ cancelled: 0, ids: [], inflight: 1 });

    const real = await call(env, "/v1/topics/mail/jobs/cancel", { body: window });
    expect(real.body).toEqual({ cancelled: 22, inflight: 0, nextCursor: null });
    expect((await call(env, "/v1/topics/mail/jobs/cancel", { body: { all: true } })).body.cancelled).toBe(8);
  });

  it("a bulk cancel's dry run by ids counts the scheduled, in flight and unknown ids as the real call does", async () => {
    const env = onDryRedis();
    const [a, b, c] = await scheduled(env, "mail", 3);
    const done = (await call(env, "/v1/jobs", { body: { topic: "mail", payload: 0 } })).body.id;
    expect((await call(env, `/v1/jobs/${done}`, { method: "DELETE" })).status).toBe(200);
    const unknown = `mail.${"0".repeat(26)}`;
    const body = { ids: [a, b, a, c, done, unknown] };
    expect(await dry(env, "/v1/topics/mail/jobs/cancel", { body: { ...body, dryRun: true } })).toEqual({
      dryRun: true,
      cancelled: 3,
      ids: [a, b, c],
      inflight: 0,
      notScheduled: 2,
      nextCursor: null,
    });
    expect((await call(env, "/v1/topics/mail/jobs/cancel", { body })).body).toEqual({ cancelled: 3, inflight: 0, notScheduled: 2, nextCursor: null });
  });

  it("a walk's dry run goes in the real walk's steps: each step's count and cursor are the real call's", async () => {
    const env = onDryRedis();
    await scheduled(env, "mail", 520);
    let cursor: string | undefined;
    const steps: number[] = [];
    do {
      const at = cursor ? { cursor } : {};
      const preview = await dry(env, "/v1/topics/mail/jobs/cancel", { body: { all: true, dryRun: true, ...at } });
      const real = (await call(env, "/v1/topics/mail/jobs/cancel", { body: { all: true, ...at } })).body;
      expect(real).toEqual({ cancelled: preview.cancelled, inflight: 0, nextCursor: preview.nextCursor });
      steps.push(real.cancelled);
      cursor = real.nextCursor ?? undefined;
    } while (cursor);
    expect(steps).toEqual([250, 250, 20]);
  });

  it("a shaped topic's keyed jobs: the dry runs by window, by flow key and by ids count them as the real calls cancel them", async () => {
    const env = onDryRedis();
    const base = later();
    const jobs = Array.from({ length: 30 }, (_, i) => ({
      topic: "shaped",
      payload: { i },
      runAt: base + i,
      ...(i % 3 === 0 ? {} : { flowKey: i % 3 === 1 ? "t1" : "t2" }),
    }));
    const ids: string[] = (await call(env, "/v1/jobs/batch", { body: { jobs } })).body.jobs.map((j: { id: string }) => j.id);
    const ofT1 = ids.filter((_, i) => i % 3 === 1);
    // One key's jobs: exactly its own, in due order.
    const byKey = await dry(env, "/v1/topics/shaped/jobs/cancel", { body: { flowKey: "t1", dryRun: true } });
    expect(byKey).toMatchObject({ dryRun: true, cancelled: 10, ids: ofT1, nextCursor: null });
    expect((await call(env, "/v1/topics/shaped/jobs/cancel", { body: { flowKey: "t1" } })).body).toMatchObject({ cancelled: 10, nextCursor: null });
    // A window over the rest: the plain and t2's jobs merged in due order (t1's are cancelled).
    const rest = ids.filter((_, i) => i % 3 !== 1);
    const windowed = await dry(env, "/v1/topics/shaped/jobs/cancel", { body: { dueTo: base + 29, dryRun: true } });
    expect(windowed).toMatchObject({ cancelled: 20, ids: rest });
    // By ids, a cancelled one among them: the rest are scheduled.
    const byIds = await dry(env, "/v1/topics/shaped/jobs/cancel", { body: { ids: [ofT1[0], ...rest.slice(0, 4)], dryRun: true } });
    expect(byIds).toMatchObject({ cancelled: 4, ids: rest.slice(0, 4), notScheduled: 1 });
    expect((await call(env, "/v1/topics/shaped/jobs/cancel", { body: { dueTo: base + 29 } })).body).toMatchObject({ cancelled: 20 });
  });

  it("a replay's and a purge's dry runs by ids and by filter: the letters they would take; the real calls take as many", async () => {
    const env = onDryRedis();
    const ids = await deadLetters(env, 25, (i) => (i % 5 === 0 ? "HTTP 400: bad" : "HTTP 503: busy"));
    const busy = ids.filter((_, i) => i % 5 !== 0);
    const unknown = `work.${"0".repeat(26)}`;

    expect(await dry(env, "/v1/topics/work/dead/replay", { body: { ids: [ids[3], unknown, ids[0]], dryRun: true } })).toEqual({
      dryRun: true,
      replayed: 2,
      ids: [ids[3], ids[0]],
      notFound: [unknown],
      nextCursor: null,
    });
    expect(await dry(env, "/v1/topics/work/dead/replay", { body: { error: "503", dryRun: true } })).toEqual({
      dryRun: true,
      replayed: 20,
      ids: busy,
      notFound: [],
      nextCursor: null,
    });
    expect(await dry(env, "/v1/topics/work/dead?error=400&dryRun=true", { method: "DELETE" })).toEqual({
      dryRun: true,
      purged: 5,
      ids: ids.filter((_, i) => i % 5 === 0),
      nextCursor: null,
    });
    expect((await dry(env, "/v1/topics/work/dead?dryRun=true", { method: "DELETE" })).purged).toBe(25);
    // Also with the edits a replay may make: they are checked, and change nothing.
    const edited = await dry(env, "/v1/topics/work/dead/replay", { body: { all: true, payload: { fixed: true }, topic: "elsewhere", dryRun: true } });
    expect(edited).toMatchObject({ dryRun: true, replayed: 25, ids: ids.slice(0, 20) });

    expect((await call(env, "/v1/topics/work/dead/replay", { body: { error: "503" } })).body).toEqual({ replayed: 20, notFound: [], nextCursor: null });
    expect((await call(env, "/v1/topics/work/dead?error=400", { method: "DELETE" })).body).toEqual({ purged: 5, nextCursor: null });
    expect(await dry(env, "/v1/topics/work/dead?dryRun=true", { method: "DELETE" })).toEqual({ dryRun: true, purged: 0, ids: [], nextCursor: null });
  });

  it("a replay step that stops at its byte budget (long histories): the dry run stops where the real call does", async () => {
    const env = onDryRedis();
    // 25 attempts with 1 KB errors: some 28 KB of meta a letter, so a step reads two batches of 25 metas and stops.
    const ids = await deadLetters(env, 60, (i) => `${i}:`.padEnd(1_024, "x"), 25);
    const preview = await dry(env, "/v1/topics/work/dead/replay", { body: { all: true, dryRun: true } });
    expect(preview).toMatchObject({ replayed: 50, ids: ids.slice(0, 20), nextCursor: expect.any(String) });
    const real = (await call(env, "/v1/topics/work/dead/replay", { body: { all: true } })).body;
    expect(real).toEqual({ replayed: 50, notFound: [], nextCursor: preview.nextCursor });
    const rest = await dry(env, "/v1/topics/work/dead/replay", { body: { all: true, dryRun: true, cursor: real.nextCursor } });
    expect(rest).toEqual({ dryRun: true, replayed: 10, ids: ids.slice(50), notFound: [], nextCursor: null });
  });

  it("dry runs by label leave the label's stale members be (the real walk drops them): no key changed, no write command; the real calls then take as many", async () => {
    const env = onDryRedis();
    await call(env, "/v1/topics/tagged", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
    const job = (i: number, delay?: string) => ({ topic: "tagged", payload: { i }, labels: ["t:1"], ...(delay ? { delay } : {}) });
    const due = (await call(env, "/v1/jobs/batch", { body: { jobs: [0, 1, 2, 3].map((i) => job(i)) } })).body.jobs.map((j: { id: string }) => j.id);
    const waiting = (await call(env, "/v1/jobs/batch", { body: { jobs: [4, 5, 6].map((i) => job(i, "1h")) } })).body.jobs.map((j: { id: string }) => j.id);
    const claimed = (await call(env, "/v1/topics/tagged/claim", { body: { max: 10 } })).body.jobs as Array<{ id: string }>;
    expect(claimed.map((j) => j.id).sort()).toEqual([...due].sort());
    // Two succeed (their members go stale), two die.
    for (const id of due.slice(0, 2)) await call(env, `/v1/jobs/${id}/ack`, { body: { attempt: 1 } });
    for (const id of due.slice(2)) await call(env, `/v1/jobs/${id}/nack`, { body: { attempt: 1, error: "boom" } });

    expect(await dry(env, "/v1/topics/tagged/jobs/cancel", { body: { label: "t:1", dryRun: true } })).toEqual({
      dryRun: true,
      cancelled: 3,
      ids: waiting,
      inflight: 0,
      nextCursor: null,
    });
    expect(await dry(env, "/v1/topics/tagged/dead/replay", { body: { label: "t:1", dryRun: true } })).toMatchObject({ replayed: 2, ids: due.slice(2) });
    expect(await dry(env, "/v1/topics/tagged/dead?label=t:1&dryRun=true", { method: "DELETE" })).toMatchObject({ purged: 2, ids: due.slice(2) });
    expect((await call(env, "/v1/topics/tagged/dead?label=t:1", { method: "DELETE" })).body).toEqual({ purged: 2, nextCursor: null });
    expect((await call(env, "/v1/topics/tagged/jobs/cancel", { body: { label: "t:1" } })).body).toEqual({ cancelled: 3, inflight: 0, nextCursor: null });
  });
});
