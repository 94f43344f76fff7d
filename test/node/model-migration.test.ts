/**
 * A deployment the hash model wrote (test/fixtures/model-v1.json, dumped by
 * the code of that model) keeps every job through the move to per-job keys
 * (src/queue/model.ts, migrate-model.lua), which its first operation makes:
 * every job reads as it did, the schedule keeps its order, dead letters stay
 * listed, an idempotency key still repeats, claims deliver each due job
 * once, and no key of the old model is left. And a job an isolate of the
 * old version enqueued after the move (record in `<p>:jobs` only) is still
 * delivered, while a due id found in neither model is dropped. Two isolates
 * migrating the same deployment at once (two module instances of the queue)
 * lose and repeat nothing, with payloads large enough that calls stop at
 * their byte budget.
 */
import { readFile } from "node:fs/promises";
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, inject, it as onAnyRedis, vi } from "vitest";
import { newJobId } from "../../src/queue/ids.js";
import { Queue } from "../../src/queue/queue.js";
import { createRedis } from "../../src/queue/redis.js";
import { type Dump, dumpKeys, loadDump } from "../fixtures/load-dump.js";

// Every test of the file skips on a Redis Cluster (TEST_REDIS=cluster): it loads, reads and clears v1 dumps
// through a connection to one redis-server (SCAN, pipelines of several keys), and on a cluster their master may be another.
const it = onAnyRedis.skipIf(inject("redisCluster"));

interface ExpectedJob {
  name: string;
  stateBeforeDeadLetterRead: string;
  state: string;
  attempts: number;
  payload: unknown;
  dueAt: number | null;
  lastError: string | null;
  snapshot: Record<string, unknown> | null;
}
interface Expected {
  jobs: Record<string, ExpectedJob>;
  deadLetters: Record<string, { ids: string[]; entries: Array<Record<string, unknown> & { job: Record<string, unknown> }> }>;
  scheduled: Record<string, string[]>;
  inflight: Record<string, string[]>;
  idempotency: Record<string, Record<string, string>>;
}

const RUN = `${process.pid}-${Date.now().toString(36)}`;
let direct: IORedis;
let dump: Dump;
const prefixes: string[] = [];

beforeAll(async () => {
  direct = new IORedis(inject("redisUrl"));
  dump = JSON.parse(await readFile(new URL("../fixtures/model-v1.json", import.meta.url), "utf8")) as Dump;
});
afterAll(async () => {
  for (const p of prefixes) {
    const left = (await dumpKeys(direct, p)).map((k) => k.key);
    if (left.length > 0) await direct.del(...left);
  }
  direct.disconnect();
});

function queueAt(prefix: string, clock: { ms: number }): Queue {
  prefixes.push(prefix);
  const redis = createRedis({ redisUrl: inject("bridgeUrl"), redisToken: inject("bridgeToken"), redisTimeoutMs: 30_000 });
  return new Queue({ redis, prefix, now: () => clock.ms });
}

/** Every key of the hash model still under `prefix`. */
async function legacyKeys(prefix: string): Promise<string[]> {
  const names = (await dumpKeys(direct, prefix)).map((k) => k.key.slice(prefix.length));
  return names.filter((k) => k === ":jobs" || k === ":meta" || /^:done:\d+$/.test(k) || /:dead:entries$/.test(k));
}

