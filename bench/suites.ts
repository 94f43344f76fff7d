/**
 * The measurements, one function per system and metric. Each run leaves the
 * system's consumers stopped; the caller flushes Redis between systems.
 */
import { loadavg } from "node:os";
import IORedis from "ioredis";
import { startRedis } from "../dev/redis-launcher.js";
import { normalizeBackoff } from "../src/queue/policy/backoff.js";
import type { Queue } from "../src/queue/queue.js";
import { cpuMs } from "../harness/process-cpu.js";
import { load as loadWorker, type ServedWorker } from "./floor/serve.js";
import { bull } from "./lib/bull.js";
import { nodeQueue, PREFIX, startStack, type Stack } from "./lib/delayline.js";
import { pool, sleep, until } from "../harness/util.js";
import { payload, type Infra, type Usage } from "./lib/infra.js";
import { MigrateQueue, NaiveQueue, type Peer } from "./lib/peers.js";
import { summarize } from "./stats.js";

export type SystemName = "delayline" | "bullmq" | "naive" | "migrate";
export const SYSTEMS: SystemName[] = ["delayline", "bullmq", "naive", "migrate"];

/** Producers keep this many single enqueues in flight (as cost.test.ts does). */
const IN_FLIGHT = 50;
/** Peers' sleep when a poll finds nothing, for drain and lateness (delayline's TICK_POLL_MS=100 is the comparable setting). */
export const PEER_POLL_MS = 100;

function peer(_infra: Infra, name: "naive" | "migrate", client: IORedis): Peer {
  return name === "naive" ? new NaiveQueue(client) : new MigrateQueue(client);
}

function newClient(infra: Infra): IORedis {
  return new IORedis(infra.redis.url, { maxRetriesPerRequest: null });
}

// ─── 1, 2, 9: what a job costs ──────────────────────────────────────────────

/** Per job: Redis commands (scripts' included), requests, and Redis CPU time. */
export interface CostRun {
  enqueueCommands: number;
  consumeCommands: number;
  successCommands: number;
  failedAttemptCommands: number;
  deadCommands: number;
  /** delayline: REST requests; peers: commands their client wrote (each a request over REST unless pipelined). */
  successRequests: number;
  consumeRequests: number;
  /** commandstats µs of what clients sent (scripts' inner commands not counted twice), success path. */
  successUsec: number;
  /** redis-server process CPU (INFO cpu), success path, µs. */
  successCpuUsec: number;
  /** The command mix of the success path (calls per job). */
  mix: Record<string, number>;
}

function costOf(n: number, enqueue: Usage, consume: Usage, retry: Usage, dead: Usage, f: number, requests: (u: Usage) => number): CostRun {
  const mix: Record<string, number> = {};
  for (const u of [enqueue, consume]) for (const [k, v] of Object.entries(u.byCommand)) mix[k] = (mix[k] ?? 0) + v.calls / n;
  for (const k of Object.keys(mix)) mix[k] = Math.round(mix[k]! * 1000) / 1000;
  return {
    enqueueCommands: enqueue.commands / n,
    consumeCommands: consume.commands / n,
    successCommands: (enqueue.commands + consume.commands) / n,
    failedAttemptCommands: retry.commands / f,
    deadCommands: dead.commands / f,
    successRequests: (requests(enqueue) + requests(consume)) / n,
    consumeRequests: requests(consume) / n,
    successUsec: (enqueue.topLevelUsec + consume.topLevelUsec) / n,
    successCpuUsec: (enqueue.processCpuUsec + consume.processCpuUsec) / n,
    mix,
  };
}

/** Failed attempts are retried this long after failing (a fixed backoff), so a run's two failure phases do not overlap. */
const RETRY_AFTER_MS = 1_000;

