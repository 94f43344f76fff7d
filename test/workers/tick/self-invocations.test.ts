import type { Env } from "../../../src/env.js";
import { afterEach, expect, inject, it } from "vitest";
import { testEnv } from "../self.js";
import { deliveries, tickDeployment, uniqueTopic } from "./helpers.js";

/**
 * Fan-out runs chunks in invocations of their own (the TickChunk entrypoint
 * through the TICK_RUNNER service binding), and a producer's drains run the
 * same way; those invocations read the deployment's own settings. So these
 * tests run on the deployment's prefix, which vitest.config.ts makes this
 * file's own (the "workers-self" project), each on topics no other touches,
 * and each leaves the prefix without a topic, as it found it: they pass in
 * any order.
 */
const ownPrefix = testEnv.DELAYLINE_PREFIX;

/** A deployment on the prefix the TickChunk invocations read. */
const deployment = (overrides: Partial<Env>) => tickDeployment({ DELAYLINE_PREFIX: ownPrefix, ...overrides });

/** Deletes a test's topic with what it still holds. */
async function remove(d: ReturnType<typeof deployment>, topic: string) {
  expect(await d.queue.deleteTopic(topic, { purge: true })).toMatchObject({ result: "deleted" });
}

afterEach(async () => {
  // The next test finds what this one found: no topic, nothing due, no tick.
  expect(await deployment({}).queue.listTopics()).toEqual([]);
});

it("runs on a prefix of its own, which the invocations it starts read too", () => {
  expect(ownPrefix).toMatch(/^t[0-9a-f]{8}:\{self\}$/);
  expect(testEnv.TICK_RUNNER).toBeDefined();
});

it("a backlog beyond one invocation's budget is carried by fanned-out invocations", { timeout: 60_000 }, async () => {
  const d = deployment({ TICK_SUBREQUEST_BUDGET: "45", TICK_CHUNK: "10", TICK_FANOUT: "3", TICK_POLL_MS: "50" });
  const topic = uniqueTopic("fanout");
  await d.queue.configureTopic(topic, { url: `${inject("receiverUrl")}/${topic}/ok` });
  await d.queue.enqueueBatch(Array.from({ length: 300 }, (_, i) => ({ topic, payload: i })));
  const report = await d.tick({ scheduledTime: Date.now(), windowMs: 20_000, fanOut: (t, max) => testEnv.TICK_RUNNER!.run(t, max) });
  console.log(JSON.stringify({ fanout: report }));
  // This invocation stayed inside its 45 subrequests; the others carried the rest.
  expect(report.subrequests).toBeLessThanOrEqual(45);
  expect(report.fannedOut).toBeGreaterThan(0);
  const delivered = await deliveries(`/${topic}/`);
  // Delivering here costs a subrequest per job: at most ~30 of the 45. Fanned out, a chunk costs one.
  expect(report.claimed).toBeGreaterThan(150);
  expect(delivered.length).toBe(report.claimed);
  expect(report.outcomes.ack).toBe(report.claimed);
  // The rest goes: the next test shares this prefix.
  await remove(d, topic);
});

it("the invocations run the code handlers of the main module's deployment (app/worker.ts)", async () => {
  // The runtime makes the TickChunk the main module exports: the class its delayline() call made for its handlers.
  const worker = (await import("../../../app/worker.js")).default;
  const d = deployment({});
  const topic = uniqueTopic("handled");
  const ran: string[] = [];
  worker.handlers.define(topic, (job) => void ran.push(job.id));
  try {
    const jobs = await d.queue.enqueueBatch(Array.from({ length: 3 }, (_, i) => ({ topic, payload: i })));
    const report = await testEnv.TICK_RUNNER!.run(topic, 10);
    // Without the handler the jobs have nowhere to go over http (no target, no topic url): they would be dead.
    expect(report.outcomes).toEqual({ ack: 3, retry: 0, dead: 0, stale: 0 });
    expect(ran.sort()).toEqual(jobs.map((j) => j.id).sort());
  } finally {
    worker.handlers.remove(topic);
  }
  await remove(d, topic);
});

/** A tick on the deployment's prefix, asleep: three idle rounds, the mark, then a second for producers to notice. */
async function sleepingTick(windowMs: number) {
  const d = deployment({ TICK_POLL_MS: "50", TICK_IDLE_PEEK_MS: "20000" });
  const ticking = d.tick({ scheduledTime: Date.now(), windowMs });
  let asleep = false;
  for (let i = 0; i < 100 && !asleep; i++) {
    await new Promise((r) => setTimeout(r, 50));
    asleep = await d.queue.tickAsleep();
  }
  expect(asleep).toBe(true);
  await new Promise((r) => setTimeout(r, 1_500));
  return { d, ticking };
}

