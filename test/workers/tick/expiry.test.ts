/**
 * Expiry and lateness budgets (issue 37): a job with an expiresAt (or a ttl)
 * that has not started by then, or one that would start later than its due
 * time plus its topic's maxLateness, ends as expired — never delivered, not a
 * failure, counted. Jobs go in and are read over the HTTP API; the real tick
 * runs on the virtual clock (the API's times are absolute, in that clock's
 * future).
 */
import { expect, it } from "vitest";
import { settings } from "../../../src/env.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import type { Env } from "../../../src/env.js";
import { call } from "../api/helpers.js";
import { tickOnce } from "../fixtures.js";
import { recorder, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000; // 20 s past a minute boundary
/** TICK_POLL_MS's default (docs/configuration.md). */
const POLL = 1_000;
/**
 * Always polling, for the tests that resume a topic or replay letters over HTTP: with the tick asleep, those would
 * start a producer's drain (src/tick/wake.ts) on the real clock beside this test's virtual one, and the two would wait
 * for each other's lock. A paused topic is found through the topic index either way.
 */
const POLLING = { TICK_IDLE_PEEK_MS: "0" };

async function ok(res: Promise<{ status: number; body: any }>, status = 200) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

const configure = (env: Env, topic: string, body: Record<string, unknown>) => ok(call(env, `/v1/topics/${topic}`, { method: "PUT", body }));

async function enqueueAll(env: Env, jobs: Array<Record<string, unknown>>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < jobs.length; i += 500) {
    const body = await ok(call(env, "/v1/jobs/batch", { body: { jobs: jobs.slice(i, i + 500) } }), 201);
    ids.push(...body.jobs.map((j: { id: string }) => j.id));
  }
  return ids;
}

const getJob = (env: Env, id: string) => ok(call(env, `/v1/jobs/${id}`));

/** The value of a /metrics sample for a topic. */
async function metric(env: Env, name: string, topic: string): Promise<number> {
  const text = (await call(env, "/metrics")).text;
  const m = new RegExp(`^${name}\\{topic="${topic}"\\} (\\d+)$`, "m").exec(text);
  if (!m) throw new Error(`no ${name} for ${topic} in /metrics`);
  return Number(m[1]);
}

it("1,000 jobs with an expiresAt behind a paused topic: each ends expired within a poll of its expiresAt, and none is delivered once resumed", {
  timeout: 240_000,
}, async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment(POLLING, clock);
  const topic = uniqueTopic("paused");
  const seen = recorder(d.handlers, topic, clock);
  await configure(d.env, topic, { paused: true });
  // Due in 1 s, expiring over 10 s from 5 s on: a spread the tick must follow while the topic stays paused.
  const expiries = Array.from({ length: 1_000 }, (_, i) => T0 + 5_000 + i * 10);
  const ids = await enqueueAll(
    d.env,
    expiries.map((expiresAt, i) => ({ topic, payload: i, runAt: T0 + 1_000, expiresAt })),
  );
  expect((await getJob(d.env, ids[0]!)).expiresAt).toBe(new Date(expiries[0]!).toISOString());

  await d.tick({ scheduledTime: T0 - 20_000, windowMs: 60_000 });
  for (const [i, id] of ids.entries()) {
    const job = await getJob(d.env, id);
    expect(job.state, id).toBe("expired");
    const finished = Date.parse(job.finishedAt);
    expect(finished).toBeGreaterThanOrEqual(expiries[i]!);
    expect(finished - expiries[i]!, id).toBeLessThanOrEqual(POLL);
    expect(job.attempts).toBe(0);
    expect(job.history).toEqual([expect.objectContaining({ attempt: 0, outcome: "expired" })]);
  }

  await configure(d.env, topic, { paused: false });
  clock.t = T0 + 60_000;
  await d.tick({ scheduledTime: T0 + 40_000, windowMs: 30_000 });
  expect(seen).toHaveLength(0);
  const view = await ok(call(d.env, `/v1/topics/${topic}`));
  expect(view).toMatchObject({ scheduled: 0, inflight: 0, dead: 0 });
  expect(view.counters).toMatchObject({ dispatched: 0, expired: 1_000, dead: 0, retried: 0 });
  expect(await metric(d.env, "delayline_jobs_expired_total", topic)).toBe(1_000);
  const stats = await ok(call(d.env, "/v1/stats"));
  expect(stats.topics.find((t: { topic: string }) => t.topic === topic).counters).toMatchObject({ expired: 1_000, dead: 0 });
  expect(await metric(d.env, "delayline_jobs_dead_total", topic)).toBe(0);
});