export async function costRun(infra: Infra, system: SystemName, n: number, f: number, run: number): Promise<CostRun> {
  await infra.flush();
  if (system === "delayline") {
    // A prefix per run: the Queue remembers which topics it registered per prefix.
    const queue = nodeQueue(infra.bridge.url, infra.bridgeToken, `dl:{cost${run}}`);
    await infra.resetStats();
    const now = Date.now();
    await pool(n, IN_FLIGHT, (i) => queue.enqueue({ topic: "bill", payload: payload(i), runAt: now }));
    const enqueue = await infra.usage();
    await infra.resetStats();
    const drained = await claimAll(queue, "bill", 100, "ack");
    const consume = await infra.usage();
    if (drained !== n) throw new Error(`delayline cost: drained ${drained} of ${n}`);
    const backoff = normalizeBackoff({ type: "fixed", delay: 0 });
    for (let i = 0; i < f; i += 1_000) {
      await queue.enqueueBatch(Array.from({ length: Math.min(1_000, f - i) }, (_, j) => ({ topic: "fail", payload: payload(i + j), backoff, maxAttempts: 2 })));
    }
    await infra.resetStats();
    await claimAll(queue, "fail", 100, "retry", f);
    const retry = await infra.usage();
    await infra.resetStats();
    await claimAll(queue, "fail", 100, "dead");
    const dead = await infra.usage();
    return costOf(n, enqueue, consume, retry, dead, f, (u) => u.bridgeRequests);
  }

  if (system === "bullmq") {
    const b = await bull(infra.redis.port);
    try {
      await infra.resetStats();
      const now = Date.now();
      await pool(n, IN_FLIGHT, (i) => b.add(now, payload(i)));
      const enqueue = await infra.usage();
      await infra.resetStats();
      const w = b.work(async () => {});
      await until(() => w.completed >= n, 120_000, "BullMQ to complete the cost jobs", 5);
      const consume = await infra.usage();
      await w.close();
      const failAt = Date.now();
      for (let i = 0; i < f; i += 1_000) {
        await b.addBulk(
          Array.from({ length: Math.min(1_000, f - i) }, (_, j) => ({ due: failAt, payload: payload(i + j) })),
          { attempts: 2, backoffMs: RETRY_AFTER_MS },
        );
      }
      await infra.resetStats();
      const started = Date.now();
      const fw = b.work(async () => {
        throw new Error("HTTP 503");
      });
      await until(() => fw.failed >= f, 60_000, "BullMQ's first attempts to fail", 5);
      const retry = await infra.usage();
      if (Date.now() - started > RETRY_AFTER_MS) console.warn(`bullmq cost: first attempts took longer than the retry delay; phases overlap`);
      await infra.resetStats();
      await until(() => fw.failed >= 2 * f, 60_000, "BullMQ's second attempts to fail", 5);
      const dead = await infra.usage();
      await fw.close();
      return costOf(n, enqueue, consume, retry, dead, f, (u) => u.sentCommands);
    } finally {
      await b.close();
    }
  }

  const client = newClient(infra);
  try {
    const p = peer(infra, system, client);
    await infra.resetStats();
    const now = Date.now();
    await pool(n, IN_FLIGHT, (i) => p.add(now, payload(i)));
    const enqueue = await infra.usage();
    await infra.resetStats();
    let done = 0;
    const c = p.run({ handler: () => void done++, pollMs: PEER_POLL_MS, concurrency: IN_FLIGHT, policy: { maxAttempts: 2, retryInMs: RETRY_AFTER_MS } });
    await until(() => done >= n, 120_000, `${system} to handle the cost jobs`, 2);
    // The last job's ack (migrate) leaves right after its handler returns.
    await sleep(20);
    const consume = await infra.usage();
    await c.stop();
    const failAt = Date.now();
    for (let i = 0; i < f; i += 1_000) await p.addMany(Array.from({ length: Math.min(1_000, f - i) }, (_, j) => ({ due: failAt, payload: payload(i + j) })));
    await infra.resetStats();
    let failed = 0;
    const fc = p.run({
      handler: () => {
        failed++;
        throw new Error("HTTP 503");
      },
      pollMs: PEER_POLL_MS,
      concurrency: IN_FLIGHT,
      policy: { maxAttempts: 2, retryInMs: RETRY_AFTER_MS },
    });
    await until(() => failed >= f, 60_000, `${system}'s first attempts to fail`, 2);
    await sleep(20);
    const retry = await infra.usage();
    await infra.resetStats();
    await until(() => failed >= 2 * f, 60_000, `${system}'s second attempts to fail`, 2);
    await sleep(20);
    const dead = await infra.usage();
    await fc.stop();
    if ((await p.dead()) !== f) throw new Error(`${system} cost: ${await p.dead()} dead of ${f}`);
    return costOf(n, enqueue, consume, retry, dead, f, (u) => u.sentCommands);
  } finally {
    client.disconnect();
  }
}

