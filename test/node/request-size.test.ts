/**
 * The request-size measure (src/queue/request-size.ts) counts a script call's request exactly as the queue's client
 * sends it: checked against the bridge's request limit set to the measured size (sent) and one byte less (refused,
 * as Upstash refuses it). And the calls it does not check fit by arithmetic: each is built at the worst case the API
 * lets through and measured against REQUEST_BUDGET_BYTES.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRedisBridge, type RedisBridge } from "../../harness/redis-bridge.js";
import {
  ATTEMPT_ERROR_BYTES,
  BULK_CALL_BYTES,
  BULK_CANCEL_BATCH,
  DEAD_BATCH,
  MAX_BATCH,
  REQUEST_BUDGET_BYTES,
  TOPIC_NAME_MAX_LENGTH,
} from "../../src/limits.js";
import { Keys } from "../../src/queue/keys.js";
import * as lua from "../../src/queue/lua.generated.js";
import type { LuaScript } from "../../src/queue/lua.generated.js";
import { observationVector } from "../../src/queue/metrics.js";
import { createRedis } from "../../src/queue/redis.js";
import { RequestTooLargeError } from "../../src/queue/errors.js";
import { fitRequest, scriptRequestBytes, utf8Bytes } from "../../src/queue/request-size.js";

let bridge: RedisBridge;

beforeAll(async () => {
  bridge = await startRedisBridge();
}, 60_000);

afterAll(async () => {
  await bridge?.stop();
});

it("utf8Bytes counts as TextEncoder does", () => {
  for (const text of ["", "abc", "é", "€", "😀", '"\\\u0001é€😀x', JSON.stringify("\ud800 lone")]) {
    expect(utf8Bytes(text)).toBe(new TextEncoder().encode(text).length);
  }
});

it("a script call's measured size is the request the client sends: the bridge takes it at that limit and refuses it one byte lower", async () => {
  const redis = createRedis({ redisUrl: bridge.bridge.url, redisToken: bridge.token, redisTimeoutMs: 10_000 });
  const source = `return #ARGV -- ${crypto.randomUUID()}`;
  const script: LuaScript = { name: "probe", source, sha1: createHash("sha1").update(source).digest("hex") };
  const keys = ["probe:{t}:a"];
  // Quotes, backslashes, control characters, 2-, 3- and 4-byte characters: each counted as sent.
  const args = ['"\\\u0001\u001féü€😀\n'.repeat(2_000), 42];
  const argv = args.map(String);
  const { evalsha, eval: evalBytes } = scriptRequestBytes(script, keys, args);
  expect(evalBytes).toBeGreaterThan(evalsha);
  try {
    bridge.bridge.setLimits({ maxRequestBytes: evalBytes });
    expect(await redis.eval(source, keys, argv)).toBe(2);
    bridge.bridge.setLimits({ maxRequestBytes: evalBytes - 1 });
    await expect(redis.eval(source, keys, argv)).rejects.toThrow(/ERR max request size exceeded/);
    // The script is cached now: EVALSHA.
    bridge.bridge.setLimits({ maxRequestBytes: evalsha });
    expect(await redis.evalsha(script.sha1, keys, argv)).toBe(2);
    bridge.bridge.setLimits({ maxRequestBytes: evalsha - 1 });
    await expect(redis.evalsha(script.sha1, keys, argv)).rejects.toThrow(/ERR max request size exceeded/);
  } finally {
    bridge.bridge.setLimits({ maxRequestBytes: 10 * 1024 * 1024 });
  }
});

// The worst cases the API lets through (see request-size.ts's module comment for the arithmetic).
const PREFIX = `dl:{${"p".repeat(90)}}`;
const TOPIC = "t".repeat(TOPIC_NAME_MAX_LENGTH);
const JOB_ID = `${TOPIC}.${"0".repeat(26)}`;
/** A job id as a caller may send one to cancel or replay: 100 UTF-16 units (JobId's max), each escaped to 6 bytes. */
const CALLER_ID = "\u0001".repeat(100);
const NOW = 9_999_999_999_999;

