/**
 * Upstash's limits as the bridge holds them (dev/bridge/limits.ts), each
 * lowered so a test can reach it, against the real redis-server: the exact
 * error texts and statuses, nothing written by a refused request, commands
 * waiting (not failing) past the rate, the `allow-key-locking` shebang taken
 * out with the flagged text's digest still working, and the sync token.
 */
import { createHash } from "node:crypto";
import { Redis as Upstash } from "@upstash/redis";
import IORedis from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CommandRate, limitsFromEnv, UPSTASH_LIMITS, type UpstashLimits } from "../../dev/bridge/limits.js";
import { type RunningBridge, startBridge } from "../../dev/bridge/server.js";
import { stripKeyLocking } from "../../dev/bridge/scripts.js";
import { sharedRedisTarget } from "./redis-target.js";

const TOKEN = "t0ken-limits";
const KB = 1024;
const MB = 1024 * KB;
let bridge: RunningBridge;
// One hash tag for the file: a call naming several keys stays in one slot on a cluster too.
const TAG = crypto.randomUUID();
const key = (name: string) => `limits:{${TAG}}:${crypto.randomUUID()}:${name}`;
const sha1 = (s: string) => createHash("sha1").update(s).digest("hex");

beforeAll(async () => {
  bridge = await startBridge({ ...sharedRedisTarget(), token: TOKEN });
});
afterAll(() => bridge.close());