/** Claims and settles `topic` in chunks until nothing is due (or `limit` jobs were handled). */
export async function claimAll(queue: Queue, topic: string, chunk: number, kind: "ack" | "retry" | "dead", limit = Infinity): Promise<number> {
  let n = 0;
  for (;;) {
    const { jobs } = await queue.claim(topic, { max: chunk, leaseMs: 60_000 });
    if (jobs.length === 0) return n;
    await queue.settle(
      topic,
      jobs.map((j) =>
        kind === "ack"
          ? { id: j.id, attempt: j.attempt, kind }
          : kind === "retry"
            ? { id: j.id, attempt: j.attempt, kind, at: Date.now(), error: "HTTP 503" }
            : { id: j.id, attempt: j.attempt, kind, error: "HTTP 500" },
      ),
    );
    n += jobs.length;
    if (n >= limit) return n;
  }
}

// ─── 3, 6: backlog drain and memory per scheduled job ───────────────────────

export interface DrainRun {
  jobs: number;
  /** Jobs per second from the moment all fell due until the last one was handled. */
  jobsPerSec: number;
  /** Bytes of Redis memory (used_memory) per scheduled job, before any was due. */
  bytesPerJob: number;
  /** Per job while draining: commands, and requests (delayline: REST requests; peers: commands sent). */
  commandsPerJob: number;
  requestsPerJob: number;
  /** Jobs were still being stored when they fell due (the measurement would be unfair): the margin was too short. */
  overran: boolean;
}

/** How long storing jobs took per job in the previous run, to place the due time just after storing ends. */
const enqueueMsPerJob = new Map<SystemName, number>();

function dueAfterEnqueue(system: SystemName, n: number): number {
  const perJob = enqueueMsPerJob.get(system) ?? 0.2;
  return Date.now() + Math.ceil(perJob * n * 1.25) + 750;
}

/**
 * N jobs, all due, drained by a no-op handler: N / (time from when all were
 * due and a consumer was there, to the last handled job). delayline's tick
 * is always running (its cron), so its jobs fall due at one instant T just
 * after they are stored; the peers' consumers start once their jobs are
 * stored and due. delayline needs the drain stack (bench-noop topic) running.
 */
