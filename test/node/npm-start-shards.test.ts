/**
 * `DELAYLINE_LOCAL_SHARDS=3 npm start`: three shards, each a redis-server
 * behind a bridge of its own. Each topic's jobs are stored on its shard's
 * redis-server alone and delivered; once one shard's redis-server is shut
 * down, npm start keeps running: that shard's enqueues answer 503 naming it,
 * the others' jobs are still delivered, and a SIGTERM still stops every
 * process it started. Combinations that put the shards elsewhere are refused
 * before anything starts.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../../dev/ports.js";
import { descendantsOf, isAlive } from "../../dev/process-tree.js";
import { Api } from "../../harness/api.js";
import { startExpectingExit, startNpmStart, type NpmStart, type StackShard } from "../../harness/npm-start.js";
import { requestLog, startReceiver, type Receiver } from "../../harness/receiver.js";
import { until } from "../../harness/util.js";
import { placeTopic } from "../../src/queue/placement.js";

const SHARDS = ["main", "s2", "s3"];
/** A topic whose name begins with `tag` that rendezvous hashing places on `shard` among the stack's three. */
const topicOn = (shard: string, tag: string) => Array.from({ length: 200 }, (_, i) => `${tag}-${i}`).find((t) => placeTopic(t, SHARDS) === shard)!;

let stack: NpmStart;
let receiver: Receiver;
const received = requestLog();
let api: Api;

