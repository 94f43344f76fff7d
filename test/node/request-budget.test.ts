/**
 * A batch enqueue whose Redis request would pass the request budget is refused with a 413 before anything is sent
 * (issue 33, item 3). The stack (npm start) runs with its bridge's Upstash request limit lowered to 256 KiB
 * (BRIDGE_MAX_REQUEST_BYTES), which npm start passes to the Worker (REDIS_MAX_REQUEST_BYTES), so its budget is 95% of that:
 * 249,036 bytes. The request counted is the JSON the client sends (payloads escaped twice: once in the job record,
 * once in the command array), so quotes, backslashes and control characters count at their escaped size.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Api } from "../../harness/api.js";
import { startNpmStart, type NpmStart } from "../../harness/npm-start.js";
import { Delayline, DelaylineValidationError } from "../../src/client/index.js";
import { REQUEST_BUDGET_PERCENT } from "../../src/limits.js";

const LIMIT = 256 * 1024;
const BUDGET = Math.floor((LIMIT * REQUEST_BUDGET_PERCENT) / 100);

let stack: NpmStart;
let api: Api;

beforeAll(async () => {
  stack = await startNpmStart({
    name: "request-budget",
    // Only the bridge's limit: npm start tells the Worker (REDIS_MAX_REQUEST_BYTES).
    settings: { BRIDGE_MAX_REQUEST_BYTES: String(LIMIT), TICK_IDLE_PEEK_MS: "0" },
  });
  api = new Api(stack.url, stack.token);
}, 150_000);

afterAll(async () => {
  await stack?.stop();
});

async function requestSizeRefusals(): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${stack.token}` } })).text();
  const m = text.match(/^delayline_redis_limit_errors_total\{shard="main",limit="request-size"\} (\d+)$/m);
  return m ? Number(m[1]) : Number.NaN;
}

/** The request size the 413's detail names. */
function refusedBytes(detail: string): number {
  const m = detail.match(/Redis request would be (\d+) bytes/);
  if (!m) throw new Error(`no size in ${JSON.stringify(detail)}`);
  return Number(m[1]);
}

/** `sizes` with `bytes` fewer payload characters in all, taken from the last jobs first. */
function shrink(sizes: number[], bytes: number): number[] {
  const out = [...sizes];
  for (let i = out.length - 1, left = bytes; i >= 0 && left > 0; i--) {
    const take = Math.min(out[i]!, left);
    out[i]! -= take;
    left -= take;
  }
  return out;
}

const batch = (topic: string, sizes: number[]) => ({ jobs: sizes.map((n, i) => ({ topic, payload: { i, pad: "x".repeat(n) }, delay: "1h" })) });