export async function drainRun(infra: Infra, system: SystemName, n: number, stack?: Stack): Promise<DrainRun> {
  let t = system === "delayline" ? dueAfterEnqueue(system, n) : Date.now() + 1_000;
  let overran = false;
  const stored = async (store: () => Promise<void>) => {
    const before = await infra.usedMemory();
    const started = Date.now();
    await store();
    enqueueMsPerJob.set(system, (Date.now() - started) / n);
    overran = system === "delayline" && Date.now() >= t;
    const memory = (await infra.usedMemory()) - before;
    // A peer's consumer starts now, or when its jobs fall due.
    if (system !== "delayline") t = Math.max(t, Date.now());
    return memory;
  };
  const result = (memory: number, doneAt: number, usage: Usage, requests: number): DrainRun => ({
    jobs: n,
    jobsPerSec: n / ((doneAt - t) / 1_000),
    bytesPerJob: memory / n,
    commandsPerJob: usage.commands / n,
    requestsPerJob: requests / n,
    overran,
  });
  const resetAtDue = async () => {
    await sleep(Math.max(0, t - Date.now() - 30));
    await infra.resetStats();
  };

  if (system === "delayline") {
    if (!stack) throw new Error("the delayline drain needs its stack");
    const queue = nodeQueue(infra.bridge.url, infra.bridgeToken, PREFIX);
    await queue.configureTopic("bench-noop", {});
    // Counted before storing: jobs stored late (a loaded machine) fall due, and are handled, while the rest are stored.
    const start = (await stack.samples()).handled;
    const memory = await stored(async () => {
      const batches = Math.ceil(n / 1_000);
      await pool(batches, 4, (b) =>
        queue.enqueueBatch(
          Array.from({ length: Math.min(1_000, n - b * 1_000) }, (_, j) => ({ topic: "bench-noop", runAt: t, payload: payload(b * 1_000 + j) })),
        ),
      );
    });
    await resetAtDue();
    let doneAt = 0;
    // Asked rarely: the Worker is busy draining, and the answer carries the
    // time its handler saw the last job.
    await until(
      async () => {
        const s = await stack.samples();
        doneAt = s.lastAt;
        return s.handled - start >= n;
      },
      300_000,
      "delayline to drain the backlog",
      500,
    );
    const usage = await infra.usage();
    return result(memory, doneAt, usage, usage.bridgeRequests);
  }

  if (system === "bullmq") {
    const b = await bull(infra.redis.port);
    try {
      const memory = await stored(async () => {
        await pool(Math.ceil(n / 1_000), 4, (k) =>
          b.addBulk(Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({ due: t, payload: payload(k * 1_000 + j) }))),
        );
      });
      let doneAt = 0;
      await resetAtDue();
      await sleep(Math.max(0, t - Date.now()));
      t = Date.now();
      const w = b.work(async () => {});
      w.worker.on("completed", () => {
        if (w.completed >= n) doneAt = Date.now();
      });
      await until(() => doneAt > 0, 300_000, "BullMQ to drain the backlog", 5);
      const usage = await infra.usage();
      await w.close();
      return result(memory, doneAt, usage, usage.sentCommands);
    } finally {
      await b.close();
    }
  }

  const client = newClient(infra);
  try {
    const p = peer(infra, system, client);
    const memory = await stored(async () => {
      await pool(Math.ceil(n / 1_000), 4, (k) =>
        p.addMany(Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({ due: t, payload: payload(k * 1_000 + j) }))),
      );
    });
    let done = 0;
    let doneAt = 0;
    await resetAtDue();
    await sleep(Math.max(0, t - Date.now()));
    t = Date.now();
    const c = p.run({
      handler: () => {
        if (++done >= n) doneAt = Date.now();
      },
      pollMs: PEER_POLL_MS,
      concurrency: IN_FLIGHT,
      policy: { maxAttempts: 1, retryInMs: 0 },
    });
    await until(() => doneAt > 0, 300_000, `${system} to drain the backlog`, 5);
    const usage = await infra.usage();
    await c.stop();
    return result(memory, doneAt, usage, usage.sentCommands);
  } finally {
    client.disconnect();
  }
}

// ─── 4: lateness ────────────────────────────────────────────────────────────

export interface LatenessRun {
  jobs: number;
  handled: number;
  duplicates: number;
  early: number;
  p50: number;
  p99: number;
  max: number;
  /** delayline only: the tick's requests and Redis commands per job over the run. */
  requestsPerJob?: number;
  commandsPerJob?: number;
}

/** Jobs fall due from this long after they start being stored (storing 10,000 through the producer takes one to two seconds here). */
const LEAD_MS = 3_000;