it("the v1 dump reads the same after the first operation moves it, claims deliver each due job once, and no old key is left", { timeout: 60_000 }, async () => {
  const prefix = `dl:{m3-v1-${RUN}}`;
  await loadDump(direct, dump, prefix);
  const clock = { ms: dump.clockMs };
  const queue = queueAt(prefix, clock);
  const want = dump.expect as Expected;
  const topics = Object.keys(want.scheduled);

  // Each job as the hash model's code read it before any dead-letter read (the first get migrates).
  for (const [id, job] of Object.entries(want.jobs)) {
    const got = await queue.get(id);
    expect(got, job.name).not.toBeNull();
    expect({ state: got!.state, attempts: got!.attempts, payload: got!.payload }, job.name).toEqual({
      state: job.stateBeforeDeadLetterRead,
      attempts: job.attempts,
      payload: job.payload,
    });
  }
  expect(await direct.get(`${prefix}:model`)).toBe("2");

  for (const topic of topics) {
    const dead = await queue.deadLetters(topic, { limit: 100 });
    expect(
      dead.entries.map((e) => ({ ...e, job: { ...e.job, payload: "(see jobs)" } })),
      topic,
    ).toEqual(want.deadLetters[topic]!.entries);
    for (const e of dead.entries) expect(e.job.payload, e.id).toEqual(want.jobs[e.id]!.payload);
    expect(
      (await queue.listJobs(topic, { state: "scheduled", limit: 100 })).jobs.map((j) => j.id),
      topic,
    ).toEqual(want.scheduled[topic]);
    expect(
      (await queue.listJobs(topic, { state: "inflight", limit: 100 })).jobs.map((j) => j.id),
      topic,
    ).toEqual(want.inflight[topic]);
  }
  for (const [id, job] of Object.entries(want.jobs)) {
    const got = await queue.get(id);
    expect(got, job.name).not.toBeNull();
    expect({ ...got!, payload: "(see payload)" }, job.name).toEqual(job.snapshot);
    expect(got!.payload, job.name).toEqual(job.payload);
  }

  // An idempotency key of the old model still repeats its job.
  for (const [topic, byKey] of Object.entries(want.idempotency)) {
    for (const [key, id] of Object.entries(byKey)) {
      const again = await queue.enqueue({ topic, payload: { n: "again" }, idempotencyKey: key });
      expect(again, key).toMatchObject({ id, deduplicated: true });
    }
  }

  // Claims, an hour apart so every due time and lease deadline passes, deliver each scheduled and in-flight job once.
  const delivered = new Map<string, number>();
  for (const topic of ["push-a", "pull-b"]) {
    const mode = topic === "pull-b" ? "pull" : "push";
    for (let round = 0; round < 60; round++) {
      clock.ms += 3_600_000;
      const claim = await queue.claim(topic, { max: 100, leaseMs: 60_000, mode });
      for (const job of claim.jobs) delivered.set(job.id, (delivered.get(job.id) ?? 0) + 1);
      if (claim.jobs.length > 0)
        await queue.settle(
          topic,
          claim.jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
        );
      if (claim.jobs.length === 0 && claim.nextDueAt === null && (await queue.listJobs(topic, { state: "inflight" })).jobs.length === 0) break;
    }
  }
  const due = ["push-a", "pull-b"].flatMap((t) => [...want.scheduled[t]!, ...want.inflight[t]!]);
  expect(Object.fromEntries(delivered)).toEqual(Object.fromEntries(due.map((id) => [id, 1])));

  expect(await legacyKeys(prefix)).toEqual([]);
  expect(await direct.get(`${prefix}:model`)).toBe("2");
});

it("a job enqueued into the old hash after the move is delivered; a due id found in neither model is dropped", { timeout: 60_000 }, async () => {
  const prefix = `dl:{m3-orphan-${RUN}}`;
  const clock = { ms: dump.clockMs };
  const queue = queueAt(prefix, clock);
  await queue.configureTopic("pull-o", { mode: "pull" });
  expect(await direct.get(`${prefix}:model`)).toBe("2");

  // As an isolate of the old version enqueues: the record into <p>:jobs, the id into the due set.
  const orphan = newJobId("pull-o", clock.ms);
  const ghost = newJobId("pull-o", clock.ms);
  const record = JSON.stringify({ payload: { n: 1.1234567890123457, text: "héllo ✓" }, createdAt: clock.ms });
  await direct.hset(`${prefix}:jobs`, orphan, record);
  await direct.zadd(`${prefix}:t:pull-o:due`, clock.ms, orphan, clock.ms, ghost);

  const delivered: string[] = [];
  for (let round = 0; round < 5 && delivered.length === 0; round++) {
    const claim = await queue.claim("pull-o", { max: 10, leaseMs: 60_000, mode: "pull" });
    for (const job of claim.jobs) {
      delivered.push(job.id);
      expect(job.record.payload).toEqual({ n: 1.1234567890123457, text: "héllo ✓" });
      expect(await queue.ack(job.id, job.attempt)).toBe("acked");
    }
  }
  expect(delivered).toEqual([orphan]);
  expect((await queue.claim("pull-o", { max: 10, leaseMs: 60_000, mode: "pull" })).jobs).toEqual([]);
  expect(await queue.get(ghost)).toBeNull();
  expect(await direct.zscore(`${prefix}:t:pull-o:due`, ghost)).toBeNull();
  expect((await queue.get(orphan))?.state).toBe("succeeded");
  expect(await legacyKeys(prefix)).toEqual([]);
});