it("a settle of a full chunk, every error at its cut with escapes, fits the request budget", () => {
  const keys = new Keys(PREFIX);
  const t = keys.topic(TOPIC);
  const outcomes = Array.from({ length: MAX_BATCH }, () => ({ latenessMs: 2 ** 40, durationMs: 2 ** 40 }));
  const observed = observationVector(outcomes);
  const error = "\u0001".repeat(ATTEMPT_ERROR_BYTES);
  const args: Array<string | number> = [NOW, JSON.stringify(observed), MAX_BATCH, TOPIC, "r", 2 ** 40, 2 ** 40];
  for (let i = 0; i < MAX_BATCH; i++) args.push(JOB_ID, 100, "retry", NOW, error, NOW, 600_000_000, 599);
  const settleKeys = [t.due, t.lease, t.metrics, t.deadAt, t.done, keys.topicIndex, ...keys.jobPairs(Array(MAX_BATCH).fill(JOB_ID))];
  const { eval: bytes } = scriptRequestBytes(lua.settle, settleKeys, args);
  expect(bytes).toBeGreaterThan(6_000_000);
  expect(bytes).toBeLessThan(REQUEST_BUDGET_BYTES);
});

it("a bulk cancel and a replay by ids, a full call of the longest ids, fit the request budget with room to spare", () => {
  const keys = new Keys(PREFIX);
  const t = keys.topic(TOPIC);
  const cancelArgs = [NOW, 60 * 86_400_000, "ids", "-inf", "+inf", "", "", BULK_CANCEL_BATCH, BULK_CALL_BYTES, ...Array(BULK_CANCEL_BATCH).fill(CALLER_ID)];
  const metaKeys = Array.from({ length: BULK_CANCEL_BATCH }, () => keys.job(CALLER_ID).meta);
  const cancel = scriptRequestBytes(lua.cancelJobs, [t.due, t.lease, t.done, ...metaKeys], cancelArgs).eval;
  expect(cancel).toBeGreaterThan(BULK_CANCEL_BATCH * 600);
  // Each id twice: as an argument and in its meta key.
  expect(cancel).toBeLessThan(500_000);
  // replay-dead.lua's arguments before the ids: a dozen short values (a due time, a spread, a topic, the batch and byte bounds).
  const replayHead = [NOW, NOW, 86_400_000, TOPIC, "ids", DEAD_BATCH, BULK_CALL_BYTES, 1_000_000, 100, 600_000, "x".repeat(64), "x".repeat(64)];
  const replayKeys = [t.deadAt, t.due, keys.topicIndex, ...Array.from({ length: DEAD_BATCH }, () => keys.job(CALLER_ID).meta)];
  const replay = scriptRequestBytes(lua.replayDead, replayKeys, [...replayHead, ...Array(DEAD_BATCH).fill(CALLER_ID)]).eval;
  expect(replay).toBeLessThan(500_000);
  expect(Math.max(cancel, replay) * 10).toBeLessThan(REQUEST_BUDGET_BYTES);
});

it("fitRequest refuses exactly past the budget, whether or not the quick bound decides: at the measured size it passes, one byte less it throws", () => {
  for (const arg of ["a".repeat(100), "\u0001".repeat(50_000), "😀".repeat(30_000)]) {
    const bytes = scriptRequestBytes(lua.enqueue, ["k"], [arg]).eval;
    expect(() => fitRequest(bytes, "batch", lua.enqueue, ["k"], [arg])).not.toThrow();
    const err = (() => {
      try {
        fitRequest(bytes - 1, "batch", lua.enqueue, ["k"], [arg]);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(RequestTooLargeError);
    expect(err).toMatchObject({ bytes, budget: bytes - 1, what: "batch" });
  }
});
