import { afterEach, describe, expect, inject, it } from "vitest";
import { verifySignature } from "../../../src/client/index.js";
import { PermanentError, RetryableError, type JobContext } from "../../../src/handlers/registry.js";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import { runDrain } from "../../../src/tick/drain.js";
import { wakeForSoonJobs } from "../../../src/tick/wake.js";
import { deliveries, recorder, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";
import { DrivenClock } from "./sim-clock.js";

const T0 = 1_900_000_020_000; // 20 s past a minute boundary
const restores: Array<() => void> = [];
afterEach(() => {
  for (const r of restores.splice(0)) r();
});

describe("the loop", () => {
  it("runs every job of its window once, never early, within TICK_POLL_MS of its due time", async () => {
    const clock = new VirtualClock(T0);
    // A job every ~270 ms at a 100 ms poll needs the paid plan's larger subrequest budget.
    const d = tickDeployment({ TICK_POLL_MS: "100", TICK_SUBREQUEST_BUDGET: "5000" }, clock);
    const topic = uniqueTopic("times");
    const seen = recorder(d.handlers, topic, clock);
    const dues = Array.from({ length: 200 }, (_, i) => T0 + Math.floor((i * 54_000) / 200) + (i % 7) * 13);
    await d.queue.enqueueBatch(dues.map((runAt, i) => ({ topic, payload: i, runAt })));
    // Enqueue clamps past times to "now" on the real clock; put the due times where the test says.
    const report = await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });
    expect(report.ended).toBe("window");
    expect(seen).toHaveLength(200);
    expect(new Set(seen.map((s) => s.id)).size).toBe(200);
    for (const s of seen) {
      expect(s.at).toBeGreaterThanOrEqual(s.dueAt);
      expect(s.at - s.dueAt).toBeLessThanOrEqual(100);
    }
    expect(report.outcomes).toEqual({ ack: 200, retry: 0, dead: 0, stale: 0 });
  });

  it("three invocations at once deliver every job exactly once and never early", async () => {
    const d = tickDeployment({ TICK_POLL_MS: "50" });
    const topic = uniqueTopic("three");
    const seen = recorder(d.handlers, topic, { now: () => Date.now() });
    const start = Date.now();
    const jobs = await d.queue.enqueueBatch(Array.from({ length: 60 }, (_, i) => ({ topic, payload: i, delayMs: (i % 20) * 60 })));
    const dueOf = new Map(jobs.map((j) => [j.id, j.dueAt]));
    const reports = await Promise.all([0, 1, 2].map(() => d.tick({ scheduledTime: start, windowMs: 2_500 })));
    expect(reports.filter((r) => r.ended !== "not-acquired").length).toBeGreaterThanOrEqual(1);
    expect(seen.map((s) => s.id).sort()).toEqual([...dueOf.keys()].sort());
    for (const s of seen) expect(s.at).toBeGreaterThanOrEqual(dueOf.get(s.id)!);
    expect(reports.reduce((n, r) => n + r.outcomes.ack, 0)).toBe(60);
  });

  it("a waiting invocation takes over when the running loop's window ends", async () => {
    const d = tickDeployment({ TICK_POLL_MS: "50" });
    const topic = uniqueTopic("handover");
    const seen = recorder(d.handlers, topic, { now: () => Date.now() });
    const start = Date.now();
    const first = d.tick({ scheduledTime: start, windowMs: 800 });
    await new Promise((r) => setTimeout(r, 100));
    const second = d.tick({ scheduledTime: start + 100, windowMs: 2_000 });
    // Due after the first loop's window: only the second can run it.
    const job = await d.queue.enqueue({ topic, payload: "late", delayMs: 1_200 });
    const [a, b] = await Promise.all([first, second]);
    expect(a.ended).toBe("window");
    expect(b.ended).toBe("window");
    expect(seen.map((s) => s.id)).toEqual([job.id]);
  });

  it("a waiting invocation takes over within a poll when the holder lets go before its window ends", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("early-release");
    const seen = recorder(d.handlers, topic, clock);
    // A holder whose window lasts a minute more lets go after 2 s (its lock lost, Redis gone, a bug).
    const { tickLockFromSettings } = await import("../../../src/queue/from-settings.js");
    const holder = tickLockFromSettings(d.settings);
    expect((await holder.acquire(30_000, T0 + 60_000)).acquired).toBe(true);
    const job = await d.queue.enqueue({ topic, payload: 1, runAt: T0 + 2_500 });
    const waiter = d.tick({ scheduledTime: T0, windowMs: 10_000 });
    await clock.sleep(2_000);
    await holder.release();
    const report = await waiter;
    expect(report.ended).toBe("window");
    expect(seen.map((x) => x.id)).toEqual([job.id]);
    expect(seen[0]!.at - seen[0]!.dueAt).toBeLessThanOrEqual(1_000 + 100);
  });

  it("a loop out of budget hands over at once, not after its last chunk's slow handler", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", TICK_SUBREQUEST_BUDGET: "12", TICK_IDLE_PEEK_MS: "0" }, clock);
    const slow = uniqueTopic("slow");
    const quick = uniqueTopic("quick");
    recorder(d.handlers, slow, clock, () => clock.sleep(8_000));
    const seen = recorder(d.handlers, quick, clock);
    await d.queue.enqueue({ topic: slow, payload: 1, runAt: T0 });
    const job = await d.queue.enqueue({ topic: quick, payload: 2, runAt: T0 + 3_000 });
    const runner = d.runner(T0);
    const report = await d.tick({ scheduledTime: T0, windowMs: 20_000, fanOut: runner.fanOut, handOver: runner.handOver });
    expect(report.ended).toBe("budget");
    expect(report.handedOver).toBe(true);
    expect(seen.map((x) => x.id)).toEqual([job.id]);
    // The slow handler ends at +8 s; the successor was polling long before.
    expect(seen[0]!.at - seen[0]!.dueAt).toBeLessThanOrEqual(100 + 100);
  });

  it("a chunk that ends after its loop let go of the lock wakes its topic while the successor sleeps: the jobs its concurrency held back start then", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("late");
    await d.queue.configureTopic(topic, { concurrency: 1 });
    const seen = recorder(d.handlers, topic, clock, (job) => (job.payload === 0 ? clock.sleep(5_000) : undefined));
    await d.queue.enqueueBatch([0, 1].map((payload) => ({ topic, payload, runAt: T0 })));
    // What a deployment's loop wakes with: the producers' wake path, its drains run here.
    const wake = async (jobs: Array<{ topic: string; dueAt: number }>) => {
      const drains: Array<Promise<unknown>> = [];
      const drain = (t: string, horizonMs: number) =>
        runDrain({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic: t, horizonMs, clock, log: () => {} });
      await wakeForSoonJobs({ env: d.env, settings: d.settings, queue: d.queue, jobs, clock, drain, waitUntil: (w) => drains.push(w) });
      await Promise.all(drains);
    };
    // The first loop's window ends a second in, while the slow job runs (to +5 s); the second takes the lock
    // then, finds the topic at its concurrency (scored at the lease's end) and falls asleep long before.
    const first = d.tick({ scheduledTime: T0, windowMs: 1_000, wake });
    const second = d.tick({ scheduledTime: T0, windowMs: 30_000 });
    await Promise.all([first, second]);
    expect(seen.map((x) => x.payload)).toEqual([0, 1]);
    // The slot freed at +5 s: the drain the first loop's chunk woke starts the held-back job then, not the sleeping loop's next look.
    expect(seen[1]!.at - T0).toBeLessThanOrEqual(5_000 + 100);
  });

  it("claims a backlog's next chunk at the last one's tail, so its jobs take lanes as they free, not after the chunk's slowest handler", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", TICK_CHUNK: "4", TICK_CONCURRENCY: "2", TICK_FANOUT: "0", TICK_IDLE_PEEK_MS: "0" }, clock);
    const topic = uniqueTopic("tail");
    let running = 0;
    let most = 0;
    const seen = recorder(d.handlers, topic, clock, async (job) => {
      running++;
      most = Math.max(most, running);
      await clock.sleep(job.payload === 0 ? 1_000 : 10);
      running--;
    });
    // The first chunk: the slow job and three quick ones on two lanes; all of it has started at +20 ms.
    const jobs = await d.queue.enqueueBatch(Array.from({ length: 8 }, (_, i) => ({ topic, payload: i, runAt: T0 })));
    const report = await d.tick({ scheduledTime: T0, clock, windowMs: 3_000 });
    expect(report.outcomes).toEqual({ ack: 8, retry: 0, dead: 0, stale: 0 });
    expect(seen.map((x) => x.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    expect(most).toBeLessThanOrEqual(2);
    // The second chunk's first job starts as the first chunk's last quick one ends (+30 ms), beside the slow one (ends +1,000 ms).
    const fifth = seen.find((x) => x.payload === 4)!;
    expect(fifth.at - T0).toBeLessThan(1_000);
    expect(Math.max(...seen.map((x) => x.at)) - T0).toBeLessThan(1_000);
  });

  it("follows the retry schedule, then succeeds", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("schedule");
    const seen = recorder(d.handlers, topic, clock, (job) => {
      if (job.attempt < 3) throw new Error(`attempt ${job.attempt} failed`);
    });
    const { id } = await d.queue.enqueue({
      topic,
      payload: 1,
      runAt: T0,
      maxAttempts: 5,
      backoff: normalizeBackoff({ type: "schedule", delays: ["5s", "30s"] }),
    });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });
    expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(5_000);
    expect(seen[1]!.at - seen[0]!.at).toBeLessThanOrEqual(5_100);
    expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(30_000);
    expect(seen[2]!.at - seen[1]!.at).toBeLessThanOrEqual(30_100);
    expect(await d.queue.get(id)).toMatchObject({ state: "succeeded", attempts: 3 });
  });

  it("exhausted attempts go to dead with the error and attempts; a permanent error after one attempt", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("fail");
    recorder(d.handlers, topic, clock, (job) => {
      if (job.payload === "permanent") throw new PermanentError("bad input");
      throw new RetryableError("upstream busy", 10);
    });
    const [busy, bad] = await d.queue.enqueueBatch([
      { topic, payload: "busy", runAt: T0, maxAttempts: 3 },
      { topic, payload: "permanent", runAt: T0, maxAttempts: 3 },
    ]);
    const report = await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });
    expect(await d.queue.get(busy!.id)).toMatchObject({ state: "dead", attempts: 3, lastError: "upstream busy" });
    expect(await d.queue.get(bad!.id)).toMatchObject({ state: "dead", attempts: 1, lastError: "bad input" });
    expect(report.outcomes).toEqual({ ack: 0, retry: 2, dead: 2, stale: 0 });
    const dead = await d.queue.deadLetters(topic);
    // Newest first: the permanent failure died on attempt 1, the busy one later, on attempt 3.
    expect(dead.entries.map((e) => [e.id, e.attempts])).toEqual([
      [busy!.id, 3],
      [bad!.id, 1],
    ]);
  });

  it("a replayed dead job is delivered again", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("replay");
    let fail = true;
    const seen = recorder(d.handlers, topic, clock, () => {
      if (fail) throw new PermanentError("not yet");
    });
    const { id } = await d.queue.enqueue({ topic, payload: 1, runAt: T0 });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("dead");
    fail = false;
    clock.t += 60_000;
    expect(await d.queue.replayDeadLetters(topic, { ids: [id], dueAt: clock.t })).toEqual({ replayed: 1, notFound: [] });
    await d.tick({ scheduledTime: clock.t - 1_000, clock, windowMs: 10_000 });
    expect(await d.queue.get(id)).toMatchObject({ state: "succeeded", attempts: 1 });
    expect(seen.map((s) => s.attempt)).toEqual([1, 1]);
  });

  it("jobs of an invocation that died mid-chunk are delivered again after their lease", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("crash");
    const seen = recorder(d.handlers, topic, clock);
    const jobs = await d.queue.enqueueBatch(
      Array.from({ length: 5 }, (_, i) => ({ topic, payload: i, runAt: T0, backoff: normalizeBackoff({ type: "fixed", delay: 0 }) })),
    );
    // A loop claimed them and was killed before settling.
    await d.queue.claim(topic, { max: 5, leaseMs: 31_000, now: T0 });
    const report = await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });
    expect(seen.map((s) => [s.id, s.attempt])).toEqual(jobs.map((j) => [j.id, 2]));
    expect(seen.every((s) => s.at >= T0 + 31_000)).toBe(true);
    expect(report.outcomes.ack).toBe(5);
  });

  it("a topic at 20/s with burst 5 stays within 2 % of rate·t + burst over 10 s", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "50" }, clock);
    const topic = uniqueTopic("rate");
    const seen = recorder(d.handlers, topic, clock);
    await d.queue.configureTopic(topic, { ratePerSec: 20, burst: 5 });
    await d.queue.enqueueBatch(Array.from({ length: 400 }, (_, i) => ({ topic, payload: i, runAt: T0 })));
    await d.tick({ scheduledTime: T0, clock, windowMs: 10_000 });
    const limit = 20 * 10 + 5;
    expect(seen.length).toBeLessThanOrEqual(limit);
    expect(seen.length).toBeGreaterThanOrEqual(Math.floor(0.98 * limit));
    for (const [i, s] of seen.entries()) expect(i + 1).toBeLessThanOrEqual(((s.at - T0) * 20) / 1000 + 5);
  });

  it("a hot topic does not delay a quiet one by more than one round", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", TICK_CHUNK: "20" }, clock);
    const hot = uniqueTopic("hot");
    const quiet = uniqueTopic("quiet");
    const order: string[] = [];
    d.handlers.define(hot, () => void order.push("hot"));
    d.handlers.define(quiet, () => void order.push("quiet"));
    for (let i = 0; i < 5; i++) await d.queue.enqueueBatch(Array.from({ length: 1_000 }, (_, j) => ({ topic: hot, payload: j, runAt: T0 })));
    await d.queue.enqueue({ topic: quiet, payload: "me", runAt: T0 });
    await d.tick({ scheduledTime: T0, clock, windowMs: 200 });
    // Round 1 takes at most 20 hot jobs alongside the quiet one.
    expect(order.indexOf("quiet")).toBeGreaterThanOrEqual(0);
    expect(order.indexOf("quiet")).toBeLessThanOrEqual(20);
  });

  it("after its backlog was fanned out, a topic's next job is dispatched when due, not a poll later", async () => {
    // Chunks run beside the loop: one clock that all of them share.
    const clock = new DrivenClock(T0);
    restores.push(clock.install());
    const d = tickDeployment({ TICK_POLL_MS: "1000", TICK_CHUNK: "10" }, clock);
    const topic = uniqueTopic("fanned");
    const seen = recorder(d.handlers, topic, clock);
    // 15 due now: a full local chunk of 10 marks a backlog, the next round fans the other 5 out.
    await d.queue.enqueueBatch(Array.from({ length: 15 }, (_, i) => ({ topic, payload: i, runAt: T0 })));
    await d.queue.enqueue({ topic, payload: "later", runAt: T0 + 10 });
    // Fanned-out chunks run here, reporting what TickChunk.run reports; each
    // takes 10 ms, so the next job falls due while the round runs.
    const fanOut = async (t: string, max: number) => {
      const claim = await d.queue.claim(t, { max, leaseMs: 60_000 });
      await d.queue.settle(
        t,
        claim.jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
      );
      await clock.sleep(10);
      const n = claim.jobs.length;
      return {
        claimed: n,
        outcomes: { ack: n, retry: 0, dead: 0, stale: 0 },
        subrequests: 2,
        more: n === max,
        nextDueAt: claim.nextDueAt,
        nextLookAt: n === max ? clock.now() : claim.nextLookAt,
      };
    };
    const report = await d.tick({ scheduledTime: T0, clock, windowMs: 3_000, fanOut });
    expect(report.fannedOut).toBeGreaterThan(0);
    const later = seen.find((s) => s.payload === "later");
    expect(later).toBeDefined();
    expect(later!.at - later!.dueAt).toBeLessThanOrEqual(100);
  });

  it("skips paused topics and does not dispatch pull-mode topics", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const paused = uniqueTopic("paused");
    const pull = uniqueTopic("pull");
    const seen = [...recorder(d.handlers, paused, clock), ...recorder(d.handlers, pull, clock)];
    await d.queue.configureTopic(paused, { paused: true });
    await d.queue.configureTopic(pull, { mode: "pull" });
    await d.queue.enqueueBatch([
      { topic: paused, payload: 1, runAt: T0 },
      { topic: pull, payload: 2, runAt: T0 },
    ]);
    const report = await d.tick({ scheduledTime: T0, clock, windowMs: 2_000 });
    expect(report.claimed).toBe(0);
    expect(seen).toEqual([]);
    expect((await d.queue.topicStats(paused)).scheduled).toBe(1);
    expect((await d.queue.topicStats(pull)).scheduled).toBe(1);
  });

  it("batch handlers get up to batchSize jobs per call and report each job", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("batch");
    const calls: number[] = [];
    d.handlers.define(topic, {
      batchSize: 128,
      batchHandler: (jobs: JobContext[]) => {
        calls.push(jobs.length);
        return jobs.map((j) => ((j.payload as number) % 10 === 0 ? new PermanentError("tenth") : undefined));
      },
    });
    await d.queue.enqueueBatch(Array.from({ length: 300 }, (_, i) => ({ topic, payload: i, runAt: T0 })));
    const report = await d.tick({ scheduledTime: T0, clock, windowMs: 1_000 });
    expect(calls.every((n) => n <= 128)).toBe(true);
    expect(calls.reduce((a, b) => a + b, 0)).toBe(300);
    expect(report.outcomes).toEqual({ ack: 270, retry: 0, dead: 30, stale: 0 });
  });
});