it("two isolates migrating at once lose and repeat no job, and large payloads move in calls bounded by bytes", { timeout: 120_000 }, async () => {
  const prefix = `dl:{m3-race-${RUN}}`;
  await loadDump(direct, dump, prefix);
  const clock = { ms: dump.clockMs };
  // Old jobs of a topic of their own: many small ones (several batches) and some of 200 KB (past a call's byte budget).
  const bulk = new Map<string, unknown>();
  const write = direct.pipeline();
  for (let i = 0; i < 640; i++) {
    const id = newJobId("bulk", clock.ms - 1_000);
    const payload = i % 25 === 0 ? { i, blob: "x".repeat(200_000) } : { i, n: 0.1 + i / 7 };
    bulk.set(id, payload);
    write.hset(`${prefix}:jobs`, id, JSON.stringify({ payload, createdAt: clock.ms - 1_000 }));
    write.zadd(`${prefix}:t:bulk:due`, clock.ms - 1_000, id);
  }
  write.sadd(`${prefix}:topics`, "bulk");
  await write.exec();

  // Two isolates: each its own module instance of the queue, so each migrates.
  const first = queueAt(prefix, clock);
  vi.resetModules();
  const other = await import("../../src/queue/queue.js");
  const second = new other.Queue({
    redis: createRedis({ redisUrl: inject("bridgeUrl"), redisToken: inject("bridgeToken"), redisTimeoutMs: 30_000 }),
    prefix,
    now: () => clock.ms,
  });
  const [id1, id2] = [...bulk.keys()];
  await Promise.all([first.get(id1!), second.get(id2!)]);
  expect(await legacyKeys(prefix)).toEqual([]);
  expect(await direct.get(`${prefix}:model`)).toBe("2");

  const want = dump.expect as Expected;
  for (const [id, job] of Object.entries(want.jobs)) {
    const got = await second.get(id);
    expect({ state: got?.state, attempts: got?.attempts, payload: got?.payload }, job.name).toEqual({
      state: job.stateBeforeDeadLetterRead,
      attempts: job.attempts,
      payload: job.payload,
    });
  }
  for (const [id, payload] of bulk) {
    const got = await first.get(id);
    expect({ state: got?.state, payload: got?.payload }, id).toEqual({ state: "scheduled", payload });
  }

  // Each delivered once.
  const delivered = new Map<string, number>();
  for (let round = 0; round < 50; round++) {
    const claim = await first.claim("bulk", { max: 100, leaseMs: 600_000 });
    for (const job of claim.jobs) delivered.set(job.id, (delivered.get(job.id) ?? 0) + 1);
    if (claim.jobs.length > 0)
      await first.settle(
        "bulk",
        claim.jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
      );
    if (claim.nextDueAt === null) break;
  }
  expect(delivered.size).toBe(bulk.size);
  expect([...delivered.values()].every((n) => n === 1)).toBe(true);
});

it("whichever operation comes first migrates before it reads: a dead letter by id, a pull consumer's nack, a claim", { timeout: 60_000 }, async () => {
  const want = dump.expect as Expected;
  const names = (dump.expect as { names: Record<string, string> }).names;
  const fresh = async (name: string) => {
    const prefix = `dl:{m3-first-${name}-${RUN}}`;
    await loadDump(direct, dump, prefix);
    return queueAt(prefix, { ms: dump.clockMs });
  };

  const letter = await (await fresh("letter")).deadLetter(names.pushDead1!);
  const wanted = want.deadLetters["push-a"]!.entries.find((e) => e.id === names.pushDead1)!;
  expect({ ...letter, job: { ...letter?.job, payload: "(see jobs)" } }).toEqual(wanted);

  // The pull job in flight (attempt 1 of 2) fails: retried, as its meta says attempt 1.
  const nacked = await fresh("nack");
  expect(await nacked.nack(names.pullInflight!, 1, { error: "consumer: later" })).toBe("retry");
  expect((await nacked.get(names.pullInflight!))?.state).toBe("scheduled");

  const claimed = await (await fresh("claim")).claim("pull-b", { max: 10, leaseMs: 60_000, mode: "pull" });
  expect(claimed.jobs.map((j) => ({ id: j.id, attempt: j.attempt, payload: j.record.payload }))).toEqual([
    { id: names.pullRetried, attempt: 2, payload: want.jobs[names.pullRetried!]!.payload },
  ]);
});