beforeAll(async () => {
  receiver = await startReceiver([received]);
  stack = await startNpmStart({ name: "shards", localShards: 3 });
  api = new Api(stack.url, stack.token);
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

const shard = (name: string): StackShard => stack.shards.find((s) => s.name === name)!;

/** Enqueues a job due now on `topic`, delivered to the receiver at /<topic>; the API's answer. */
const enqueue = (topic: string, payload: string) => api.request("POST", "/v1/jobs", { topic, payload, target: { url: `${receiver.url}/${topic}` } });

/** Waits until the receiver got the job whose payload is `payload` at /<topic>. */
const delivered = (topic: string, payload: string) =>
  until(() => received.deliveries.some((d) => d.path === `/${topic}` && d.body === JSON.stringify(payload)), 60_000, `the job ${payload} on ${topic}`, 100);

/** Every key of a shard's redis-server (a fresh one: a handful). */
async function keysOf(name: string): Promise<string[]> {
  const redis = new IORedis({ host: "127.0.0.1", port: shard(name).redisPort, maxRetriesPerRequest: 0 });
  try {
    return await redis.keys("*");
  } finally {
    redis.disconnect();
  }
}

/** Whether a key belongs to `topic`: `<prefix>:t:<topic>:…`, or a job of another shard than main, `<prefix>:t:<shard>~<topic>:…`. */
const ofTopic = (key: string, topic: string) => key.includes(`:t:${topic}:`) || key.includes(`~${topic}:`);

it("lists its three shards, each with a redis-server and a bridge of its own", () => {
  expect(stack.shards.map((s) => s.name)).toEqual(SHARDS);
  expect(new Set(stack.shards.map((s) => s.redisPort)).size).toBe(3);
  expect(new Set(stack.shards.map((s) => s.bridgeUrl)).size).toBe(3);
  expect(shard("main").redisPort).toBe(stack.redisPort);
  for (const s of stack.shards) expect(isAlive(s.redisPid)).toBe(true);
  expect(stack.output()).toMatch(/shards +main +redis port \d+ pid \d+ +bridge http:\/\/127\.0\.0\.1:\d+/);
});

it("delivers a job of a topic on each shard, each stored on its own shard's redis-server alone", { timeout: 90_000 }, async () => {
  const topics = SHARDS.map((s) => topicOn(s, "deliver"));
  for (const [i, topic] of topics.entries()) {
    const r = await enqueue(topic, `deliver-${i}`);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    // An id names its shard, but main's.
    expect(r.body.id.startsWith(i === 0 ? `${topic}.` : `${SHARDS[i]}~${topic}.`)).toBe(true);
  }
  for (const [i, topic] of topics.entries()) await delivered(topic, `deliver-${i}`);
  for (const [i, name] of SHARDS.entries()) {
    const keys = await keysOf(name);
    // Every key under the shard's own prefix: main's is DELAYLINE_PREFIX's default, dl:{main}.
    expect(keys.filter((k) => !k.startsWith(`dl:{${name}}:`))).toEqual([]);
    for (const [j, topic] of topics.entries()) expect([name, topic, keys.some((k) => ofTopic(k, topic))]).toEqual([name, topic, i === j]);
  }
});

it("with one shard's redis-server shut down, keeps running: that shard's enqueues answer 503 naming it, the others' are delivered", {
  timeout: 90_000,
}, async () => {
  const down = shard("s3");
  const stopped = spawnSync("redis-cli", ["-h", "127.0.0.1", "-p", String(down.redisPort), "shutdown", "nosave"], { encoding: "utf8" });
  expect(stopped.error).toBeUndefined();
  await until(() => !isAlive(down.redisPid), 10_000, "s3's redis-server to exit", 50);
  await until(
    () => stack.output().includes(`shard "s3": redis-server (port ${down.redisPort}, pid ${down.redisPid}) exited`),
    10_000,
    "npm start to log it",
    50,
  );

  const refused = await enqueue(topicOn("s3", "down"), "down");
  expect(refused.status, JSON.stringify(refused.body)).toBe(503);
  expect(refused.contentType).toBe("application/problem+json");
  expect(refused.body.detail).toMatch(/^shard "s3": /);

  for (const name of ["s2", "main"]) {
    const topic = topicOn(name, "after");
    expect((await enqueue(topic, `after-${name}`)).status).toBe(201);
    await delivered(topic, `after-${name}`);
  }
  // npm start and the other shards' redis-servers still run.
  expect(isAlive(stack.pid)).toBe(true);
  for (const name of ["main", "s2"]) expect(isAlive(shard(name).redisPid)).toBe(true);
  expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
});

it("a SIGTERM to npm start stops every process it started, the shards' redis-servers too", { timeout: 60_000 }, async () => {
  const start = descendantsOf(stack.pid)
    .filter((p) => /dev\/start\.ts/.test(p.args))
    .at(-1)!;
  const started = descendantsOf(start.pid);
  expect(started.filter((p) => /redis-server/.test(p.args)).map((p) => p.pid)).toEqual(expect.arrayContaining([shard("main").redisPid, shard("s2").redisPid]));
  process.kill(start.pid, "SIGTERM");
  await until(() => ![start, ...started].some((p) => isAlive(p.pid)), 30_000, "every process npm start started to exit", 100);
  expect(stack.output()).toContain("SIGTERM: stopping");
});

/** What npm start printed when it refused `env` (with the shell's Redis variables cleared): it exited at once, non-zero, starting nothing. */
async function refusal(dataDir: string, env: Record<string, string>): Promise<string> {
  const cleared = { REDIS_URL: "", UPSTASH_REDIS_REST_URL: "", UPSTASH_REDIS_REST_TOKEN: "", DELAYLINE_SHARDS: "" };
  const { code, output } = await startExpectingExit({ ...cleared, PORT: String(await freePort()), DELAYLINE_DATA_DIR: dataDir, ...env });
  expect(code, output).not.toBe("still running");
  expect(code, output).not.toBe(0);
  expect(output).toContain("invalid settings, nothing started");
  expect(output).not.toMatch(/redis-server on|REST bridge on|using Upstash/);
  return output;
}

it("refuses DELAYLINE_LOCAL_SHARDS with REDIS_URL, Upstash or DELAYLINE_SHARDS, or out of range, at once, saying what to do", { timeout: 60_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "delayline-shards-refused-"));
  try {
    const elsewhere = await refusal(dataDir, {
      DELAYLINE_LOCAL_SHARDS: "3",
      REDIS_URL: "redis://127.0.0.1:1",
      UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1",
      UPSTASH_REDIS_REST_TOKEN: "not-used",
      DELAYLINE_SHARDS: '[{"name":"main"}]',
    });
    expect(elsewhere).toMatch(/DELAYLINE_LOCAL_SHARDS cannot be used with REDIS_URL: .*; unset REDIS_URL, or unset DELAYLINE_LOCAL_SHARDS/);
    expect(elsewhere).toMatch(/DELAYLINE_LOCAL_SHARDS cannot be used with UPSTASH_REDIS_REST_URL\/UPSTASH_REDIS_REST_TOKEN: .*; unset them/);
    expect(elsewhere).toMatch(/DELAYLINE_LOCAL_SHARDS cannot be used with DELAYLINE_SHARDS: .*; unset one of the two/);
    expect(await refusal(dataDir, { DELAYLINE_LOCAL_SHARDS: "9" })).toContain("DELAYLINE_LOCAL_SHARDS must be a whole number from 1 to 8");
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
