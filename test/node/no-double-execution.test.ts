/**
 * A write whose reply was lost is never sent again unless running it twice is harmless (issue 33, item 5). The
 * Worker (npm start) reaches the bridge through harness/drop-reply-proxy.ts, which forwards a request, waits for
 * the bridge's answer (Redis ran it) and then drops the connection without answering.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../../dev/ports.js";
import { Api } from "../../harness/api.js";
import { type DropReplyProxy, startDropReplyProxy } from "../../harness/drop-reply-proxy.js";
import { startNpmStart, type NpmStart } from "../../harness/npm-start.js";
import { type Receiver, requestLog, startReceiver } from "../../harness/receiver.js";
import { type RedisBridge, startRedisBridge } from "../../harness/redis-bridge.js";
import { sleep } from "../../harness/util.js";
import { RedisOutcomeUnknownError } from "../../src/queue/errors.js";
import { createRedis, RedisUnavailableError, redisCall } from "../../src/queue/redis.js";

let bridge: RedisBridge;
let proxy: DropReplyProxy;
let stack: NpmStart;
let receiver: Receiver;
let api: Api;
const log = requestLog();

beforeAll(async () => {
  receiver = await startReceiver([log]);
  bridge = await startRedisBridge();
  proxy = await startDropReplyProxy(bridge.bridge.url);
  stack = await startNpmStart({
    name: "drop-reply",
    redis: { restUrl: proxy.url, restToken: bridge.token },
    settings: { REDIS_TIMEOUT_MS: "30000", TICK_POLL_MS: "100", TICK_IDLE_PEEK_MS: "0", ALLOW_PRIVATE_TARGETS: "true" },
  });
  api = new Api(stack.url, stack.token);
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
  await bridge?.stop();
  await receiver?.close();
});

/** The bridge's answer shows the command ran (not a NOSCRIPT, which ran nothing and is followed by an EVAL). */
const ranIt = (status: number, body: string) => status === 200 && !body.includes("NOSCRIPT");

/** Waits until `check` holds (polling); fails after 30 s. */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

it("an enqueue without an idempotency key whose reply is lost runs once: 503 'outcome unknown', the job stored and delivered once", async () => {
  const topic = "drop-enqueue";
  const marker = `marker-${crypto.randomUUID()}`;
  await api.ok("PUT", `/v1/topics/${topic}`, { url: `${receiver.url}/hook/${topic}` });
  const deliveries = () => log.deliveries.filter((d) => d.path === `/hook/${topic}`);
  let jobId = "";
  proxy.drop({
    matches: (_path, body) => body.includes(marker),
    answered: ranIt,
    // Before the reply is lost, the tick delivers the job and settles it: a repeat of the enqueue would store it again.
    hold: async () => {
      // The enqueue that would wake the tick has not returned: start one as the cron does.
      void fetch(`${stack.url}/__scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(() => {});
      await until("the delivery", () => deliveries().length === 1);
      jobId = deliveries()[0]!.headers["delayline-job-id"]!;
      await until("the job to finish", async () => (await api.request("GET", `/v1/jobs/${jobId}`)).body?.state === "succeeded");
    },
  });
  const res = await api.request("POST", "/v1/jobs", { topic, payload: { marker } });
  expect(proxy.dropped()).toBe(1);
  expect(res.status).toBe(503);
  expect(res.contentType).toBe("application/problem+json");
  expect(res.body.type).toBe("urn:delayline:unavailable");
  expect(res.body.detail).toMatch(/outcome is unknown/);
  expect(res.body.detail).toMatch(/Idempotency-Key/);
  // The enqueue reached Redis once, and the job is the one that was delivered, finished, not scheduled again.
  expect(proxy.forwarded((_path, body, status, answer) => body.includes(marker) && ranIt(status, answer))).toBe(1);
  expect((await api.ok("GET", `/v1/jobs/${jobId}`)).state).toBe("succeeded");
  expect((await api.ok("GET", `/v1/topics/${topic}/jobs?state=scheduled`)).jobs).toEqual([]);
  expect((await api.ok("GET", `/v1/topics/${topic}/jobs?state=inflight`)).jobs).toEqual([]);
  expect(deliveries()).toHaveLength(1);
}, 90_000);

it("the same enqueue with an idempotency key is sent again and answers 201 with the one job", async () => {
  const topic = "drop-enqueue-keyed";
  const marker = `marker-${crypto.randomUUID()}`;
  await api.ok("PUT", `/v1/topics/${topic}`, { url: `${receiver.url}/hook/${topic}` });
  const before = proxy.dropped();
  proxy.drop({ matches: (_path, body) => body.includes(marker), answered: ranIt });
  const res = await api.request("POST", "/v1/jobs", { topic, payload: { marker }, delay: "1h" }, { "idempotency-key": `key-${marker}` });
  expect(proxy.dropped()).toBe(before + 1);
  expect(res.status).toBeLessThan(300);
  expect(proxy.forwarded((_path, body, status, answer) => body.includes(marker) && ranIt(status, answer))).toBe(2);
  const listed = (await api.ok("GET", `/v1/topics/${topic}/jobs?state=scheduled`)).jobs as Array<{ id: string }>;
  expect(listed.map((j) => j.id)).toEqual([res.body.id]);
}, 60_000);

it("a read whose reply is lost is sent again and succeeds", async () => {
  const topic = "drop-read";
  await api.ok("PUT", `/v1/topics/${topic}`, { url: `${receiver.url}/hook/${topic}` });
  const job = await api.ok("POST", "/v1/jobs", { topic, payload: { n: 1 }, delay: "1h" });
  const before = proxy.dropped();
  proxy.drop({ matches: (_path, body) => body.includes(job.id) });
  const res = await api.request("GET", `/v1/jobs/${job.id}`);
  expect(proxy.dropped()).toBe(before + 1);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ id: job.id, state: "scheduled" });
}, 60_000);

it("from Node, a refused connection is known never to have been sent: even a write is tried again, and fails as unreachable, not as unknown", async () => {
  const closed = await freePort();
  const client = createRedis({ redisUrl: `http://127.0.0.1:${closed}`, redisToken: "t", redisTimeoutMs: 5_000 });
  let calls = 0;
  const err = await redisCall({ name: "script enqueue", repeatSafe: false }, () => {
    calls++;
    return client.set("k", "v");
  }).catch((e: unknown) => e);
  expect(calls).toBe(3);
  expect(err).toBeInstanceOf(RedisUnavailableError);
  expect(err).not.toBeInstanceOf(RedisOutcomeUnknownError);
  expect((err as Error).message).toMatch(/^Redis is unreachable \(script enqueue\)/);
});