describe("the http handler", () => {
  const receiver = () => inject("receiverUrl");

  it("POSTs the payload signed; 2xx succeeds, 4xx is dead after one attempt, 5xx retries honouring Retry-After", async () => {
    const secret = "topic-signing-secret-0123456789";
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true" }, clock);
    const topic = uniqueTopic("http");
    const base = `${receiver()}/${topic}`;
    await d.queue.configureTopic(topic, { url: `${base}/ok`, signingSecret: secret });
    const [ok, gone, busy, moved] = await d.queue.enqueueBatch([
      { topic, payload: { n: 1 }, runAt: T0 },
      { topic, payload: { n: 2 }, runAt: T0, target: { url: `${base}/status/404` } },
      { topic, payload: { n: 3 }, runAt: T0, maxAttempts: 2, target: { url: `${base}/status/503?retryAfter=7` } },
      { topic, payload: { n: 4 }, runAt: T0, target: { url: `${base}/redirect` } },
    ]);
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 75_000 });
    expect((await d.queue.get(ok!.id))!.state).toBe("succeeded");
    expect(await d.queue.get(gone!.id)).toMatchObject({
      state: "dead",
      attempts: 1,
      lastError: expect.stringMatching(/^HTTP 404: status 404 from the receiver/),
    });
    expect(await d.queue.get(busy!.id)).toMatchObject({ state: "dead", attempts: 2, lastError: expect.stringMatching(/^HTTP 503/) });
    expect(await d.queue.get(moved!.id)).toMatchObject({ state: "dead", attempts: 1, lastError: expect.stringMatching(/redirects are not followed/) });

    const got = await deliveries(`/${topic}/ok`);
    expect(got).toHaveLength(1);
    const h = got[0]!.headers;
    expect(h["content-type"]).toBe("application/json");
    expect(h["delayline-job-id"]).toBe(ok!.id);
    expect(h["delayline-topic"]).toBe(topic);
    expect(h["delayline-attempt"]).toBe("1");
    expect(JSON.parse(got[0]!.body)).toEqual({ n: 1 });
    expect(await verifySignature({ header: h["delayline-signature"], body: got[0]!.body, secrets: secret })).toEqual({ ok: true });
    expect(await deliveries(`/${topic}/status/503`)).toHaveLength(2);
  });

  it("refuses private targets unless the deployment allows them", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "false" }, clock);
    const topic = uniqueTopic("ssrf");
    const { id } = await d.queue.enqueue({ topic, payload: 1, runAt: T0, target: { url: `${receiver()}/${topic}/ok` } });
    await d.tick({ scheduledTime: T0, clock, windowMs: 1_000 });
    expect(await d.queue.get(id)).toMatchObject({ state: "dead", attempts: 1, lastError: expect.stringMatching(/refused target/) });
    expect(await deliveries(`/${topic}`)).toEqual([]);
  });

  it("never exceeds the subrequest budget, counting every Redis call and every delivery", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true", TICK_SUBREQUEST_BUDGET: "45" }, clock);
    const topic = uniqueTopic("budget");
    await d.queue.configureTopic(topic, { url: `${receiver()}/${topic}/ok` });
    await d.queue.enqueueBatch(Array.from({ length: 200 }, (_, i) => ({ topic, payload: i, runAt: T0 })));
    let made = 0;
    const real = globalThis.fetch;
    globalThis.fetch = ((...args: Parameters<typeof fetch>) => {
      made++;
      return real(...args);
    }) as typeof fetch;
    let report: Awaited<ReturnType<typeof d.tick>>;
    try {
      report = await d.tick({ scheduledTime: T0, clock, windowMs: 60_000 });
    } finally {
      globalThis.fetch = real;
    }
    expect(report.ended).toBe("budget");
    expect(made).toBeLessThanOrEqual(45);
    expect(report.subrequests).toBeLessThanOrEqual(45);
    expect(report.claimed).toBeGreaterThan(20);
    // What it claimed it settled before returning: nothing is left in flight.
    expect((await d.queue.topicStats(topic)).inflight).toBe(0);
    expect(await deliveries(`/${topic}/ok`)).toHaveLength(report.claimed);
  });
});
