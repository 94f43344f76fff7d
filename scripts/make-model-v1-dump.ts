/**
 * Writes test/fixtures/model-v1.json: every Redis key delayline's data model
 * v1 (deployment-wide `<p>:jobs` / `<p>:meta` / `<p>:done:<n>` hashes, dead
 * letters in `dead:at` / `dead:entries`) holds
 * after a scripted run of the Queue, with what the Queue read back from them.
 * A migration to a later model is tested by loading it
 * (test/fixtures/load-dump.ts) and comparing its reads with `expect`.
 *
 * Run with `node --import tsx scripts/make-model-v1-dump.ts`. It starts a
 * throwaway redis-server and the REST bridge (harness/redis-bridge.ts), and
 * drives the Queue through the bridge as the Worker does, on a clock of its
 * own: every operation happens at a fixed time before CLOCK_MS, and every
 * read at CLOCK_MS. Job ids are random, so a rerun writes other ids (and the
 * same states).
 */
import { writeFile } from "node:fs/promises";
import IORedis from "ioredis";
import { startRedisBridge } from "../harness/redis-bridge.js";
import { Queue } from "../src/queue/queue.js";
import { createRedis } from "../src/queue/redis.js";
import { type Dump, dumpKeys } from "../test/fixtures/load-dump.js";

const PREFIX = "dl:{v1}";
/** The time the expected reads are made at (and the dump "now"): 2027-01-15, off any hour boundary. */
const CLOCK_MS = 1_800_001_234_567;
const OUT = new URL("../test/fixtures/model-v1.json", import.meta.url);

const PUSH = "push-a";
const PULL = "pull-b";
const PAUSED = "paused-c";
/** A delivery target nobody listens on: the dump is never delivered. */
const TARGET = "http://127.0.0.1:9/hook";

const UNICODE = { text: "héllo wörld ✓ 日本語 🎉 — \u00e9\u0301", emoji: "👩‍💻" };
const NESTED = {
  order: {
    id: 42,
    lines: [
      { sku: "A-1", qty: 2, price: 9.99 },
      { sku: "B-2", qty: 1, tags: ["x", "y"] },
    ],
  },
  meta: { nested: { deep: { deeper: [1, [2, [3]]] } }, none: null, yes: true },
};
const BIG = { blob: "0123456789abcdef".repeat(6_400), note: "about 100 KB" };

