/** The Upstash REST protocol on the wire, spoken with plain fetch. */
import { describe, expect, inject, it } from "vitest";
import { startBridge } from "../../dev/bridge/server.js";
import { freePort } from "../../dev/ports.js";
import { startRedis } from "../../dev/redis-launcher.js";
import { sharedRedisTarget } from "./redis-target.js";

const url = () => inject("bridgeUrl");
const auth = () => ({ authorization: `Bearer ${inject("bridgeToken")}` });
const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
// One hash tag for the file: a call naming several keys stays in one slot on a cluster too.
const TAG = crypto.randomUUID();
const key = (name: string) => `proto:{${TAG}}:${crypto.randomUUID()}:${name}`;

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url() + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth(), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

describe("auth", () => {
  it("refuses a missing or wrong token with 401 {error}", async () => {
    for (const authorization of [undefined, "Bearer nope", "Basic abc", `Bearer ${inject("bridgeToken")}x`]) {
      const res = await fetch(url(), {
        method: "POST",
        headers: authorization ? { authorization } : {},
        body: JSON.stringify(["PING"]),
      });
      expect(res.status).toBe(401);
      expect(typeof ((await res.json()) as { error: string }).error).toBe("string");
    }
  });

  it("accepts and ignores Upstash-Sync-Token and telemetry headers", async () => {
    const res = await post("/", ["PING"], {
      "upstash-sync-token": "whatever",
      "upstash-telemetry-sdk": "x",
      "upstash-telemetry-platform": "y",
      "upstash-telemetry-runtime": "z",
    });
    expect(res).toMatchObject({ status: 200, body: { result: "PONG" } });
  });
});

describe("single commands", () => {
  it("answers plain text without Upstash-Encoding", async () => {
    const k = key("plain");
    expect((await post("/", ["SET", k, "héllo"])).body).toEqual({ result: "OK" });
    expect((await post("/", ["GET", k])).body).toEqual({ result: "héllo" });
  });

  it("base64-encodes every bulk and status string at every level; integers and nil stay JSON", async () => {
    const h = { "upstash-encoding": "base64" };
    const k = key("b64");
    expect((await post("/", ["SET", k, "v"], h)).body).toEqual({ result: b64("OK") });
    expect((await post("/", ["INCR", key("n")], h)).body).toEqual({ result: 1 });
    expect((await post("/", ["GET", key("none")], h)).body).toEqual({ result: null });
    const nested = await post("/", ["EVAL", "return {redis.status_reply('OK'), 'x', 5, false, {'y', {redis.status_reply('PONG')}}}", 0], h);
    expect(nested.body).toEqual({ result: [b64("OK"), b64("x"), 5, null, [b64("y"), [b64("PONG")]]] });
  });

  it("is binary-safe end to end", async () => {
    const k = key("bin");
    const bytes = Buffer.from([0, 255, 128, 10, 0xc3]);
    await post("/", ["EVAL", "redis.call('SET', KEYS[1], string.char(0, 255, 128, 10, 195))", 1, k]);
    const res = await post("/", ["GET", k], { "upstash-encoding": "base64" });
    expect(Buffer.from(res.body.result, "base64")).toEqual(bytes);
    const len = await post("/", ["STRLEN", k]);
    expect(len.body.result).toBe(5);
  });

  it("sends number and boolean arguments as strings", async () => {
    const k = key("args");
    await post("/", ["SET", k, 42.5]);
    expect((await post("/", ["GET", k])).body.result).toBe("42.5");
    await post("/", ["SET", k, true]);
    expect((await post("/", ["GET", k])).body.result).toBe("true");
    await post("/", ["ZADD", `${k}z`, 1_764_000_000_123, "m"]);
    expect((await post("/", ["ZSCORE", `${k}z`, "m"])).body.result).toBe("1764000000123");
  });

  it("passes thousands of mixed arguments through in order, on every endpoint, as text and as base64", async () => {
    // A settle's shape: thousands of ids, numbers, empty strings and UTF-8 text in one script call.
    const args = Array.from({ length: 7_000 }, (_, i) => [`job:${i}`, i, "", "é✓", true, 1_764_000_000_123 + i, "ack"][i % 7]!);
    const text = args.map(String);
    const script = ["EVAL", "return ARGV", 0, ...args];
    expect((await post("/", script)).body).toEqual({ result: text });
    expect((await post("/", script, { "upstash-encoding": "base64" })).body).toEqual({ result: text.map(b64) });
    for (const path of ["/pipeline", "/multi-exec"]) {
      expect((await post(path, [script, ["ECHO", "ü"]])).body).toEqual([{ result: text }, { result: "ü" }]);
    }
  });

  it("answers a Redis error with 400 and its text, errors never base64", async () => {
    const res = await post("/", ["EVALSHA", "f".repeat(40), 0], { "upstash-encoding": "base64" });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("NOSCRIPT No matching script. Please use EVAL.");
    const wrong = await post("/", ["NOTACOMMAND"]);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/unknown command/);
  });

  it("rejects malformed bodies with 400 {error}", async () => {
    for (const body of ["not json", "{}", "[]", "[1]", '["GET", {"a":1}]', '["GET", null]']) {
      const res = await post("/", body);
      expect(res.status, body).toBe(400);
      expect(typeof res.body.error).toBe("string");
    }
  });

  it("refuses commands that would block or re-scope a shared connection", async () => {
    for (const cmd of [["BLPOP", key("l"), 0], ["SELECT", 1], ["SUBSCRIBE", "c"], ["MULTI"]]) {
      const res = await post("/", cmd);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/not supported/);
    }
  });

  it("accepts a body of 10 MB, Upstash's request limit, and refuses one byte more with Upstash's error before Redis sees it", async () => {
    const k = key("big");
    const limit = 10 * 1024 * 1024;
    const overhead = JSON.stringify(["SET", k, ""]).length;
    const value = "y".repeat(limit - overhead);
    expect((await post("/", ["SET", k, value])).body).toEqual({ result: "OK" });
    expect((await post("/", ["STRLEN", k])).body).toEqual({ result: limit - overhead });
    const over = await post("/", ["SET", `${k}:over`, `${value}y`]);
    expect(over).toMatchObject({ status: 400, body: { error: "ERR max request size exceeded" } });
    expect((await post("/", ["EXISTS", `${k}:over`])).body).toEqual({ result: 0 });
  });
});