/**
 * Node's fetch now and then found a kept-alive connection to the local Worker
 * closed under it (under `wrangler dev`) ("fetch failed"); one lost request must not void a 20 s
 * run. A batch whose reply was lost is sent again: if the first went
 * through, its jobs are not this run's (their ids never arrived) and are not counted.
 */
async function retried<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 3 || !(err instanceof TypeError)) throw err;
      await sleep(100);
    }
  }
}

/**
 * `n` jobs due uniformly over `spreadMs`, starting 3 s after they start
 * being stored; lateness = when the handler ran − when the job was due. delayline:
 * the bench-lateness handler in the Worker, jobs stored through the producer.
 */
export async function latenessRun(infra: Infra, system: SystemName, n: number, spreadMs: number, stack?: Stack): Promise<LatenessRun> {
  const start = Date.now() + LEAD_MS;
  const dueOf = (i: number) => start + Math.floor((i * spreadMs) / n);
  const seen = new Map<string, number>();
  let lateness: number[] = [];
  let duplicates = 0;
  // Only this run's jobs count (a run tried again must not count the first try's).
  const expected = new Set<string>();
  const note = (id: string, due: number, at: number) => {
    if (!expected.has(id)) return;
    if (seen.has(id)) {
      duplicates++;
      return;
    }
    seen.set(id, at);
    lateness.push(at - due);
  };
  const finish = (extra: Partial<LatenessRun> = {}): LatenessRun => {
    const s = summarize(lateness);
    const early = lateness.filter((l) => l < 0).length;
    lateness = [];
    return { jobs: n, handled: seen.size, duplicates, early, p50: s.p50, p99: s.p99, max: s.max, ...extra };
  };
  const deadline = start + spreadMs + 30_000;

  if (system === "delayline") {
    if (!stack) throw new Error("the delayline lateness run needs its stack");
    await stack.samples();
    await pool(Math.ceil(n / 1_000), 4, async (k) => {
      const batch = Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({
        topic: "bench-lateness",
        runAt: dueOf(k * 1_000 + j),
        payload: payload(k * 1_000 + j),
      }));
      for (const r of await retried(() => stack.client.jobs.enqueueBatch(batch))) expected.add(r.id);
    });
    if (Date.now() > start) console.warn("delayline lateness: storing the jobs took longer than the lead");
    await sleep(Math.max(0, start - Date.now() - 200));
    await infra.resetStats();
    while (seen.size < n && Date.now() < deadline) {
      await sleep(250);
      for (const [id, due, at] of (await retried(() => stack.samples())).samples) note(id, due, at);
    }
    const usage = await infra.usage();
    return finish({ requestsPerJob: usage.bridgeRequests / n, commandsPerJob: usage.commands / n });
  }

  if (system === "bullmq") {
    const b = await bull(infra.redis.port);
    try {
      const w = b.work(async (job) => {
        const at = Date.now();
        note(job.id!, b.due.get(job.id!) ?? Number.NaN, at);
      });
      for (let i = 0; i < n; i += 1_000)
        await b.addBulk(Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({ due: dueOf(i + j), payload: payload(i + j) })));
      // This run's queue object knows only this run's jobs.
      for (const id of b.due.keys()) expected.add(id);
      if (Date.now() > start) console.warn("bullmq lateness: storing the jobs took longer than the lead");
      await until(() => seen.size >= n || Date.now() > deadline, spreadMs + 60_000, "BullMQ lateness jobs", 100);
      await w.close();
      return finish();
    } finally {
      await b.close();
    }
  }

  const client = newClient(infra);
  try {
    const p = peer(infra, system, client);
    // The peers' job ids are their own; the payload's index identifies a job here.
    const c = p.run({
      handler: (job) => {
        const i = (job.payload as { i: number }).i;
        note(String(i), job.due, Date.now());
      },
      pollMs: PEER_POLL_MS,
      concurrency: IN_FLIGHT,
      policy: { maxAttempts: 1, retryInMs: 0 },
    });
    // The payload's index names a job; the caller flushes Redis before each peer run.
    for (let i = 0; i < n; i++) expected.add(String(i));
    for (let i = 0; i < n; i += 1_000)
      await p.addMany(Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({ due: dueOf(i + j), payload: payload(i + j) })));
    await until(() => seen.size >= n || Date.now() > deadline, spreadMs + 60_000, `${system} lateness jobs`, 100);
    await c.stop();
    return finish();
  } finally {
    client.disconnect();
  }
}