/** Each test sets the limits it needs over Upstash's own. */
function limits(change: Partial<UpstashLimits>): void {
  bridge.setLimits({ ...UPSTASH_LIMITS, ...change });
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(bridge.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

it("holds Upstash's own values by default", async () => {
  const fresh = await startBridge({ ...sharedRedisTarget(), token: TOKEN });
  try {
    expect(fresh.limits).toEqual({ maxRequestBytes: 10 * MB, maxReplyBytes: 10 * MB, maxRecordBytes: 100 * MB, commandsPerSecond: 10_000, maxRequests: 0 });
  } finally {
    await fresh.close();
  }
});

it("reads limits from the environment of npm start and npm run bridge: 0 turns one off, anything but a whole number is refused by name", () => {
  expect(limitsFromEnv({ BRIDGE_MAX_RECORD_BYTES: "0", BRIDGE_COMMANDS_PER_SECOND: "50", BRIDGE_MAX_REQUEST_BYTES: "" })).toEqual({
    maxRecordBytes: 0,
    commandsPerSecond: 50,
  });
  expect(limitsFromEnv({ BRIDGE_MAX_REPLY_BYTES: "65536", BRIDGE_MAX_REQUESTS: "7" })).toEqual({ maxReplyBytes: 65_536, maxRequests: 7 });
  for (const bad of ["-1", "1.5", "1mb", "x"]) expect(() => limitsFromEnv({ BRIDGE_MAX_RECORD_BYTES: bad })).toThrow(/BRIDGE_MAX_RECORD_BYTES/);
});

describe("request size", () => {
  it("refuses a body past the cap with 400 'ERR max request size exceeded' before Redis sees any of it", async () => {
    limits({ maxRequestBytes: 64 * KB });
    const k = key("req");
    const fits = JSON.stringify(["SET", k, ""]);
    const atCap = ["SET", k, "a".repeat(64 * KB - fits.length)];
    expect(await post("/", atCap)).toMatchObject({ status: 200, body: { result: "OK" } });
    const over = await post("/", ["SET", `${k}:2`, "a".repeat(64 * KB)]);
    expect(over).toMatchObject({ status: 400, body: { error: "ERR max request size exceeded" } });
    for (const path of ["/pipeline", "/multi-exec"]) {
      const r = await post(path, [
        ["SET", `${k}:3`, "x"],
        ["SET", `${k}:4`, "b".repeat(64 * KB)],
      ]);
      expect(r, path).toMatchObject({ status: 400, body: { error: "ERR max request size exceeded" } });
    }
    expect((await post("/", ["EXISTS", `${k}:2`, `${k}:3`, `${k}:4`])).body).toEqual({ result: 0 });
  });
});

describe("reply size", () => {
  it("answers a command whose reply passes the cap with Upstash's error: alone, in a pipeline, in a transaction, from a script, as base64", async () => {
    limits({ maxReplyBytes: 4 * KB });
    const k = key("reply");
    await post("/", ["SET", k, "r".repeat(8 * KB)]);
    expect(await post("/", ["GET", k])).toMatchObject({ status: 400, body: { error: "ERR max request size exceeded" } });
    expect(await post("/", ["GET", k], { "upstash-encoding": "base64" })).toMatchObject({
      status: 400,
      body: { error: "ERR max request size exceeded" },
    });
    // Each element is held alone: the small replies around it come back.
    for (const path of ["/pipeline", "/multi-exec"]) {
      const r = await post(path, [["STRLEN", k], ["GET", k], ["EVAL", "return redis.call('GET', KEYS[1])", 1, k], ["PING"]]);
      expect(r.status, path).toBe(200);
      expect(r.body, path).toEqual([
        { result: 8 * KB },
        { error: "ERR max request size exceeded" },
        { error: "ERR max request size exceeded" },
        { result: "PONG" },
      ]);
    }
    // An array reply counts as a whole.
    const list = key("list");
    await post("/", ["RPUSH", list, ...Array.from({ length: 100 }, () => "l".repeat(100))]);
    expect((await post("/", ["LRANGE", list, 0, -1])).body).toEqual({ error: "ERR max request size exceeded" });
    expect((await post("/", ["LRANGE", list, 0, 9])).body.result).toHaveLength(10);
  });
});

describe("record size", () => {
  it("refuses a write that would take a key past the cap, before writing, and lets reads and deletes through", async () => {
    limits({ maxRecordBytes: 1 * MB });
    const k = key("rec");
    expect((await post("/", ["SET", k, "s".repeat(600 * KB)])).body).toEqual({ result: "OK" });
    const refused = await post("/", ["APPEND", k, "s".repeat(600 * KB)]);
    expect(refused).toMatchObject({ status: 400, body: { error: "ERR max single record size exceeded" } });
    expect((await post("/", ["STRLEN", k])).body).toEqual({ result: 600 * KB });
    expect((await post("/", ["GET", k])).body.result).toHaveLength(600 * KB);
    expect((await post("/", ["DEL", k])).body).toEqual({ result: 1 });
  });

  it("measures a collection as a whole: a hash grown field by field stops at the cap, and nothing past it is written", async () => {
    limits({ maxRecordBytes: 1 * MB });
    const h = key("hash");
    const field = "f".repeat(10 * KB);
    let refusedAt = -1;
    for (let batch = 0; batch < 20 && refusedAt < 0; batch++) {
      const r = await post(
        "/pipeline",
        Array.from({ length: 10 }, (_, i) => ["HSET", h, `f${batch * 10 + i}`, field]),
      );
      const at = (r.body as Array<{ error?: string }>).findIndex((a) => a.error === "ERR max single record size exceeded");
      if (at >= 0) refusedAt = batch * 10 + at;
    }
    expect(refusedAt).toBeGreaterThan(50);
    expect((await post("/", ["HLEN", h])).body).toEqual({ result: refusedAt });
    expect((await post("/", ["MEMORY", "USAGE", h])).body.result).toBeLessThanOrEqual(1 * MB);
  });

  it("checks every key a script is given in KEYS, and refuses the script before it runs", async () => {
    limits({ maxRecordBytes: 1 * MB });
    const [a, b] = [key("a"), key("b")];
    expect((await post("/", ["SET", b, "b".repeat(800 * KB)])).body).toEqual({ result: "OK" });
    const script = "redis.call('SET', KEYS[1], ARGV[1]); redis.call('APPEND', KEYS[2], ARGV[1]); return 1";
    const r = await post("/", ["EVAL", script, 2, a, b, "v".repeat(200 * KB)]);
    expect(r).toMatchObject({ status: 400, body: { error: "ERR max single record size exceeded" } });
    // No partial write: the script did not run at all.
    expect((await post("/", ["EXISTS", a])).body).toEqual({ result: 0 });
    expect((await post("/", ["STRLEN", b])).body).toEqual({ result: 800 * KB });
    expect((await post("/", ["EVAL", script, 2, a, key("c"), "v".repeat(200 * KB)])).body).toEqual({ result: 1 });
  });
  it("counts a key a script names several times in KEYS once: two such scripts in one pipeline both run", async () => {
    limits({ maxRecordBytes: 1 * MB });
    const k = key("repeated");
    // A batch enqueue names its topic's keys once per job; ten times here, with 100 KB of ARGV.
    const script = "redis.call('APPEND', KEYS[1], ARGV[1]); return 1";
    const call = ["EVAL", script, 10, ...Array.from({ length: 10 }, () => k), "r".repeat(100 * KB)];
    expect((await post("/pipeline", [call, call])).body).toEqual([{ result: 1 }, { result: 1 }]);
    expect((await post("/", ["STRLEN", k])).body).toEqual({ result: 200 * KB });
  });

  it("answers the error after the fact when a script grows a key near the cap past it without bringing the bytes (the write stays, unlike Upstash)", async () => {
    limits({ maxRecordBytes: 1 * MB });
    const [dst, src] = [key("dst"), key("src")];
    await post("/", ["SET", dst, "d".repeat(600 * KB)]);
    await post("/", ["SET", src, "s".repeat(600 * KB)]);
    const copy = "return redis.call('APPEND', KEYS[1], redis.call('GET', KEYS[2]))";
    expect(await post("/", ["EVAL", copy, 2, dst, src])).toMatchObject({ status: 400, body: { error: "ERR max single record size exceeded" } });
    expect((await post("/", ["STRLEN", dst])).body).toEqual({ result: 1200 * KB });
    // From then on the key takes no write, and still reads and deletes.
    expect((await post("/", ["APPEND", dst, "x"])).body).toEqual({ error: "ERR max single record size exceeded" });
    expect((await post("/", ["DEL", dst, src])).body).toEqual({ result: 2 });
  });
});

describe("commands per second", () => {
  it("makes commands past the rate wait, and fails none", async () => {
    limits({ commandsPerSecond: 100 });
    const k = key("rate");
    const answers = await Promise.all(Array.from({ length: 150 }, () => post("/", ["INCR", k])));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect((await post("/", ["GET", k])).body).toEqual({ result: "150" });
  });

  it("waits by the bucket: one second's worth at once, then each command its share of a second (on a clock of the test's)", () => {
    const clock = { now: 1_000 };
    const rate = new CommandRate(100, () => clock.now);
    expect(Array.from({ length: 100 }, () => rate.reserve(1))).toEqual(Array(100).fill(0));
    // The 50 past the bucket wait 10 ms more each: first come, first served.
    const waits = Array.from({ length: 50 }, () => rate.reserve(1));
    expect(waits[0]).toBeCloseTo(10);
    expect(waits[49]).toBeCloseTo(500);
    // Half a second on, the debt is paid and the bucket empty; a second after that it is full again, not fuller.
    clock.now += 500;
    expect(rate.reserve(1)).toBeCloseTo(10);
    clock.now += 2_000;
    expect(rate.reserve(100)).toBe(0);
    expect(rate.reserve(1)).toBeGreaterThan(0);
    // Off (0) never waits.
    rate.reset(0);
    expect(rate.reserve(1_000_000)).toBe(0);
  });
});

describe("request budget and capacity", () => {
  it("answers 'ERR max requests limit exceeded' past the budget, and serves again once it is lifted", async () => {
    limits({ maxRequests: 3 });
    for (let i = 0; i < 3; i++) expect((await post("/", ["PING"])).body).toEqual({ result: "PONG" });
    expect(await post("/", ["PING"])).toMatchObject({ status: 400, body: { error: "ERR max requests limit exceeded" } });
    expect((await post("/pipeline", [["PING"], ["PING"]])).body).toEqual([
      { error: "ERR max requests limit exceeded" },
      { error: "ERR max requests limit exceeded" },
    ]);
    limits({ maxRequests: 0 });
    expect((await post("/", ["PING"])).body).toEqual({ result: "PONG" });
  });

  // It sets maxmemory on one redis-server; on a cluster the key's master may be another.
  it.skipIf(inject("redisCluster"))("words a full Redis (maxmemory, noeviction) as 'ERR DB capacity quota exceeded'", async () => {
    limits({});
    const direct = new IORedis(inject("redisUrl"));
    const before = await direct.config("GET", "maxmemory");
    try {
      await direct.config("SET", "maxmemory", "1");
      const r = await post("/", ["SET", key("full"), "x"]);
      expect(r).toMatchObject({ status: 400, body: { error: "ERR DB capacity quota exceeded" } });
    } finally {
      await direct.config("SET", "maxmemory", (before as string[])[1]!);
      direct.disconnect();
    }
  });
});

describe("#!lua flags=allow-key-locking", () => {
  const flagged = (body: string) => `#!lua flags=allow-key-locking\n${body}`;

  it("is refused by Redis 7.0 itself, so the bridge has to take it out", async () => {
    const direct = new IORedis(inject("redisUrl"));
    try {
      await expect(direct.eval(flagged("return 1"), 0)).rejects.toThrow(/allow-key-locking/);
    } finally {
      direct.disconnect();
    }
  });

  it("runs flagged scripts through EVAL, and EVALSHA, SCRIPT EXISTS and SCRIPT LOAD work with the flagged text's digest", async () => {
    limits({});
    const k = key("flag");
    const script = flagged(`return redis.call('INCRBY', KEYS[1], ARGV[1]) -- ${crypto.randomUUID()}`);
    const sha = sha1(script);
    expect((await post("/", ["EVALSHA", sha, 1, k, 1])).body.error).toMatch(/^NOSCRIPT/);
    expect((await post("/", ["SCRIPT", "EXISTS", sha])).body).toEqual({ result: [0] });
    expect(await post("/", ["EVAL", script, 1, k, 2])).toMatchObject({ status: 200, body: { result: 2 } });
    expect((await post("/", ["EVALSHA", sha, 1, k, 3])).body).toEqual({ result: 5 });
    expect((await post("/", ["EVALSHA", sha.toUpperCase(), 1, k, 1])).body).toEqual({ result: 6 });
    expect((await post("/", ["SCRIPT", "EXISTS", sha, "0".repeat(40)])).body).toEqual({ result: [1, 0] });

    const loaded = flagged(`return 'loaded' -- ${crypto.randomUUID()}`);
    expect((await post("/", ["SCRIPT", "LOAD", loaded])).body).toEqual({ result: sha1(loaded) });
    expect((await post("/", ["SCRIPT", "LOAD", loaded], { "upstash-encoding": "base64" })).body).toEqual({
      result: Buffer.from(sha1(loaded)).toString("base64"),
    });
    expect((await post("/", ["EVALSHA", sha1(loaded), 0])).body).toEqual({ result: "loaded" });
  });

  it("works inside pipelines and transactions, and keeps other flags and Redis' line numbers", async () => {
    limits({});
    const k = key("flagpipe");
    const script = flagged(`return redis.call('INCR', KEYS[1]) -- ${crypto.randomUUID()}`);
    for (const path of ["/pipeline", "/multi-exec"]) {
      const r = await post(path, [
        ["EVAL", script, 1, k],
        ["EVALSHA", sha1(script), 1, k],
        ["SCRIPT", "EXISTS", sha1(script)],
      ]);
      expect(r.body, path).toEqual([{ result: expect.any(Number) }, { result: expect.any(Number) }, { result: [1] }]);
    }
    expect(stripKeyLocking("#!lua flags=no-writes,allow-key-locking\nreturn 1")).toBe("#!lua flags=no-writes\nreturn 1");
    expect(stripKeyLocking("#!lua flags=allow-key-locking\nreturn 1")).toBe("\nreturn 1");
    expect(stripKeyLocking("#!lua flags=no-writes\nreturn 1")).toBeUndefined();
    expect(stripKeyLocking("return 1")).toBeUndefined();
    const bad = await post("/", ["EVAL", flagged("return nope()"), 0]);
    expect(bad.body.error).toMatch(/:2:/);
    expect((await post("/", ["EVAL", "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('GET', KEYS[1])", 1, k])).body).toEqual({
      result: "4",
    });
  });

  it("works for @upstash/redis' createScript, which computes the digest of the flagged text itself", async () => {
    limits({});
    const redis = new Upstash({ url: bridge.url, token: TOKEN, enableTelemetry: false });
    const script = redis.createScript<number>(flagged(`return tonumber(ARGV[1]) * 2 -- ${crypto.randomUUID()}`));
    expect(await script.exec([], ["21"])).toBe(42);
    expect(await script.evalsha([], ["4"])).toBe(8);
  });
});

describe("upstash-sync-token", () => {
  it("comes back on every answer, growing, errors included", async () => {
    limits({});
    const tokens: number[] = [];
    for (const body of [["PING"], ["NOPE"], ["SET", key("sync"), "1"]]) {
      const r = await post("/", body, { "upstash-sync-token": String(tokens.at(-1) ?? "") });
      tokens.push(Number(r.headers.get("upstash-sync-token")));
    }
    const r = await fetch(bridge.url, { method: "POST", body: "[]" });
    tokens.push(Number(r.headers.get("upstash-sync-token")));
    expect(tokens.every((t) => Number.isInteger(t) && t > 0)).toBe(true);
    expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