describe("/pipeline", () => {
  it("runs in order and answers 200 with one {result} or {error} per command", async () => {
    const k = key("pipe");
    const res = await post(
      "/pipeline",
      [
        ["SET", k, "1"],
        ["LPUSH", k, "x"],
        ["INCR", k],
        ["BLPOP", k, 0],
        ["GET", k],
      ],
      {
        "upstash-encoding": "base64",
      },
    );
    expect(res.status).toBe(200);
    expect(res.body[0]).toEqual({ result: b64("OK") });
    expect(res.body[1].error).toMatch(/WRONGTYPE/);
    expect(res.body[2]).toEqual({ result: 2 });
    expect(res.body[3].error).toMatch(/not supported/);
    expect(res.body[4]).toEqual({ result: b64("2") });
  });
});

describe("/multi-exec", () => {
  it("answers per-command results, runtime errors included", async () => {
    const k = key("tx");
    const res = await post("/multi-exec", [
      ["SET", k, "a"],
      ["INCR", k],
      ["GET", k],
    ]);
    expect(res.status).toBe(200);
    expect(res.body[0]).toEqual({ result: "OK" });
    expect(res.body[1].error).toMatch(/not an integer/);
    expect(res.body[2]).toEqual({ result: "a" });
  });

  it("answers non-2xx {error} when Redis discards the transaction, and changes nothing", async () => {
    const k = key("discard");
    const res = await post("/multi-exec", [
      ["SET", k, "a"],
      ["SET", k],
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/EXECABORT/);
    expect((await post("/", ["EXISTS", k])).body.result).toBe(0);
  });
});

/** A command Redis spends a while on (a Lua loop to 2,000,000), to be in flight when the bridge stops. */
/**
 * A call Redis takes 200 ms over, by its own clock, however fast the machine:
 * the shutdown tests act 20 ms in, while it is surely still running (a loop
 * of a fixed count finished first on a quiet machine).
 */
const slowCall = (bridgeUrl: string, token: string) =>
  fetch(bridgeUrl, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify([
      "EVAL",
      "local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 200000 return 2000000",
      0,
    ]),
  });