// ─── 5: enqueue throughput ──────────────────────────────────────────────────

export interface EnqueueRun {
  singlePerSec: number;
  batchedPerSec: number;
}

/**
 * Jobs due in an hour (nothing runs meanwhile): `single` one per call with
 * 50 calls in flight, then `batched` in calls of 1,000 (4 in flight).
 * delayline: through the producer (POST /v1/jobs, /v1/jobs/batch) in workerd.
 */
export async function enqueueRun(infra: Infra, system: SystemName, single: number, batched: number, stack?: Stack): Promise<EnqueueRun> {
  const due = Date.now() + 3_600_000;
  const timed = async (n: number, work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    return n / ((performance.now() - started) / 1_000);
  };
  const batches = Math.ceil(batched / 1_000);
  const size = (k: number) => Math.min(1_000, batched - k * 1_000);

  if (system === "delayline") {
    if (!stack) throw new Error("the delayline enqueue run needs its stack");
    const dl = stack.client;
    const runAt = new Date(due).toISOString();
    return {
      singlePerSec: await timed(single, () => pool(single, IN_FLIGHT, (i) => dl.jobs.enqueue({ topic: "bench-enqueue", runAt, payload: payload(i) }))),
      batchedPerSec: await timed(batched, () =>
        pool(batches, 4, (k) =>
          dl.jobs.enqueueBatch(Array.from({ length: size(k) }, (_, j) => ({ topic: "bench-enqueue", runAt, payload: payload(k * 1_000 + j) }))),
        ),
      ),
    };
  }
  if (system === "bullmq") {
    const b = await bull(infra.redis.port);
    try {
      return {
        singlePerSec: await timed(single, () => pool(single, IN_FLIGHT, (i) => b.add(due, payload(i)))),
        batchedPerSec: await timed(batched, () =>
          pool(batches, 4, (k) => b.addBulk(Array.from({ length: size(k) }, (_, j) => ({ due, payload: payload(k * 1_000 + j) })))),
        ),
      };
    } finally {
      await b.close();
    }
  }
  const client = newClient(infra);
  try {
    const p = peer(infra, system, client);
    return {
      singlePerSec: await timed(single, () => pool(single, IN_FLIGHT, (i) => p.add(due, payload(i)))),
      batchedPerSec: await timed(batched, () =>
        pool(batches, 4, (k) => p.addMany(Array.from({ length: size(k) }, (_, j) => ({ due, payload: payload(k * 1_000 + j) })))),
      ),
    };
  } finally {
    client.disconnect();
  }
}

// ─── 7: scale ───────────────────────────────────────────────────────────────

/** Stores `n` jobs due in a day in delayline's `bench-scale` topic (1,000 per call, 2 calls in flight). */
export async function fillFuture(queue: Queue, n: number): Promise<void> {
  const due = Date.now() + 86_400_000;
  await pool(Math.ceil(n / 1_000), 2, (k) =>
    queue.enqueueBatch(
      Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({ topic: "bench-scale", runAt: due, payload: payload(k * 1_000 + j) })),
    ),
  );
}

export interface ScaleRun {
  jobsPerSec: number;
  /** Redis server time (commandstats) of the claims and settles, per job. */
  usecPerJob: number;
}

/**
 * Claim throughput of delayline's Queue in one topic that also holds the
 * future-dated jobs: `n` due jobs, claimed and acked in chunks of 100 (the
 * tick's default TICK_CHUNK). The queue talks to Redis directly
 * ({@link directQueue}): what grows with the future jobs is Redis' work, and
 * through the bridge the machine's load would drown it.
 */