it("jobs whose expiresAt passes while Redis is away are expired, not delivered, when it returns; the others deliver", { timeout: 120_000 }, async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({}, clock);
  const topic = uniqueTopic("outage");
  const seen = recorder(d.handlers, topic, clock);
  // Due at 2 s; half expire at 5 s, during the outage, half at 60 s.
  const ids = await enqueueAll(
    d.env,
    Array.from({ length: 20 }, (_, i) => ({ topic, payload: i, runAt: T0 + 2_000, expiresAt: T0 + (i % 2 === 0 ? 5_000 : 60_000) })),
  );
  // The tick runs from the start, its queue's Redis unreachable: it waits and retries.
  const away = settings({ ...d.env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" });
  await tickOnce(d.settings, { queue: queueFromSettings(away), handlers: d.handlers, clock, scheduledTime: T0, windowMs: 10_000 });
  expect(seen).toHaveLength(0);
  // Redis is back at 10 s.
  await d.tick({ scheduledTime: T0 + 10_000, windowMs: 10_000 });
  expect(seen.map((s) => s.payload).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 10 }, (_, i) => 2 * i + 1));
  for (const [i, id] of ids.entries()) expect((await getJob(d.env, id)).state).toBe(i % 2 === 0 ? "expired" : "succeeded");
  expect((await ok(call(d.env, `/v1/topics/${topic}`))).counters).toMatchObject({ expired: 10, succeeded: 10, dead: 0 });
});

it("maxLateness 2 s with the tick stopped for 10 s: the jobs due more than 2 s before it resumes expire, the rest deliver", { timeout: 120_000 }, async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({}, clock);
  const topic = uniqueTopic("late");
  const seen = recorder(d.handlers, topic, clock);
  await configure(d.env, topic, { maxLateness: "2s" });
  expect((await ok(call(d.env, `/v1/topics/${topic}`))).settings).toMatchObject({ maxLateness: 2_000, keepExpired: false });
  // A job every 250 ms from 125 ms on, through the 10 s the tick is stopped and past it.
  const dues = Array.from({ length: 60 }, (_, i) => T0 + 125 + i * 250);
  const ids = await enqueueAll(
    d.env,
    dues.map((runAt, i) => ({ topic, payload: i, runAt })),
  );
  clock.t = T0 + 10_000;
  await d.tick({ scheduledTime: T0 + 10_000, windowMs: 20_000 });
  const late = dues.filter((due) => due < T0 + 8_000).length;
  expect(late).toBe(32);
  for (const [i, id] of ids.entries())
    expect((await getJob(d.env, id)).state, `due +${dues[i]! - T0} ms`).toBe(dues[i]! < T0 + 8_000 ? "expired" : "succeeded");
  expect(seen).toHaveLength(dues.length - late);
  for (const s of seen) expect(s.at - s.dueAt).toBeLessThanOrEqual(2_000);
  expect((await ok(call(d.env, `/v1/topics/${topic}`))).counters).toMatchObject({ expired: late, succeeded: dues.length - late });
});