async function main(): Promise<void> {
  const stack = await startRedisBridge({ tokenPrefix: "dump" });
  const direct = new IORedis(stack.redis.url);
  try {
    let clock = CLOCK_MS - 600_000;
    const at = (ms: number) => {
      clock = ms;
    };
    const redis = createRedis({ redisUrl: stack.bridge.url, redisToken: stack.token, redisTimeoutMs: 30_000 });
    const queue = new Queue({ redis, prefix: PREFIX, now: () => clock });
    const T = CLOCK_MS;
    const ids: Record<string, string> = {};
    const enqueue = async (name: string, input: Parameters<Queue["enqueue"]>[0]) => {
      ids[name] = (await queue.enqueue(input)).id;
      return ids[name]!;
    };

    // Topics: a push topic with every setting, a pull topic, a push topic that will be paused.
    at(T - 600_000);
    await queue.configureTopic(PUSH, {
      ratePerSec: 50,
      burst: 20,
      concurrency: 3,
      maxAttempts: 3,
      backoff: { type: "exponential", delay: 1_000, factor: 2, maxDelay: 60_000, jitter: false },
      url: TARGET,
      timeoutMs: 5_000,
      signingSecret: "whsec_dump_secret_0123456789",
    });
    await queue.configureTopic(PULL, { mode: "pull", maxAttempts: 2 });
    await queue.configureTopic(PAUSED, { url: TARGET });

    // push-a, round 1: two succeed, one fails once and is retried later.
    at(T - 300_000);
    await enqueue("pushSucceeded1", { topic: PUSH, payload: { n: 1, text: UNICODE.text } });
    await enqueue("pushSucceeded2", { topic: PUSH, payload: "42" });
    await enqueue("pushRetried", { topic: PUSH, payload: NESTED });
    let claimed = await queue.claim(PUSH, { max: 3, leaseMs: 60_000 });
    expectClaimed(claimed.jobs, [ids.pushSucceeded1, ids.pushSucceeded2, ids.pushRetried]);
    at(T - 299_000);
    await queue.settle(PUSH, [
      { id: ids.pushSucceeded1!, attempt: 1, kind: "ack", observed: { latenessMs: 12, durationMs: 80 }, httpStatus: 200 },
      { id: ids.pushSucceeded2!, attempt: 1, kind: "ack", observed: { latenessMs: 15, durationMs: 95 }, httpStatus: 204 },
      {
        id: ids.pushRetried!,
        attempt: 1,
        kind: "retry",
        at: T + 120_000,
        error: "HTTP 503: upstream unavailable",
        observed: { latenessMs: 20, durationMs: 30 },
        httpStatus: 503,
      },
    ]);

    // push-a, round 2: three die; one of them is replayed onto the schedule.
    at(T - 240_000);
    await enqueue("pushDead1", { topic: PUSH, payload: { n: "dead-1", text: UNICODE.emoji } });
    await enqueue("pushDead2", { topic: PUSH, payload: [1, 2, 3] });
    await enqueue("pushReplayed", { topic: PUSH, payload: { n: "replayed", nested: NESTED.meta } });
    claimed = await queue.claim(PUSH, { max: 3, leaseMs: 60_000 });
    expectClaimed(claimed.jobs, [ids.pushDead1, ids.pushDead2, ids.pushReplayed]);
    at(T - 239_000);
    await queue.settle(PUSH, [
      { id: ids.pushDead1!, attempt: 1, kind: "dead", error: "HTTP 410: gone", observed: { latenessMs: 5, durationMs: 40 }, httpStatus: 410 },
      { id: ids.pushDead2!, attempt: 1, kind: "dead", error: "HTTP 400: bad request «ü»", observed: { latenessMs: 6, durationMs: 41 }, httpStatus: 400 },
      { id: ids.pushReplayed!, attempt: 1, kind: "dead", error: "HTTP 422: unprocessable", observed: { latenessMs: 7, durationMs: 42 }, httpStatus: 422 },
    ]);
    at(T - 200_000);
    const replay = await queue.replayDeadLetters(PUSH, { ids: [ids.pushReplayed!], dueAt: T + 600_000 });
    if (replay.replayed !== 1) throw new Error(`replay: ${JSON.stringify(replay)}`);

    // push-a, round 3: one job whose lease expired and was reaped by the next claim (back on the schedule), two in
    // flight with long leases, one in flight whose lease has expired by CLOCK_MS (nothing claimed since to reap it).
    at(T - 120_000);
    await enqueue("pushReaped", { topic: PUSH, payload: { n: "reaped" } });
    claimed = await queue.claim(PUSH, { max: 1, leaseMs: 60_000 });
    expectClaimed(claimed.jobs, [ids.pushReaped]);
    at(T - 60_000);
    await enqueue("pushInflight1", { topic: PUSH, payload: { n: "inflight-1", text: UNICODE.text } });
    await enqueue("pushInflight2", { topic: PUSH, payload: { n: "inflight-2" } });
    claimed = await queue.claim(PUSH, { max: 2, leaseMs: 600_000 });
    expectClaimed(claimed.jobs, [ids.pushInflight1, ids.pushInflight2]);
    at(T - 55_000);
    await queue.reschedule(ids.pushReaped!, T + 300_000);
    await enqueue("pushLeaseExpired", { topic: PUSH, payload: { n: "lease-expired" } });
    claimed = await queue.claim(PUSH, { max: 1, leaseMs: 30_000 });
    expectClaimed(claimed.jobs, [ids.pushLeaseExpired]);

    // push-a, scheduled: due now (held by the concurrency limit), future, one with an idempotency key; one cancelled.
    at(T - 30_000);
    await enqueue("pushDueNow", { topic: PUSH, payload: "42", runAt: T - 10_000 });
    await enqueue("pushFuture", { topic: PUSH, payload: UNICODE, runAt: T + 3_600_000 });
    await enqueue("pushIdempotent", { topic: PUSH, payload: NESTED, runAt: T + 7_200_000, idempotencyKey: "order-42" });
    const repeat = await queue.enqueue({ topic: PUSH, payload: NESTED, runAt: T + 7_200_000, idempotencyKey: "order-42" });
    if (repeat.id !== ids.pushIdempotent || !repeat.deduplicated) throw new Error("the idempotency key did not hold");
    await enqueue("pushCancelled", { topic: PUSH, payload: { n: "cancelled" }, runAt: T + 900_000 });
    at(T - 20_000);
    if ((await queue.cancel(ids.pushCancelled!)) !== "cancelled") throw new Error("cancel did not apply");
    await enqueue("pushWithTarget", {
      topic: PUSH,
      payload: { n: "own target" },
      runAt: T + 1_800_000,
      maxAttempts: 5,
      backoff: { type: "fixed", delay: 2_000 },
      target: { url: TARGET, method: "PUT", headers: { "x-dump": "1" } },
      timeoutMs: 2_000,
    });

    // pull-b: acked, nacked (retry, due again), nacked permanently (dead), one in flight, one future.
    at(T - 300_000);
    await enqueue("pullAcked", { topic: PULL, payload: { n: "pull-acked" } });
    await enqueue("pullRetried", { topic: PULL, payload: "42" });
    await enqueue("pullDead", { topic: PULL, payload: { n: "pull-dead", text: UNICODE.text } });
    await enqueue("pullInflight", { topic: PULL, payload: NESTED });
    claimed = await queue.claim(PULL, { max: 4, leaseMs: 3_600_000, mode: "pull" });
    expectClaimed(claimed.jobs, [ids.pullAcked, ids.pullRetried, ids.pullDead, ids.pullInflight]);
    at(T - 290_000);
    if ((await queue.ack(ids.pullAcked!, 1)) !== "acked") throw new Error("ack did not apply");
    if ((await queue.nack(ids.pullRetried!, 1, { error: "consumer: try again later", retryAfterMs: 60_000 })) !== "retry") throw new Error("nack retry");
    if ((await queue.nack(ids.pullDead!, 1, { error: "consumer: malformed ✗", permanent: true })) !== "dead") throw new Error("nack dead");
    at(T - 10_000);
    await enqueue("pullFuture", { topic: PULL, payload: { n: "pull-future" }, delayMs: 86_400_000 });

    // paused-c: a due job (held by the pause) with the ~100 KB payload, a future one; then paused.
    at(T - 50_000);
    await enqueue("pausedBig", { topic: PAUSED, payload: BIG, runAt: T - 40_000 });
    await enqueue("pausedFuture", { topic: PAUSED, payload: { n: "paused-future", text: UNICODE.emoji }, runAt: T + 60_000 });
    await queue.configureTopic(PAUSED, { paused: true });

    // A recurring schedule onto push-a (written, never fired).
    const definition = {
      every: 3_600_000,
      timezone: "UTC",
      grace: 60_000,
      anchor: T + 3_000_000,
      createdAt: T - 100_000,
      updatedAt: T - 100_000,
      job: { topic: PUSH, payload: { n: "from schedule" } },
    };
    const state = { rev: 1, next: T + 3_000_000, runs: 0, lastRunAt: null, lastJobId: null, paused: false };
    if (!(await queue.schedules.write("hourly-report", 0, definition, state))) throw new Error("schedule write");

    // The dump, before anything reads.
    const keys = await dumpKeys(direct, PREFIX);
    for (const k of keys) {
      if (JSON.stringify(k.value).includes(PREFIX.slice(0, -1))) throw new Error(`${k.key}: its value names the prefix`);
    }

    // What the current code reads at CLOCK_MS: each job before any dead-letter read, the listings, then each job again.
    at(T);
    const stateBefore: Record<string, string | null> = {};
    for (const id of Object.values(ids)) stateBefore[id] = (await queue.get(id))?.state ?? null;
    const topics = [PUSH, PULL, PAUSED];
    const deadLetters: Record<string, unknown> = {};
    const scheduled: Record<string, string[]> = {};
    const inflight: Record<string, string[]> = {};
    for (const topic of topics) {
      const dead = await queue.deadLetters(topic, { limit: 100 });
      deadLetters[topic] = { ids: dead.entries.map((e) => e.id), entries: dead.entries.map((e) => ({ ...e, job: { ...e.job, payload: "(see jobs)" } })) };
      scheduled[topic] = (await queue.listJobs(topic, { state: "scheduled", limit: 100 })).jobs.map((j) => j.id);
      inflight[topic] = (await queue.listJobs(topic, { state: "inflight", limit: 100 })).jobs.map((j) => j.id);
    }
    const jobs: Record<string, unknown> = {};
    for (const [name, id] of Object.entries(ids)) {
      const job = await queue.get(id);
      const payload = job ? job.payload : ((await queue.deadLetter(id))?.job.payload ?? null);
      jobs[id] = {
        name,
        stateBeforeDeadLetterRead: stateBefore[id],
        state: job?.state ?? null,
        attempts: job?.attempts ?? null,
        payload,
        dueAt: job?.dueAt ?? null,
        lastError: job?.lastError ?? null,
        snapshot: job ? { ...job, payload: "(see payload)" } : null,
      };
    }
    const stats: Record<string, unknown> = {};
    for (const topic of topics) stats[topic] = await queue.topicStats(topic);
    const dump: Dump = {
      prefix: PREFIX,
      clockMs: T,
      keys,
      expect: {
        note: "Read by the code of commit e473397 at clockMs, with the Queue's default options (retentionMs 1 h: done records are in the bucket of their finish time). Each job is read with get before any dead-letter read (stateBeforeDeadLetterRead) and after the dead-letter listings (state, snapshot). Payloads appear once per job, in jobs[id].payload.",
        names: ids,
        jobs,
        deadLetters,
        scheduled,
        inflight,
        idempotency: { [PUSH]: { "order-42": ids.pushIdempotent } },
        schedules: { "hourly-report": await queue.schedules.get("hourly-report") },
        topics: { list: await queue.listTopics(), settings: Object.fromEntries(await Promise.all(topics.map(async (t) => [t, await queue.topicSettings(t)]))) },
        stats,
      },
    };
    const text = `${JSON.stringify(dump, null, 2)}\n`;
    await writeFile(OUT, text);
    console.log(`wrote ${OUT.pathname}: ${keys.length} keys, ${text.length} bytes`);
  } finally {
    direct.disconnect();
    await stack.stop();
  }
}

/** Throws unless a claim took exactly these jobs. */
function expectClaimed(jobs: Array<{ id: string }>, wanted: Array<string | undefined>): void {
  const got = jobs.map((j) => j.id).sort();
  const want = [...wanted].sort();
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`claimed ${got.join(",")}, wanted ${want.join(",")}`);
}

await main();