export async function scaleRun(infra: Infra, queue: Queue, n: number, topic = "bench-scale"): Promise<ScaleRun> {
  const now = Date.now();
  for (let i = 0; i < n; i += 1_000) {
    await queue.enqueueBatch(Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({ topic, runAt: now, payload: payload(i + j) })));
  }
  await infra.resetStats();
  const started = performance.now();
  const handled = await claimAll(queue, topic, 100, "ack");
  const ms = performance.now() - started;
  const usage = await infra.usage();
  if (handled !== n) throw new Error(`scale: claimed ${handled} of ${n}`);
  return { jobsPerSec: n / (ms / 1_000), usecPerJob: usage.topLevelUsec / n };
}

/**
 * One scale run: `small` and `large` (two deployments) alternate five times
 * in slices of n/5 (`order` first, then reversed, and so on), and each one's
 * median slice is kept: a second of load from elsewhere then spoils one
 * slice, not the comparison. Returns [small, large].
 */
export async function scalePair(infra: Infra, small: Queue, large: Queue, order: Queue[], n: number, topic = "bench-scale"): Promise<[ScaleRun, ScaleRun]> {
  const slices = new Map<Queue, ScaleRun[]>([
    [small, []],
    [large, []],
  ]);
  for (let k = 0; k < 5; k++) {
    for (const q of k % 2 ? [...order].reverse() : order) slices.get(q)!.push(await scaleRun(infra, q, Math.ceil(n / 5), topic));
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const of = (runs: ScaleRun[]): ScaleRun => ({ jobsPerSec: median(runs.map((r) => r.jobsPerSec)), usecPerJob: median(runs.map((r) => r.usecPerJob)) });
  return [of(slices.get(small)!), of(slices.get(large)!)];
}

// ─── 8: idle cost ───────────────────────────────────────────────────────────

/**
 * Redis commands per minute with nothing due, each system on a redis-server
 * of its own, all four at once (idle systems barely use the CPU, and one
 * minute each in turn would take four). Each has one job due in a day, so
 * it knows a queue; peers poll every `peerPollMs`, delayline runs as
 * `npm start` does with its default settings.
 */
export async function idleRun(windowMs: number, peerPollMs: number, log: (line: string) => void, logFile?: string): Promise<Record<SystemName, number>> {
  const servers = await Promise.all(SYSTEMS.map(() => startRedis({ appendfsync: "everysec" })));
  const meters = servers.map((s) => new IORedis(s.url, { maxRetriesPerRequest: null }));
  const stops: Array<() => Promise<void>> = [];
  try {
    const due = Date.now() + 86_400_000;
    // delayline: the whole stack with its own bridge, cron driver and default settings.
    const stack = await startStack({ redisUrl: servers[0]!.url }, {}, log, logFile);
    stops.push(() => stack.stop());
    await stack.client.jobs.enqueue({ topic: "idle", runAt: new Date(due).toISOString(), payload: payload(0) });
    const b = await bull(servers[1]!.port);
    stops.push(() => b.close());
    await b.add(due, payload(0));
    b.work(async () => {});
    for (const [k, name] of [
      [2, "naive"],
      [3, "migrate"],
    ] as const) {
      const client = new IORedis(servers[k]!.url, { maxRetriesPerRequest: null });
      const p = name === "naive" ? new NaiveQueue(client) : new MigrateQueue(client);
      await p.add(due, payload(0));
      const c = p.run({ handler: () => {}, pollMs: peerPollMs, concurrency: 1, policy: { maxAttempts: 1, retryInMs: 0 } });
      stops.push(async () => {
        await c.stop();
        client.disconnect();
      });
    }
    // Settle into idleness (delayline's tick marks itself asleep after a few empty polls), and into the
    // cron's minute: the first invocation's window runs from the stack's start, not from a minute, so
    // the next one waits for it (asking for the lock every 5 s) for as long as the start was into its
    // minute. The window is measured from 5 s past the second minute boundary, a minute like the later
    // ones. (It still varies between runs, 63–82 commands in two: not explained yet.)
    const minute = 60_000;
    await sleep(Math.max(5_000, Math.floor(Date.now() / minute) * minute + 2 * minute + 5_000 - Date.now()));
    await Promise.all(meters.map((m) => m.config("RESETSTAT")));
    await sleep(windowMs);
    const counts = await Promise.all(
      meters.map(async (m) => {
        let calls = 0;
        for (const line of (await m.info("commandstats")).split("\n")) {
          const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
          if (match && !match[1]!.startsWith("config") && match[1] !== "info") calls += Number(match[2]);
        }
        return (calls * 60_000) / windowMs;
      }),
    );
    return Object.fromEntries(SYSTEMS.map((s, i) => [s, counts[i]!])) as Record<SystemName, number>;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    for (const m of meters) m.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

// ─── 10: single enqueue at the architecture's floor ─────────────────────────

/** The single-enqueue row's systems: delayline's Worker, the floor Worker (bench/floor/), BullMQ. */
export type FloorSystem = "delayline" | "floor" | "bullmq";
export const FLOOR_SYSTEMS: FloorSystem[] = ["delayline", "floor", "bullmq"];
/** HTTP connections (the Workers) or `add` promises in flight (BullMQ). */
export const FLOOR_CONNECTIONS = 100;

export interface FloorEnqueueRun {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  /** The Workers: workerd's CPU time per 2xx answer, ms (user + system, from /proc). */
  workerdCpuMs?: number;
  /** Non-2xx answers and transport errors (BullMQ: rejected adds). */
  failed: number;
  /** The machine's 1-minute load average when the run started. */
  load: number;
}

/**
 * One job per request, due in an hour, for `seconds`: the Workers under
 * autocannon (`FLOOR_CONNECTIONS` keep-alive connections, `POST /v1/jobs`
 * with a 100-byte payload), BullMQ with as many `queue.add` promises in
 * flight on the same redis-server.
 */
export async function floorEnqueueRun(
  infra: Infra,
  system: FloorSystem,
  seconds: number,
  workers: Record<"delayline" | "floor", ServedWorker>,
): Promise<FloorEnqueueRun> {
  const load = loadavg()[0]!;
  if (system === "bullmq") {
    const b = await bull(infra.redis.port);
    try {
      const due = Date.now() + 3_600_000;
      const latencies: number[] = [];
      let failed = 0;
      let i = 0;
      const started = performance.now();
      const end = started + seconds * 1_000;
      await Promise.all(
        Array.from({ length: FLOOR_CONNECTIONS }, async () => {
          while (performance.now() < end) {
            const t = performance.now();
            await b.add(due, payload(i++)).then(
              () => latencies.push(performance.now() - t),
              () => void failed++,
            );
          }
        }),
      );
      const s = summarize(latencies);
      return { perSec: latencies.length / ((performance.now() - started) / 1_000), p50Ms: s.p50, p99Ms: s.p99, failed, load };
    } finally {
      await b.close();
    }
  }
  const worker = workers[system];
  const body = JSON.stringify({ topic: "bench-enqueue", payload: payload(0), delay: "1h" });
  const cpuBefore = cpuMs(worker.pid);
  const r = await loadWorker(`${worker.url}/v1/jobs`, body, FLOOR_CONNECTIONS, seconds);
  const failed = r.non2xx + r.errors;
  // A run that answered errors measured something else; repeat() tries it once more.
  if (failed > r.ok / 1_000) throw new Error(`${system}: ${r.non2xx} non-2xx answers and ${r.errors} errors for ${r.ok} 2xx`);
  return { perSec: r.perSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, workerdCpuMs: (cpuMs(worker.pid) - cpuBefore) / r.ok, failed, load };
}
