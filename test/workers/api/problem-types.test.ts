import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../../app/worker.js";
import { CLIENT_PROBLEM_TYPES, Delayline, DelaylineError } from "../../../src/client/index.js";
import type { Env } from "../../../src/env.js";
import { PROBLEM_TYPES } from "../../../src/producer/problem.js";
import { call, isolatedEnv, TOKEN, type CallOptions } from "./helpers.js";

interface Row {
  what: string;
  status: number;
  type: string;
  env?: Partial<Env>;
  /** Requests made first (e.g. a topic that fills the cap). */
  before?: Array<[string, CallOptions]>;
  path: string;
  options: CallOptions;
}

const json = { "content-type": "application/json" };

// One row per way the API answers with a problem: each status path yields its urn.
const ROWS: Row[] = [
  { what: "malformed JSON", status: 400, type: PROBLEM_TYPES.badRequest, path: "/v1/jobs", options: { method: "POST", raw: "{", headers: json } },
  { what: "no token", status: 401, type: PROBLEM_TYPES.unauthorized, path: "/v1/topics", options: { token: null } },
  { what: "a wrong token", status: 401, type: PROBLEM_TYPES.unauthorized, path: "/v1/topics", options: { token: "not-the-token-0123456789" } },
  { what: "an unknown route", status: 404, type: PROBLEM_TYPES.notFound, path: "/v1/nothing-here", options: {} },
  { what: "an unknown job", status: 404, type: PROBLEM_TYPES.notFound, path: "/v1/jobs/no-such-job", options: {} },
  { what: "a method the path does not serve", status: 405, type: PROBLEM_TYPES.methodNotAllowed, path: "/v1/stats", options: { method: "DELETE" } },
  {
    what: "a claim on a push topic",
    status: 409,
    type: PROBLEM_TYPES.conflict,
    path: "/v1/topics/pushy/claim",
    options: { method: "POST", body: {} },
  },
  {
    what: "a body over the limit",
    status: 413,
    type: PROBLEM_TYPES.payloadTooLarge,
    env: { MAX_BODY_BYTES: "1024" },
    path: "/v1/jobs",
    options: { method: "POST", raw: JSON.stringify({ topic: "t", payload: "x".repeat(2_000) }), headers: json },
  },
  {
    what: "a batch whose Redis request passes the request budget",
    status: 413,
    type: PROBLEM_TYPES.requestTooLarge,
    env: { REDIS_MAX_REQUEST_BYTES: "65536" },
    path: "/v1/jobs/batch",
    options: {
      method: "POST",
      body: {
        jobs: [
          { topic: "t", payload: "x".repeat(40_000) },
          { topic: "t", payload: "y".repeat(40_000) },
        ],
      },
    },
  },
  {
    what: "a body that is not JSON",
    status: 415,
    type: PROBLEM_TYPES.unsupportedMediaType,
    path: "/v1/jobs",
    options: { method: "POST", raw: "x", headers: { "content-type": "text/plain" } },
  },
  { what: "a schema violation", status: 422, type: PROBLEM_TYPES.validation, path: "/v1/jobs", options: { method: "POST", body: { topic: "" } } },
  {
    what: "a rule the schema cannot see (a private target)",
    status: 422,
    type: PROBLEM_TYPES.validation,
    env: { ALLOW_PRIVATE_TARGETS: "false" },
    path: "/v1/jobs",
    options: { method: "POST", body: { topic: "t", target: { url: "http://127.0.0.1:1/x" } } },
  },
  {
    what: "a topic past the cap",
    status: 422,
    type: PROBLEM_TYPES.topicLimit,
    env: { MAX_TOPICS: "1" },
    before: [["/v1/jobs", { method: "POST", body: { topic: "first", delay: "1h" } }]],
    path: "/v1/jobs",
    options: { method: "POST", body: { topic: "second", delay: "1h" } },
  },
  {
    what: "a topic at its maxLength",
    status: 429,
    type: PROBLEM_TYPES.topicFull,
    before: [
      ["/v1/topics/capped", { method: "PUT", body: { maxLength: 1 } }],
      ["/v1/jobs", { method: "POST", body: { topic: "capped", delay: "1h" } }],
    ],
    path: "/v1/jobs",
    options: { method: "POST", body: { topic: "capped", delay: "1h" } },
  },
  {
    what: "a flow key at its maxKeyLength",
    status: 429,
    type: PROBLEM_TYPES.flowKeyFull,
    before: [
      ["/v1/topics/keyed", { method: "PUT", body: { maxKeyLength: 1 } }],
      ["/v1/jobs", { method: "POST", body: { topic: "keyed", delay: "1h", flowKey: "k" } }],
    ],
    path: "/v1/jobs",
    options: { method: "POST", body: { topic: "keyed", delay: "1h", flowKey: "k" } },
  },
  {
    what: "headers over 32 KiB",
    status: 431,
    type: PROBLEM_TYPES.headersTooLarge,
    path: "/v1/topics",
    options: { headers: { "x-big": "x".repeat(33 * 1024) } },
  },
  { what: "bad settings", status: 500, type: PROBLEM_TYPES.settings, env: { MAX_TOPICS: "zero" }, path: "/v1/topics", options: {} },
  {
    what: "Redis unreachable",
    status: 503,
    type: PROBLEM_TYPES.unavailable,
    env: { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" },
    path: "/v1/topics",
    options: {},
  },
];

describe("problem types", () => {
  it.each(ROWS)("$status $what: type $type, problem+json, nosniff", async (row) => {
    const env = isolatedEnv(row.env);
    for (const [path, options] of row.before ?? []) expect((await call(env, path, options)).status).toBeLessThan(300);
    const res = await call(env, row.path, row.options);
    expect(res.status).toBe(row.status);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.body).toMatchObject({ type: row.type, status: row.status });
  });

  it("every type the API lists is urn:delayline:<slug>, each once, and the OpenAPI Problem schema names them all", async () => {
    const types = Object.values(PROBLEM_TYPES);
    expect(new Set(types).size).toBe(types.length);
    for (const t of types) expect(t).toMatch(/^urn:delayline:[a-z]+(-[a-z]+)*$/);
    // Every listed type but the unexpected 500 is produced by a row above, and
    // redis-limit, which needs a full Redis: test/node/redis-limits.test.ts.
    expect(new Set(ROWS.map((r) => r.type))).toEqual(new Set(types.filter((t) => t !== PROBLEM_TYPES.internal && t !== PROBLEM_TYPES.redisLimit)));
    const doc = (await call(isolatedEnv(), "/openapi.json", { token: null })).body as {
      components: { schemas: { Problem: { properties: { type: { description: string } } } } };
    };
    for (const t of types) expect(doc.components.schemas.Problem.properties.type.description).toContain(t);
  });

  it("the client's errors expose the type: the API's, or the client's own for an answer that is not a problem", async () => {
    const env = isolatedEnv();
    const dl = new Delayline({ baseUrl: "http://delayline.test", token: TOKEN, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
    const notFound = await dl.jobs.reschedule("no-such-job", { delay: "1m" }).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(DelaylineError);
    expect((notFound as DelaylineError).type).toBe(PROBLEM_TYPES.notFound);
    const proxy = new Delayline({
      baseUrl: "http://delayline.test",
      token: TOKEN,
      retry: false,
      fetch: async () => new Response("<html>bad gateway</html>", { status: 502 }),
    });
    const bad = await proxy.jobs.get("x").catch((e: unknown) => e);
    expect((bad as DelaylineError).type).toBe(CLIENT_PROBLEM_TYPES.notProblem);
  });
});

describe("X-Content-Type-Options: nosniff", () => {
  it.each(["/v1/topics", "/v1/stats", "/metrics", "/healthz", "/openapi.json", "/docs/", "/dashboard/", "/docs"])("GET %s carries it", async (path) => {
    const res = await call(isolatedEnv(), path);
    expect(res.status).toBeLessThan(400);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