describe("what the bridge refuses", () => {
  it("answers 404 {error} for another endpoint or method, after the token", async () => {
    for (const [method, path] of [
      ["POST", "/nope"],
      ["GET", "/"],
      ["POST", "/pipeline/extra"],
    ] as const) {
      const res = await fetch(url() + path, { method, headers: auth(), ...(method === "POST" ? { body: "[]" } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as { error: string }).error).toBe(`no such endpoint: ${method} ${path}`);
    }
    expect((await fetch(`${url()}/nope`, { method: "POST", body: "[]" })).status).toBe(401);
    // A query string is not part of the endpoint.
    expect((await post("/?x=1", ["PING"])).body).toEqual({ result: "PONG" });
  });

  it("answers 413 {error} for a body over its limit, declared or streamed, and goes on serving", async () => {
    const bridge = await startBridge({ ...sharedRedisTarget(), token: "t0ken-limit", maxBodyBytes: 1_000 });
    try {
      const headers = { authorization: "Bearer t0ken-limit" };
      const big = JSON.stringify(["SET", key("big"), "z".repeat(2_000)]);
      const declared = await fetch(bridge.url, { method: "POST", headers, body: big });
      expect(declared.status).toBe(413);
      expect(await declared.json()).toEqual({ error: "request body too large" });
      // Without a Content-Length (chunked), the limit is counted as the body arrives.
      const stream = new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(big));
          c.close();
        },
      });
      const streamed = await fetch(bridge.url, { method: "POST", headers, body: stream, duplex: "half" } as RequestInit);
      expect(streamed.status).toBe(413);
      const ok = await fetch(bridge.url, { method: "POST", headers, body: JSON.stringify(["PING"]) });
      expect(await ok.json()).toEqual({ result: "PONG" });
    } finally {
      await bridge.close();
    }
  });
});

describe("outages", () => {
  it("answers a JSON 503 promptly when Redis is unreachable, and recovers when it returns", async () => {
    const port = await freePort();
    const bridge = await startBridge({ redisUrl: `redis://127.0.0.1:${port}`, token: "t0ken-outage" });
    try {
      const call = () => fetch(bridge.url, { method: "POST", headers: { authorization: "Bearer t0ken-outage" }, body: JSON.stringify(["PING"]) });
      const down = await call();
      expect(down.status).toBe(503);
      expect(((await down.json()) as { error: string }).error).toMatch(/unreachable/);
      const pipe = await fetch(`${bridge.url}/pipeline`, {
        method: "POST",
        headers: { authorization: "Bearer t0ken-outage" },
        body: JSON.stringify([["PING"]]),
      });
      expect(pipe.status).toBe(503);

      const redis = await startRedis({ port });
      try {
        // The bridge reconnects on its own; poll a bounded number of times.
        let status = 0;
        for (let i = 0; i < 100 && status !== 200; i++) {
          await new Promise((r) => setTimeout(r, 50));
          status = (await call()).status;
        }
        expect(status).toBe(200);
      } finally {
        await redis.stop();
      }
    } finally {
      await bridge.close();
    }
  });

  it("shuts down cleanly: in-flight requests finish, then the port closes", async () => {
    const bridge = await startBridge({ ...sharedRedisTarget(), token: "t0ken-shutdown" });
    const inflight = slowCall(bridge.url, "t0ken-shutdown");
    await new Promise((r) => setTimeout(r, 20));
    const closed = bridge.close();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: number }).result).toBe(2_000_000);
    await closed;
    await expect(fetch(bridge.url, { method: "POST", body: "[]" })).rejects.toThrow();
  });

  it("aborts like a crash: requests in flight are cut, then the port closes", async () => {
    const bridge = await startBridge({ ...sharedRedisTarget(), token: "t0ken-abort" });
    const inflight = slowCall(bridge.url, "t0ken-abort");
    const cut = expect(inflight).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 20));
    await bridge.abort();
    await cut;
    await expect(fetch(bridge.url, { method: "POST", body: "[]" })).rejects.toThrow();
  });
});
