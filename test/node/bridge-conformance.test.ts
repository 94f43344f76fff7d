/**
 * Drives the real @upstash/redis client, with its default options
 * (auto-pipelining, base64 responses, read-your-writes), against the bridge
 * and a real redis-server; and with plain JSON responses, as delayline's
 * own client asks (src/queue/redis.ts).
 */
import { Redis } from "@upstash/redis";
import { beforeAll, describe, expect, inject, it } from "vitest";

let redis: Redis;
let p: string;

beforeAll(() => {
  redis = new Redis({ url: inject("bridgeUrl"), token: inject("bridgeToken"), enableTelemetry: false });
});

// Each test gets its own key prefix, one hash tag: its calls stay in one slot on a cluster too.
const k = (name: string) => `${p}:${name}`;
let n = 0;
function prefix() {
  p = `conf:{${process.pid}:${Date.now()}:${n++}}`;
}

describe("strings", () => {
  it("round-trips unicode, numeric-looking, OK-valued and large strings", async () => {
    prefix();
    const unicode = 'zażółć 🦊 \u0000 tab\t "quotes" \\';
    await redis.set(k("u"), unicode);
    expect(await redis.get(k("u"))).toBe(unicode);

    // With default deserialization "42" comes back as the number 42; the raw
    // string must be what the bridge sent.
    await redis.set(k("n"), "42");
    expect(await redis.get(k("n"))).toBe(42);
    const raw = new Redis({ url: inject("bridgeUrl"), token: inject("bridgeToken"), automaticDeserialization: false });
    expect(await raw.get(k("n"))).toBe("42");

    await redis.set(k("ok"), "OK");
    expect(await raw.get(k("ok"))).toBe("OK");

    const large = `${"x".repeat(3 * 1024 * 1024)}🦊`;
    expect(await raw.set(k("large"), large)).toBe("OK");
    expect(await raw.get(k("large"))).toBe(large);
    expect(await redis.strlen(k("large"))).toBe(3 * 1024 * 1024 + 4);

    // Plain JSON responses (no base64) carry the same text, in a pipeline too.
    const plain = new Redis({ url: inject("bridgeUrl"), token: inject("bridgeToken"), automaticDeserialization: false, responseEncoding: false });
    expect(await plain.get(k("u"))).toBe(unicode);
    expect(await plain.get(k("large"))).toBe(large);
    expect(await plain.pipeline().get(k("u")).get(k("n")).get(k("missing")).exec()).toEqual([unicode, "42", null]);
  });

  it("keeps JSON values as the client serialised them", async () => {
    prefix();
    await redis.set(k("j"), { a: [1, "two", null] });
    expect(await redis.get(k("j"))).toEqual({ a: [1, "two", null] });
    expect(await redis.incr(k("c"))).toBe(1);
    expect(await redis.incrby(k("c"), 41)).toBe(42);
    expect(await redis.get(k("missing"))).toBeNull();
  });
});

describe("hashes, lists, sets", () => {
  it("hash commands", async () => {
    prefix();
    expect(await redis.hset(k("h"), { a: "1", b: "two" })).toBe(2);
    expect(await redis.hget(k("h"), "b")).toBe("two");
    expect(await redis.hgetall(k("h"))).toEqual({ a: 1, b: "two" });
    expect(await redis.hmget(k("h"), "a", "zz")).toEqual({ a: 1, zz: null });
    expect(await redis.hincrby(k("h"), "a", 5)).toBe(6);
    expect(await redis.hdel(k("h"), "a")).toBe(1);
    expect(await redis.hlen(k("h"))).toBe(1);
  });

  it("list commands", async () => {
    prefix();
    expect(await redis.rpush(k("l"), "a", "b", "c")).toBe(3);
    expect(await redis.lpush(k("l"), "z")).toBe(4);
    expect(await redis.lrange(k("l"), 0, -1)).toEqual(["z", "a", "b", "c"]);
    expect(await redis.lpop(k("l"))).toBe("z");
    expect(await redis.ltrim(k("l"), 0, 0)).toBe("OK");
    expect(await redis.llen(k("l"))).toBe(1);
  });

  it("set commands", async () => {
    prefix();
    expect(await redis.sadd(k("s"), "a", "b", "a")).toBe(2);
    expect(await redis.sismember(k("s"), "b")).toBe(1);
    expect((await redis.smembers(k("s"))).sort()).toEqual(["a", "b"]);
    expect(await redis.srem(k("s"), "a")).toBe(1);
    expect(await redis.scard(k("s"))).toBe(1);
  });
});

describe("sorted sets", () => {
  it("ZADD, ZRANGE BYSCORE LIMIT, ZPOPMIN, ZREM, ZSCORE", async () => {
    prefix();
    expect(await redis.zadd(k("z"), { score: 3, member: "c" }, { score: 1, member: "a" }, { score: 2, member: "b" }, { score: 1.5, member: "ab" })).toBe(4);
    expect(await redis.zrange(k("z"), 1, 2, { byScore: true, offset: 0, count: 2 })).toEqual(["a", "ab"]);
    expect(await redis.zrange(k("z"), "-inf", "+inf", { byScore: true, withScores: true })).toEqual(["a", 1, "ab", 1.5, "b", 2, "c", 3]);
    expect(await redis.zscore(k("z"), "ab")).toBe(1.5);
    expect(await redis.zscore(k("z"), "nope")).toBeNull();
    expect(await redis.zpopmin(k("z"), 1)).toEqual(["a", 1]);
    expect(await redis.zrem(k("z"), "ab", "nope")).toBe(1);
    expect(await redis.zcard(k("z"))).toBe(2);
    // Millisecond timestamps survive as exact scores.
    await redis.zadd(k("t"), { score: 1_764_000_000_123, member: "job" });
    expect(await redis.zscore(k("t"), "job")).toBe(1_764_000_000_123);
  });
});

