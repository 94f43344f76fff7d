/**
 * Limit errors are their own class, and no payload reaches a log (issue 33, item 4). The stack (npm start) runs
 * on a redis-server of its own behind the bridge; the test fills it past `maxmemory` (noeviction), so Redis refuses
 * writes, and the bridge answers as Upstash does ("ERR DB capacity quota exceeded"); then it lifts the limit (CONFIG
 * SET), all through the bridge's REST API. The other Upstash limits are the bridge's own, lowered for one request
 * (`setLimits`); the classification of each exact text is also checked on real Redis returning it from a script
 * (`redis.error_reply`).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Api } from "../../harness/api.js";
import { startNpmStart, type NpmStart } from "../../harness/npm-start.js";
import { requestLog, startReceiver, type Receiver } from "../../harness/receiver.js";
import { startRedisBridge, type RedisBridge } from "../../harness/redis-bridge.js";
import { sleep } from "../../harness/util.js";
import { UPSTASH_LIMITS } from "../../dev/bridge/limits.js";
import { RedisLimitError } from "../../src/queue/errors.js";
import { createRedis, redisCall } from "../../src/queue/redis.js";

let bridge: RedisBridge;
let stack: NpmStart;
let receiver: Receiver;
let api: Api;
const log = requestLog();

const CARD = "4111-1111-1111-1111";
const IDEMPOTENCY_KEY = `idem-secret-${crypto.randomUUID()}`;

beforeAll(async () => {
  receiver = await startReceiver([log]);
  bridge = await startRedisBridge();
  stack = await startNpmStart({
    name: "redis-limits",
    redis: { restUrl: bridge.bridge.url, restToken: bridge.token },
    // The tick's JSON lines too: none may carry the payload.
    logLevel: "log",
    settings: { TICK_POLL_MS: "100", TICK_IDLE_PEEK_MS: "0", ALLOW_PRIVATE_TARGETS: "true" },
  });
  api = new Api(stack.url, stack.token);
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  await bridge?.stop();
  await receiver?.close();
});

/** One command straight to Redis through the bridge's REST API. */
async function redis(...command: Array<string | number>): Promise<{ result?: unknown; error?: string }> {
  const res = await fetch(bridge.bridge.url, {
    method: "POST",
    headers: { authorization: `Bearer ${bridge.token}`, "content-type": "application/json" },
    body: JSON.stringify(command),
  });
  return (await res.json()) as { result?: unknown; error?: string };
}

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function metric(text: string, limit: string): number {
  const m = text.match(new RegExp(`^delayline_redis_limit_errors_total\\{shard="main",limit="${limit}"\\} (\\d+)$`, "m"));
  return m ? Number(m[1]) : Number.NaN;
}

it("a full Redis (maxmemory, noeviction): 507 redis-limit naming the limit, no payload or key in the answer or the logs; counted, and the tick goes on once it lifts", async () => {
  const topic = "full-redis";
  await api.ok("PUT", `/v1/topics/${topic}`, { url: `${receiver.url}/hook/${topic}` });
  await api.ok("POST", "/v1/jobs", { topic, payload: { warm: true }, delay: "1h" });
  const before = metric(await (await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${stack.token}` } })).text(), "capacity");
  expect(before).toBe(0);

  expect((await redis("config", "set", "maxmemory-policy", "noeviction")).result).toBe("OK");
  expect((await redis("config", "set", "maxmemory", "1mb")).result).toBe("OK");
  // Fill it until Redis refuses a write.
  const filler = "x".repeat(200_000);
  for (let i = 0; ; i++) {
    const r = await redis("set", `filler:${i}`, filler);
    if (r.error) {
      // Redis' own OOM, worded as Upstash words a full database.
      expect(r.error).toBe("ERR DB capacity quota exceeded");
      break;
    }
    expect(i).toBeLessThan(100);
  }

  // Both ways an enqueue writes: the script (an idempotency key) and the steady path's pipeline.
  const keyed = await api.request("POST", "/v1/jobs", { topic, payload: { card: CARD } }, { "idempotency-key": IDEMPOTENCY_KEY });
  const plain = await api.request("POST", "/v1/jobs", { topic, payload: { card: CARD } });
  for (const res of [keyed, plain]) {
    expect(res.status).toBe(507);
    expect(res.contentType).toBe("application/problem+json");
    expect(res.body).toMatchObject({ type: "urn:delayline:redis-limit", status: 507, title: "Insufficient Storage", limit: "capacity" });
    expect(res.body.detail).toMatch(/capacity limit/);
    expect(res.body.detail).not.toContain("command was");
    expect(JSON.stringify(res.body)).not.toContain(CARD);
    expect(JSON.stringify(res.body)).not.toContain(IDEMPOTENCY_KEY);
  }

  // The tick meets the limit too, and waits it out instead of ending.
  await until("the tick to meet the limit", () => /Redis refused a command at its capacity limit; the tick waits and retries/.test(stack.output()));

  // The limit lifts: the counts are stored, and the tick (which waited it out) delivers a job due now.
  expect((await redis("config", "set", "maxmemory", "0")).result).toBe("OK");
  const job = await api.ok("POST", "/v1/jobs", { topic, payload: { after: "lift" } });
  await until("the delivery after the limit lifted", () => log.deliveries.some((d) => d.headers["delayline-job-id"] === job.id));

  const metrics = await (await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${stack.token}` } })).text();
  expect(metric(metrics, "capacity")).toBeGreaterThanOrEqual(2);
  expect(metric(metrics, "record-size")).toBe(0);
  const stats = await api.ok("GET", "/v1/stats");
  expect(stats.tick.redisLimitErrors.capacity).toBeGreaterThanOrEqual(2);

  const output = stack.output();
  expect(output).not.toContain(CARD);
  expect(output).not.toContain(IDEMPOTENCY_KEY);
  expect(output).not.toContain("command was");
  // The API logged each refusal, naming the limit and the call only.
  expect(output).toMatch(/"msg":"Redis refused a request at one of its limits","limit":"capacity","error":"Redis refused script enqueue/);
}, 150_000);