it("a job waiting for its retry past its expiresAt is still delivered, and one in flight past it still succeeds", { timeout: 120_000 }, async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({}, clock);
  const topic = uniqueTopic("started");
  const seen = recorder(d.handlers, topic, clock, async (job) => {
    if (job.payload === "retry" && job.attempt === 1) throw new Error("once");
    // Runs past its expiresAt.
    if (job.payload === "slow") await clock.sleep(5_000);
  });
  const [retried, slow] = await enqueueAll(d.env, [
    { topic, payload: "retry", runAt: T0 + 1_000, expiresAt: T0 + 3_000, backoff: { type: "fixed", delay: 5_000 } },
    { topic, payload: "slow", runAt: T0 + 1_000, expiresAt: T0 + 2_500 },
  ]);
  await d.tick({ scheduledTime: T0, windowMs: 20_000 });
  expect(seen.map((s) => `${s.payload} ${s.attempt}`).sort()).toEqual(["retry 1", "retry 2", "slow 1"]);
  expect(await getJob(d.env, retried!)).toMatchObject({ state: "succeeded", attempts: 2 });
  expect(await getJob(d.env, slow!)).toMatchObject({ state: "succeeded", attempts: 1 });
  expect((await ok(call(d.env, `/v1/topics/${topic}`))).counters).toMatchObject({ expired: 0, succeeded: 2, retried: 1 });
});

it("a topic that keeps expired jobs: they are listed as dead letters and replay like any letter", { timeout: 120_000 }, async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment(POLLING, clock);
  const topic = uniqueTopic("kept");
  const seen = recorder(d.handlers, topic, clock);
  await configure(d.env, topic, { paused: true, keepExpired: true });
  const ids = await enqueueAll(
    d.env,
    Array.from({ length: 5 }, (_, i) => ({ topic, payload: i, runAt: T0 + 1_000, expiresAt: T0 + 2_000, flowKey: i % 2 === 0 ? "a" : undefined })),
  );
  await d.tick({ scheduledTime: T0, windowMs: 10_000 });
  const letters = await ok(call(d.env, `/v1/topics/${topic}/jobs?state=dead`));
  expect(letters.jobs.map((j: { id: string }) => j.id).sort()).toEqual([...ids].sort());
  expect((await getJob(d.env, ids[0]!)).state).toBe("expired");
  const view = await ok(call(d.env, `/v1/topics/${topic}`));
  expect(view).toMatchObject({ dead: 5, settings: { keepExpired: true } });
  expect(view.counters).toMatchObject({ expired: 5, dead: 0 });

  await configure(d.env, topic, { paused: false });
  await ok(call(d.env, `/v1/topics/${topic}/dead/replay`, { body: { ids } }));
  await d.tick({ scheduledTime: T0 + 10_000, windowMs: 10_000 });
  expect(seen.map((s) => s.payload).sort()).toEqual([0, 1, 2, 3, 4]);
  for (const id of ids) expect((await getJob(d.env, id)).state).toBe("succeeded");
});

it("a pull topic's jobs end expired within a poll of their expiresAt with no consumer claiming: the tick looks at it for them", {
  timeout: 120_000,
}, async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({}, clock);
  const topic = uniqueTopic("pull");
  await configure(d.env, topic, { mode: "pull" });
  const expiries = [T0 + 3_000, T0 + 3_400, T0 + 7_777];
  const ids = await enqueueAll(
    d.env,
    expiries.map((expiresAt, i) => ({ topic, payload: i, runAt: T0 + 1_000, expiresAt })),
  );
  await d.tick({ scheduledTime: T0 - 20_000, windowMs: 40_000 });
  for (const [i, id] of ids.entries()) {
    const job = await getJob(d.env, id);
    expect(job.state).toBe("expired");
    expect(Date.parse(job.finishedAt) - expiries[i]!).toBeGreaterThanOrEqual(0);
    expect(Date.parse(job.finishedAt) - expiries[i]!).toBeLessThanOrEqual(POLL);
  }
  expect((await ok(call(d.env, `/v1/topics/${topic}`))).counters).toMatchObject({ expired: 3, dispatched: 0 });
});
