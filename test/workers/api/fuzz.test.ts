/**
 * ≥ 1,000 random and malformed bodies per write route (fast-check): no
 * answer is a 5xx, and a rejected request writes no Redis key at all. Runs
 * against a Redis of its own so DBSIZE counts only this test's keys.
 */
import fc from "fast-check";
import { describe, expect, inject, it } from "vitest";
import { createRedis } from "../../../src/queue/redis.js";
import { call, isolatedEnv } from "./helpers.js";

const env = isolatedEnv({ UPSTASH_REDIS_REST_URL: inject("fuzzBridgeUrl"), UPSTASH_REDIS_REST_TOKEN: inject("fuzzBridgeToken") });
const redis = createRedis({ redisUrl: inject("fuzzBridgeUrl"), redisToken: inject("fuzzBridgeToken"), redisTimeoutMs: 10_000 });
const RUNS = 1_000;

const validJob = { topic: "fz", payload: { a: 1 }, delay: "5s", maxAttempts: 3, backoff: { type: "fixed", delay: "1s" } };
const valid: Record<string, object> = {
  "POST /v1/jobs": validJob,
  "POST /v1/jobs/batch": { jobs: [validJob] },
  "PATCH /v1/jobs/{id}": { delay: "10s" },
  "POST /v1/jobs/{id}/ack": { attempt: 1 },
  "POST /v1/jobs/{id}/nack": { attempt: 1, error: "x" },
  "POST /v1/jobs/{id}/extend": { attempt: 1, leaseMs: 30_000 },
  "PUT /v1/topics/{topic}": { ratePerSec: 5, mode: "push" },
  "POST /v1/topics/{topic}/dead/replay": { all: true },
  "POST /v1/topics/{topic}/claim": { max: 5 },
  "POST /v1/hooks/{topic}": { hello: "world" },
};

const hostile = fc.constantFrom(
  "'; DROP TABLE jobs; --",
  "redis.call('FLUSHALL')",
  "]] .. redis.call('DEL', KEYS[1]) .. [[",
  "{hash}",
  "\u0000\u0001\uffff",
  "../../etc/passwd",
  "💥".repeat(50),
  "x".repeat(5_000),
);
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostile, fc.constant(undefined));

/** A body: a valid one with a field broken, random JSON, or bytes that are not JSON at all. */
function bodies(template: object) {
  const keys = Object.keys(template);
  const mutated = fc.record({ key: fc.constantFrom(...keys, "extra"), value: anyValue }).map(({ key, value }) => {
    const copy: Record<string, unknown> = structuredClone(template) as Record<string, unknown>;
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return { raw: JSON.stringify(copy), type: "application/json" };
  });
  const json = fc.jsonValue({ maxDepth: 4 }).map((v) => ({ raw: JSON.stringify(v) ?? "null", type: "application/json" }));
  const text = fc.string({ maxLength: 200 }).map((s) => ({ raw: s, type: "application/json" }));
  const bytes = fc.uint8Array({ maxLength: 64 }).map((b) => ({ raw: b, type: "application/json" }));
  const wrongType = fc
    .record({ type: fc.constantFrom("text/plain", "application/xml", "multipart/form-data; boundary=x", ""), v: fc.jsonValue() })
    .map(({ type, v }) => ({ raw: JSON.stringify(v) ?? "", type }));
  const deep = fc.integer({ min: 60, max: 5_000 }).map((n) => ({ raw: "[".repeat(n) + "]".repeat(n), type: "application/json" }));
  return fc.oneof({ weight: 6, arbitrary: mutated }, { weight: 2, arbitrary: json }, { weight: 2, arbitrary: text }, bytes, wrongType, deep);
}

async function keyCount(): Promise<number> {
  return (await redis.dbsize()) as number;
}

describe.each(Object.keys(valid))("%s", (route) => {
  it(`answers ${RUNS} random bodies without a 5xx; rejected ones write nothing`, { timeout: 300_000 }, async () => {
    const [method, pattern] = route.split(" ") as [string, string];
    // Real targets: a scheduled job, a topic with a dead job.
    const { body: job } = await call(env, "/v1/jobs", { body: { topic: "fz", delay: "1h" } });
    const path = pattern.replace("{id}", job.id).replace("{topic}", "fz");
    let before = await keyCount();
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(bodies(valid[route]!), fc.nat(9), async ({ raw, type }, dice) => {
        const headers: Record<string, string> = type ? { "content-type": type } : {};
        // One request in ten comes without a token.
        const r = await call(env, path, { method, raw, headers, token: dice === 0 ? null : undefined });
        expect(r.status, `${route} ${typeof raw === "string" ? raw.slice(0, 200) : "bytes"}`).toBeLessThan(500);
        const after = await keyCount();
        if (r.status >= 400) {
          rejected++;
          expect(after, `${route} answered ${r.status} but wrote keys: ${typeof raw === "string" ? raw.slice(0, 200) : "bytes"}`).toBe(before);
        }
        before = after;
      }),
      { numRuns: RUNS },
    );
    // Any body is a valid webhook, so ingest rejects far fewer; elsewhere most bodies are broken.
    expect(rejected).toBeGreaterThan(route.includes("/hooks/") ? RUNS / 10 : RUNS / 2);
  });
});