/** POST /v1/jobs through the Worker's own fetch, then waits for what the request left running (its drains). */
async function enqueueThroughWorker(env: object, body: unknown): Promise<{ id: string; dueAt: string }> {
  const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
  const worker = (await import("../../../app/worker.js")).default;
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request("http://delayline.test/v1/jobs", {
      method: "POST",
      headers: { authorization: "Bearer test-api-token-0123456789", "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    { ...env },
    ctx,
  );
  expect(res.status).toBe(201);
  const job = (await res.json()) as { id: string; dueAt: string };
  await waitOnExecutionContext(ctx);
  return job;
}

const deliveriesTo = (topic: string) => deliveries(`/${topic}/`);

/**
 * A sleeping tick (nothing due within TICK_IDLE_PEEK_MS) looks only that
 * often; a job enqueued meanwhile for "in a moment" is started by the
 * producer's own invocation at its due time.
 */
it("while the tick sleeps, the producer starts a job due soon, on time", { timeout: 60_000 }, async () => {
  const { d, ticking } = await sleepingTick(6_000);
  const topic = uniqueTopic("wake");
  await d.queue.configureTopic(topic, { url: `${inject("receiverUrl")}/${topic}/ok` });
  const { id, dueAt } = await enqueueThroughWorker(d.env, { topic, payload: { soon: true }, delay: 700 });
  const delivered = await deliveriesTo(topic);
  expect(delivered.map((x) => x.headers["delayline-job-id"])).toEqual([id]);
  expect(delivered[0]!.at).toBeGreaterThanOrEqual(Date.parse(dueAt));
  const report = await ticking;
  // The sleeping tick delivered nothing itself: the producer's invocation did.
  expect(report.claimed).toBe(0);
  expect(report.idleSleeps).toBeGreaterThan(0);
  await remove(d, topic);
});

it("while the tick sleeps, a pull topic's job due soon is left for its consumers", { timeout: 60_000 }, async () => {
  const { d, ticking } = await sleepingTick(6_000);
  const topic = uniqueTopic("wake-pull");
  await d.queue.configureTopic(topic, { mode: "pull" });
  const { id } = await enqueueThroughWorker(d.env, { topic, payload: { pull: true }, delay: 300, target: { url: `${inject("receiverUrl")}/${topic}/ok` } });
  // The producer's drain ran and finished (waitOnExecutionContext): it must have left the job alone.
  expect((await d.queue.get(id))!.state).toBe("scheduled");
  expect(await deliveriesTo(topic)).toEqual([]);
  const pulled = await d.queue.claim(topic, { max: 10, leaseMs: 60_000, mode: "pull" });
  expect(pulled.jobs.map((j) => j.id)).toEqual([id]);
  expect(await d.queue.ack(id, pulled.jobs[0]!.attempt)).toBe("acked");
  await ticking;
  await remove(d, topic);
});

it("while the tick sleeps, a retry the producer's drain scheduled runs at its retry time, not at the tick's next look", { timeout: 60_000 }, async () => {
  const { d, ticking } = await sleepingTick(8_000);
  const topic = uniqueTopic("wake-retry");
  const { id } = await enqueueThroughWorker(d.env, {
    topic,
    payload: { retry: true },
    delay: 300,
    maxAttempts: 2,
    backoff: { type: "fixed", delay: "2s" },
    target: { url: `${inject("receiverUrl")}/${topic}/status/503` },
  });
  // Both attempts ran inside the producer's invocation, the second no earlier than its backoff.
  const delivered = await deliveriesTo(topic);
  expect(delivered.map((x) => x.headers["delayline-attempt"])).toEqual(["1", "2"]);
  expect(delivered[1]!.at - delivered[0]!.at).toBeGreaterThanOrEqual(2_000);
  expect(await d.queue.get(id)).toMatchObject({ state: "dead", attempts: 2 });
  const report = await ticking;
  expect(report.claimed).toBe(0);
  await remove(d, topic);
});

/**
 * With the wake alarm: a loop that found nothing due ends, and a job enqueued
 * then, due after the producer's own drain would have ended, arms the
 * deployment's Durable Object, whose alarm starts the loop through
 * TICK_RUNNER (TickChunk.wakeTick) that delivers it.
 */
it("while no loop runs, a job due past the producer's drain arms the wake alarm, whose loop delivers it once", { timeout: 60_000 }, async () => {
  const { runDurableObjectAlarm, runInDurableObject } = await import("cloudflare:test");
  // Producers cover jobs due within 2 s by a drain; the job below is due in 4 s, so only the alarm covers it.
  const d = deployment({ TICK_POLL_MS: "50", TICK_IDLE_PEEK_MS: "2000" });
  expect((await d.tick({ scheduledTime: Date.now(), windowMs: 20_000, endWhenIdle: true })).ended).toBe("idle");
  expect(await d.queue.tickSleep()).toBe("c");
  const topic = uniqueTopic("alarm");
  const { id, dueAt } = await enqueueThroughWorker(d.env, {
    topic,
    payload: { alarm: true },
    delay: 4_000,
    target: { url: `${inject("receiverUrl")}/${topic}/ok` },
  });
  // Nothing ran in the producer's invocation.
  expect(await deliveriesTo(topic)).toEqual([]);
  const ns = testEnv.TICK_ALARM as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(ownPrefix!));
  const armedAt = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
  expect(armedAt).toBe(Date.parse(dueAt) - 1_000);
  // Runs the alarm now; it returns once the loop it started has ended (idle again, after the delivery).
  expect(await runDurableObjectAlarm(stub)).toBe(true);
  const delivered = await deliveriesTo(topic);
  expect(delivered.map((x) => x.headers["delayline-job-id"])).toEqual([id]);
  expect(delivered[0]!.at).toBeGreaterThanOrEqual(Date.parse(dueAt));
  // The alarm's loop runs until the next minute's cron (plus TICK_OVERLAP_MS): it ends idle, leaving the mark for
  // producers, unless the wall clock put its window's end (or the topic's next look) first; then the cron looks.
  const { ended } = (await d.queue.tickStatus())!;
  expect(["idle", "window"]).toContain(ended);
  if (ended === "idle") expect(await d.queue.tickSleep()).toBe("c");
  expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).toBeNull();
  await remove(d, topic);
});