describe("expiry", () => {
  it("SET PX, PEXPIRE, PTTL and expiry taking effect", async () => {
    prefix();
    expect(await redis.set(k("e"), "v", { px: 60_000 })).toBe("OK");
    const ttl = await redis.pttl(k("e"));
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await redis.set(k("nx"), "1", { nx: true })).toBe("OK");
    expect(await redis.set(k("nx"), "2", { nx: true })).toBeNull();
    await redis.set(k("gone"), "v", { px: 1 });
    // Redis expires lazily on access; poll a bounded number of times.
    let value: unknown = "v";
    for (let i = 0; i < 50 && value !== null; i++) {
      await new Promise((r) => setTimeout(r, 5));
      value = await redis.get(k("gone"));
    }
    expect(value).toBeNull();
    expect(await redis.pexpire(k("nx"), 60_000)).toBe(1);
  });
});

describe("scripts", () => {
  it("EVAL and EVALSHA with keys and args", async () => {
    prefix();
    const src = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])";
    expect(await redis.eval(src, [k("s")], ["hello"])).toBe("hello");
    const sha = await redis.scriptLoad(src);
    expect(await redis.evalsha(sha, [k("s2")], ["again"])).toBe("again");
  });

  it("createScript().exec() falls back from NOSCRIPT to EVAL", async () => {
    prefix();
    const body = `return {ARGV[1], ${Date.now()}}`;
    await redis.scriptFlush();
    const script = redis.createScript<[string, number]>(body);
    const [first] = await script.exec([], ["fresh"]);
    expect(first).toBe("fresh");
    // After the fallback ran EVAL, the script is cached and EVALSHA works.
    const [again] = await script.exec([], ["cached"]);
    expect(again).toBe("cached");
  });

  it("passes the NOSCRIPT error through unchanged", async () => {
    await expect(redis.evalsha("0".repeat(40), [], [])).rejects.toThrow(/NOSCRIPT/);
  });

  it("Lua replies nesting arrays, nil, integers and status strings", async () => {
    const raw = new Redis({ url: inject("bridgeUrl"), token: inject("bridgeToken"), automaticDeserialization: false });
    const result = await raw.eval("return {1, 'two', {redis.status_reply('OK'), false, {3, 'deep'}}, redis.status_reply('QUEUED'), -7}", [], []);
    expect(result).toEqual([1, "two", ["OK", null, [3, "deep"]], "QUEUED", -7]);
  });

  it("a Lua error surfaces as an error", async () => {
    await expect(redis.eval("return redis.error_reply('BOOM nope')", [], [])).rejects.toThrow(/BOOM nope/);
  });
});

describe("pipelines and transactions", () => {
  it("a failing command in the middle of a pipeline fails only itself", async () => {
    prefix();
    await redis.set(k("str"), "text");
    const results = await redis.pipeline().set(k("a"), "1").incr(k("str")).get(k("a")).exec({ keepErrors: true });
    expect(results[0]).toEqual({ result: "OK", error: undefined });
    expect(results[1]!.error).toMatch(/not an integer/);
    expect(results[2]!.result).toBe(1);
  });

  it("multi-exec runs atomically", async () => {
    prefix();
    const results = await redis.multi().set(k("m"), "5").incrby(k("m"), 10).get(k("m")).exec();
    expect(results).toEqual(["OK", 15, 15]);
  });

  it("25 concurrent multi-execs do not interfere", async () => {
    prefix();
    const runs = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        redis
          .multi()
          .del(k(`tx${i}`))
          .rpush(k(`tx${i}`), `a${i}`, `b${i}`)
          .incr(k("shared"))
          .lrange(k(`tx${i}`), 0, -1)
          .exec(),
      ),
    );
    for (const [i, r] of runs.entries()) {
      expect(r[1]).toBe(2);
      expect(r[3]).toEqual([`a${i}`, `b${i}`]);
    }
    // Each transaction saw its own INCR result; together they are 1..25 exactly.
    expect(runs.map((r) => r[2] as number).sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  it("auto-pipelined concurrent calls each get their own result", async () => {
    prefix();
    const writes = await Promise.all(Array.from({ length: 200 }, (_, i) => redis.set(k(`ap${i}`), `v${i}`)));
    expect(writes.every((w) => w === "OK")).toBe(true);
    const reads = await Promise.all(Array.from({ length: 200 }, (_, i) => redis.get(k(`ap${i}`))));
    expect(reads).toEqual(Array.from({ length: 200 }, (_, i) => `v${i}`));
  });
});

describe("auth", () => {
  it("a wrong token is refused", async () => {
    const wrong = new Redis({ url: inject("bridgeUrl"), token: "wrong", retry: false });
    await expect(wrong.get("x")).rejects.toThrow(/Unauthorized/);
  });
});