it.each([
  ["ERR max single record size exceeded", "record-size"],
  ["ERR max request size exceeded", "request-size"],
  ["ERR max requests limit exceeded", "requests"],
  ["ERR DB capacity quota exceeded", "capacity"],
])("Redis answering %s is a RedisLimitError of limit %s, its message without the command's arguments", async (text, limit) => {
  const redisClient = createRedis({ redisUrl: bridge.bridge.url, redisToken: bridge.token, redisTimeoutMs: 5_000 });
  const secret = `secret-${crypto.randomUUID()}`;
  const err = await redisCall({ name: "script probe", repeatSafe: true }, () =>
    redisClient.eval("return redis.error_reply(ARGV[1])", [], [text, secret]),
  ).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RedisLimitError);
  expect((err as RedisLimitError).limit).toBe(limit);
  expect((err as Error).message).toContain("script probe");
  expect((err as Error).message).not.toContain(secret);
});

/** A payload of about 100 KB: past each lowered limit below, far inside the API's own. */
const LARGE = "y".repeat(100_000);

it.each([
  ["record-size", 507, { maxRecordBytes: 64 * 1024 }, "ERR max single record size exceeded"],
  ["request-size", 413, { maxRequestBytes: 64 * 1024 }, "ERR max request size exceeded"],
  ["requests", 503, { maxRequests: 1 }, "ERR max requests limit exceeded"],
] as const)(
  "the bridge at Upstash's %s limit (lowered for one request): the API's problem, status %i, counted in /metrics",
  async (limit, status, lowered, text) => {
    const topic = `upstash-${limit}`;
    const marker = `marker-${crypto.randomUUID()}`;
    await api.ok("PUT", `/v1/topics/${topic}`, { url: `${receiver.url}/hook/${topic}` });
    const metrics = async () => metric(await (await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${stack.token}` } })).text(), limit);
    const before = await metrics();
    bridge.bridge.setLimits(lowered);
    // A budget of one command, spent here (or by the tick): the enqueue is past it.
    if (limit === "requests") await redis("ping");
    let res: Awaited<ReturnType<Api["request"]>>;
    try {
      res = await api.request("POST", "/v1/jobs", { topic, payload: { marker, large: LARGE }, delay: "1h" });
    } finally {
      bridge.bridge.setLimits({ maxRecordBytes: UPSTASH_LIMITS.maxRecordBytes, maxRequestBytes: UPSTASH_LIMITS.maxRequestBytes, maxRequests: 0 });
    }
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ type: "urn:delayline:redis-limit", status, limit });
    expect(res.body.detail).toContain(text);
    expect(res.body.detail).not.toContain(marker);
    if (status === 503) expect(res.retryAfterMs).toBe(60_000);
    // The tick may have met the lowered limit too: at least this refusal is counted.
    expect(await metrics()).toBeGreaterThanOrEqual(before + 1);
    // Nothing of the refused enqueue was stored.
    const page = await api.ok("GET", `/v1/topics/${topic}/jobs`);
    expect(page.jobs).toEqual([]);
  },
);