it("a batch past the request limit is refused with a 413 naming the budget and its size, nothing stored; one just under the budget is stored", async () => {
  const topic = "budget-batch";
  const before = await requestSizeRefusals();
  // Ten jobs of 30 KB: ~300 KB of request, past the bridge's 256 KiB, far inside MAX_BODY_BYTES and MAX_PAYLOAD_BYTES.
  const sizes = Array.from({ length: 10 }, () => 30_000);
  const over = await api.request("POST", "/v1/jobs/batch", batch(topic, sizes));
  expect(over.status).toBe(413);
  expect(over.contentType).toBe("application/problem+json");
  expect(over.body).toMatchObject({ type: "urn:delayline:request-too-large", status: 413, title: "Content Too Large" });
  expect(over.body.detail).toContain(`the request budget is ${BUDGET} bytes`);
  const size = refusedBytes(over.body.detail);
  expect(size).toBeGreaterThan(LIMIT);
  // Nothing of it was stored, and nothing was sent: the bridge refused no request.
  expect((await api.ok("GET", `/v1/topics/${topic}/jobs`)).jobs).toEqual([]);
  expect(await requestSizeRefusals()).toBe(before);

  // Between the budget and the limit: still refused here (the margin), not by the bridge.
  const betweenSizes = shrink(sizes, size - BUDGET - 100);
  const between = await api.request("POST", "/v1/jobs/batch", batch(topic, betweenSizes));
  expect(between.status).toBe(413);
  expect(between.body.type).toBe("urn:delayline:request-too-large");
  const betweenSize = refusedBytes(between.body.detail);
  expect(betweenSize).toBeGreaterThan(BUDGET);
  expect(betweenSize).toBeLessThan(LIMIT);

  // The client surfaces it as its validation error, with the type to switch on.
  const dl = new Delayline({ baseUrl: stack.url, token: stack.token });
  const err = await dl.jobs.enqueueBatch(batch(topic, betweenSizes).jobs).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(DelaylineValidationError);
  expect((err as DelaylineValidationError).status).toBe(413);
  expect((err as DelaylineValidationError).type).toBe("urn:delayline:request-too-large");
  expect((await api.ok("GET", `/v1/topics/${topic}/jobs`)).jobs).toEqual([]);

  // Just under: 16 bytes below the budget (a topic's first batch may carry one flag byte more than a later one).
  const under = await api.request("POST", "/v1/jobs/batch", batch(topic, shrink(sizes, size - BUDGET + 16)));
  expect(under.status).toBe(201);
  const page = await api.ok("GET", `/v1/topics/${topic}/jobs?limit=100`);
  expect(page.jobs).toHaveLength(10);
  expect(await requestSizeRefusals()).toBe(before);
}, 60_000);

it("a payload full of characters JSON escapes counts at its escaped size: refused though its raw and serialized sizes fit", async () => {
  const topic = "budget-escapes";
  // A quote, a backslash and a control character: 3 bytes raw, 10 serialized (\" \\ \u0001), 15 on the wire (each escaped again).
  const n = 20_000;
  const payload = '"\\\u0001'.repeat(n);
  const serialized = new TextEncoder().encode(JSON.stringify(payload)).length;
  expect(serialized).toBeLessThan(BUDGET);
  for (const [path, body] of [
    ["/v1/jobs", { topic, payload, delay: "1h" }],
    ["/v1/jobs/batch", { jobs: [{ topic, payload, delay: "1h" }] }],
  ] as const) {
    const res = await api.request("POST", path, body);
    expect(res.status).toBe(413);
    expect(res.body.type).toBe("urn:delayline:request-too-large");
    const size = refusedBytes(res.body.detail);
    expect(size).toBeGreaterThanOrEqual(15 * n);
    expect(size).toBeGreaterThan(LIMIT);
  }
  expect((await api.ok("GET", `/v1/topics/${topic}/jobs`)).jobs).toEqual([]);
  // The same length of plain characters fits.
  const plain = await api.request("POST", "/v1/jobs", { topic, payload: "a".repeat(3 * n), delay: "1h" });
  expect(plain.status).toBe(201);
  expect((await api.ok("GET", `/v1/topics/${topic}/jobs`)).jobs).toHaveLength(1);
}, 60_000);

it("a schedule whose write would pass the budget (its payload escaped) is refused with the same 413, and not stored", async () => {
  const payload = '"\\\u0001'.repeat(20_000);
  const res = await api.request("PUT", "/v1/schedules/budget-schedule", { every: "1h", topic: "budget-schedule", payload });
  expect(res.status).toBe(413);
  expect(res.body.type).toBe("urn:delayline:request-too-large");
  expect(res.body.detail).toMatch(/^the schedule's Redis request would be \d+ bytes/);
  expect((await api.request("GET", "/v1/schedules/budget-schedule")).status).toBe(404);
  // A plain payload of the same length is stored.
  const plain = await api.request("PUT", "/v1/schedules/budget-schedule", { every: "1h", topic: "budget-schedule", payload: "a".repeat(60_000) });
  expect(plain.status).toBe(201);
}, 60_000);
