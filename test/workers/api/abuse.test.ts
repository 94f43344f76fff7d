/**
 * Attacks on the HTTP edge. Each is refused with its exact 4xx as
 * application/problem+json and changes nothing: a digest of every key, value
 * and expiry in a Redis of its own is the same before and after, and input
 * the edge can judge alone makes no Redis command at all (INFO commandstats).
 * Where a hostile string is valid input (Lua-looking text in a payload, an
 * idempotency key, a URL, a header value, a secret), it is stored and
 * delivered verbatim: data, never code.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { verifySignature } from "../../../src/client/index.js";
import { settings, type Env } from "../../../src/env.js";
import { deliverHttp } from "../../../src/handlers/http.js";
import { PermanentError } from "../../../src/handlers/registry.js";
import { topicOfJobId } from "../../../src/queue/ids.js";
import { tickOnce } from "../fixtures.js";
import { STATE_DIGEST } from "../queue/redis-meter.js";
import { call, deliveries, isolatedEnv, TOKEN, type CallOptions } from "./helpers.js";

const bridgeUrl = inject("abuseBridgeUrl");
const bridgeToken = inject("abuseBridgeToken");
const receiver = inject("receiverUrl");
const onAbuseRedis = { UPSTASH_REDIS_REST_URL: bridgeUrl, UPSTASH_REDIS_REST_TOKEN: bridgeToken };
/** A production-like deployment: private targets refused. */
const prod = (overrides: Partial<Env> = {}) => isolatedEnv({ ...onAbuseRedis, ALLOW_PRIVATE_TARGETS: "false", ...overrides });

type Res = Awaited<ReturnType<typeof call>>;
const tally = { refused: 0, verbatim: 0 };
afterAll(() => console.log(JSON.stringify({ abuse: { badInputsTried: tally.refused + tally.verbatim, ...tally } })));

/** One command over the REST protocol, outside the app (the digest and the counters must not go through what they check). */
async function rest(command: Array<string | number>): Promise<unknown> {
  const res = await fetch(bridgeUrl, { method: "POST", headers: { authorization: `Bearer ${bridgeToken}` }, body: JSON.stringify(command) });
  const body = (await res.json()) as { result?: unknown; error?: string };
  if (body.error !== undefined) throw new Error(body.error);
  return body.result;
}

async function digest(): Promise<string> {
  return JSON.stringify(await rest(["EVAL", STATE_DIGEST, 0]));
}

/** Commands Redis has run so far, leaving out INFO itself (each reading counts the one before it). */
async function commandsRun(): Promise<number> {
  let n = 0;
  for (const line of String(await rest(["INFO", "commandstats"])).split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m && m[1] !== "info") n += Number(m[2]);
  }
  return n;
}

function expectProblem(r: Res, status: number, label: string): void {
  expect(r.status, `${label}: ${JSON.stringify(r.body).slice(0, 300)}`).toBe(status);
  expect(r.headers.get("content-type"), label).toBe("application/problem+json");
  expect(r.body, label).toMatchObject({ status, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
  if (status === 401) expect(r.headers.get("www-authenticate"), label).toMatch(/^Bearer /);
}

interface Attack {
  label: string;
  path: string;
  options: CallOptions;
  status: number;
  /** The 422's errors name this path. */
  errorPath?: string;
}

/**
 * Sends each attack and checks its answer; across all of them the Redis
 * digest is unchanged and, unless `reads` (checking a webhook signature
 * needs the topic's secret), no command ran.
 */
async function refuses(env: Env, attacks: Attack[], { reads = false } = {}): Promise<void> {
  const before = await digest();
  const commandsBefore = await commandsRun();
  for (const a of attacks) {
    const r = await call(env, a.path, a.options);
    expectProblem(r, a.status, a.label);
    if (a.errorPath !== undefined) {
      const paths = (r.body.errors as Array<{ path: string }>).map((e) => e.path);
      expect(paths, a.label).toContain(a.errorPath);
    }
    tally.refused++;
  }
  if (!reads) expect(await commandsRun(), "refused input must not reach Redis").toBe(commandsBefore);
  expect(await digest(), "refused requests must change nothing").toBe(before);
}

const JOB_ID = "t.01ARZ3NDEKTSV4RRFFQ69G5FAV";

/** Runs short tick invocations until none of the topics has a job due or in flight (bounded, so a slow machine only waits longer). */
async function tickUntilIdle(env: Env, topics: string[]): Promise<void> {
  const s = settings(env);
  for (let i = 0; i < 30; i++) {
    await tickOnce(s, { scheduledTime: Date.now(), windowMs: 500 });
    const stats = await Promise.all(topics.map(async (t) => (await call(env, `/v1/topics/${t}`)).body as { ready: number; inflight: number }));
    if (stats.every((x) => x.ready + x.inflight === 0)) return;
  }
  throw new Error(`jobs of ${topics.join(", ")} still due after 30 ticks`);
}
const json = { "content-type": "application/json" };

let canary: string;
beforeAll(async () => {
  // A key outside any deployment's prefix: if a script ever ran user text, FLUSHALL or DEL would take it.
  canary = `canary-${crypto.randomUUID()}`;
  await rest(["SET", canary, "still here"]);
});

describe("tokens", () => {
  it("every /v1 route answers a missing, wrong or malformed token with 401 and never reaches Redis", async () => {
    const doc = (await call(prod(), "/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(doc.paths)
      .filter(([p]) => p.startsWith("/v1/"))
      .flatMap(([p, methods]) => Object.keys(methods).map((m) => ({ method: m.toUpperCase(), path: p.replace("{id}", JOB_ID).replace("{topic}", "t") })));
    expect(routes.length).toBeGreaterThanOrEqual(17);
    const variants: Array<[string, CallOptions]> = [
      ["no Authorization", { token: null }],
      ["empty Bearer", { token: null, headers: { authorization: "Bearer" } }],
      ["Bearer and a space", { token: null, headers: { authorization: "Bearer " } }],
      ["wrong token", { token: "wrong-token-0123456789" }],
      ["token plus a character", { token: `${TOKEN}x` }],
      ["token minus a character", { token: TOKEN.slice(0, -1) }],
      ["token in upper case", { token: TOKEN.toUpperCase() }],
      ["token twice", { token: null, headers: { authorization: `Bearer ${TOKEN} ${TOKEN}` } }],
      ["token without a scheme", { token: null, headers: { authorization: TOKEN } }],
      ["Basic with the token as password", { token: null, headers: { authorization: `Basic ${btoa(`u:${TOKEN}`)}` } }],
      ["another scheme", { token: null, headers: { authorization: `Token ${TOKEN}` } }],
    ];
    for (const route of routes) {
      const body = ["POST", "PUT", "PATCH"].includes(route.method) ? { raw: '{"topic":"t"}', headers: json } : {};
      const attacks: Attack[] = variants.map(([label, options]) => ({
        label: `${route.method} ${route.path}: ${label}`,
        path: route.path,
        options: { method: route.method, ...body, ...options, headers: { ...body.headers, ...options.headers } },
        status: 401,
      }));
      // The token in the query string is no token.
      // Headers past 32 KiB are refused before the token is even looked at.
      attacks.push({
        label: `${route.method} ${route.path}: a 1 MB token`,
        path: route.path,
        options: { method: route.method, ...body, token: "a".repeat(1_000_000) },
        status: 431,
      });
      attacks.push({
        label: `${route.method} ${route.path}?access_token`,
        path: `${route.path}?access_token=${TOKEN}&token=${TOKEN}`,
        options: { method: route.method, token: null, ...body },
        status: 401,
      });
      await refuses(prod(), attacks);
    }
  });
});

describe("bodies", () => {
  const tenMb = `{"topic":"t","payload":"${"x".repeat(10 * 1024 * 1024)}"}`;
  const stream = (bytes: number) => {
    let sent = 0;
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= bytes) return controller.close();
        controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
  };

  it("10 MB bodies are 413 on every route that takes one, declared or streamed, before anything is parsed", async () => {
    const writes: Array<[string, string]> = [
      ["POST", "/v1/jobs"],
      ["POST", "/v1/jobs/batch"],
      ["PATCH", `/v1/jobs/${JOB_ID}`],
      ["POST", `/v1/jobs/${JOB_ID}/ack`],
      ["POST", `/v1/jobs/${JOB_ID}/nack`],
      ["POST", `/v1/jobs/${JOB_ID}/extend`],
      ["PUT", "/v1/topics/t"],
      ["POST", "/v1/topics/t/dead/replay"],
      ["POST", "/v1/topics/t/claim"],
      ["POST", "/v1/hooks/t"],
    ];
    const attacks: Attack[] = writes.flatMap(([method, path]) => [
      { label: `${method} ${path} 10 MB`, path, options: { method, raw: tenMb, headers: json }, status: 413 },
      { label: `${method} ${path} 10 MB streamed`, path, options: { method, raw: stream(10 * 1024 * 1024), headers: json }, status: 413 },
    ]);
    // A signed webhook is still measured before its signature is checked.
    attacks.push({
      label: "signed hook 10 MB",
      path: "/v1/hooks/t",
      options: { raw: tenMb, token: null, headers: { ...json, "x-delayline-signature": `sha256=${"0".repeat(64)}` } },
      status: 413,
    });
    // Without a token, the body is never read: 401 first.
    attacks.push({ label: "10 MB without a token", path: "/v1/jobs", options: { raw: tenMb, token: null, headers: json }, status: 401 });
    await refuses(prod(), attacks);
  });

  it("payloads over MAX_PAYLOAD_BYTES are 413 even when the body fits", async () => {
    const big = "y".repeat(300 * 1024);
    await refuses(prod(), [
      { label: "job", path: "/v1/jobs", options: { body: { topic: "t", payload: big } }, status: 413 },
      { label: "batch", path: "/v1/jobs/batch", options: { body: { jobs: [{ topic: "t" }, { topic: "t", payload: big }] } }, status: 413 },
      { label: "hook", path: "/v1/hooks/t", options: { raw: big, headers: { "content-type": "text/plain" } }, status: 413 },
      // 1,000 jobs of 6 KB: each payload fits, the body does not.
      {
        label: "batch body",
        path: "/v1/jobs/batch",
        options: { body: { jobs: Array.from({ length: 1_000 }, () => ({ topic: "t", payload: "z".repeat(6_000) })) } },
        status: 413,
      },
    ]);
  });

  it("deeply nested JSON is 400 wherever JSON is parsed", async () => {
    const nest = (depth: number, leaf = "1") => '{"a":'.repeat(depth) + leaf + "}".repeat(depth);
    const deepArrays = "[".repeat(100_000) + "]".repeat(100_000);
    const deepObjects = nest(100_000);
    const deepPayload = `{"topic":"t","payload":${nest(70)}}`;
    const attacks: Attack[] = [];
    for (const [method, path] of [
      ["POST", "/v1/jobs"],
      ["POST", "/v1/jobs/batch"],
      ["PUT", "/v1/topics/t"],
      ["PATCH", `/v1/jobs/${JOB_ID}`],
      ["POST", `/v1/jobs/${JOB_ID}/nack`],
      ["POST", "/v1/hooks/t"],
    ] as const) {
      for (const [label, raw] of [
        ["100,000 arrays", deepArrays],
        ["100,000 objects", deepObjects],
        ["a payload 70 deep", deepPayload],
      ] as const) {
        attacks.push({ label: `${method} ${path} ${label}`, path, options: { method, raw, headers: json }, status: 400 });
      }
    }
    attacks.push({ label: "batch job payload 70 deep", path: "/v1/jobs/batch", options: { raw: `{"jobs":[${deepPayload}]}`, headers: json }, status: 400 });
    await refuses(prod(), attacks);
    // Not over-eager: 60 levels are fine.
    const ok = await call(prod(), "/v1/jobs", { raw: `{"topic":"t","payload":${nest(60)}}`, headers: json });
    expect(ok.status).toBe(201);
  });

  it("invalid UTF-8 is 400 on every route that reads a body, never replaced", async () => {
    const sequences: Array<[string, number[]]> = [
      ["a stray 0xFF", [0xff]],
      ["a lone continuation byte", [0x80]],
      ["an overlong '/'", [0xc0, 0xaf]],
      ["an overlong NUL", [0xe0, 0x80, 0x80]],
      ["an encoded surrogate", [0xed, 0xa0, 0x80]],
      ["beyond U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
      ["a five-byte form", [0xf8, 0x88, 0x80, 0x80, 0x80]],
      ["a truncated euro sign", [0xe2, 0x82]],
    ];
    const bodyWith = (bad: number[]) => {
      const head = new TextEncoder().encode('{"topic":"t","payload":"');
      return new Uint8Array([...head, ...bad, 0x22, 0x7d]);
    };
    const attacks: Attack[] = [];
    for (const [method, path, type] of [
      ["POST", "/v1/jobs", "application/json"],
      ["POST", "/v1/jobs/batch", "application/json"],
      ["PUT", "/v1/topics/t", "application/json"],
      ["PATCH", `/v1/jobs/${JOB_ID}`, "application/json"],
      ["POST", `/v1/jobs/${JOB_ID}/nack`, "application/json"],
      ["POST", "/v1/hooks/t", "application/json"],
      ["POST", "/v1/hooks/t", "text/plain"],
    ] as const) {
      for (const [label, bytes] of sequences) {
        attacks.push({
          label: `${method} ${path} (${type}) ${label}`,
          path,
          options: { method, raw: bodyWith(bytes), headers: { "content-type": type } },
          status: 400,
        });
      }
    }
    await refuses(prod(), attacks);
  });

  it("headers past 32 KiB are 431 on every path; oversized and hostile ones below it are refused by what they are", async () => {
    const many = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`x-h${i}`, "v".repeat(50)]));
    await refuses(prod(), [
      {
        label: "1 MB Idempotency-Key",
        path: "/v1/jobs",
        options: { body: { topic: "t" }, headers: { "idempotency-key": "k".repeat(1_000_000) } },
        status: 431,
      },
      {
        label: "64 KB Content-Type",
        path: "/v1/jobs",
        options: { raw: '{"topic":"t"}', headers: { "content-type": `application/${"x".repeat(65_536)}` } },
        status: 431,
      },
      {
        label: "1 MB signature",
        path: "/v1/hooks/t",
        options: { raw: "{}", token: null, headers: { ...json, "x-delayline-signature": `sha256=${"f".repeat(1_000_000)}` } },
        status: 431,
      },
      { label: "1,000 headers on a valid job", path: "/v1/jobs", options: { body: { topic: "t" }, headers: many }, status: 431 },
      { label: "40 KB cookie on /healthz", path: "/healthz", options: { token: null, headers: { cookie: "c=".padEnd(40_000, "x") } }, status: 431 },
      { label: "40 KB header on /openapi.json", path: "/openapi.json", options: { token: null, headers: { "x-big": "x".repeat(40_000) } }, status: 431 },
      { label: "20 KB Idempotency-Key", path: "/v1/jobs", options: { body: { topic: "t" }, headers: { "idempotency-key": "k".repeat(20_000) } }, status: 422 },
      {
        label: "20 KB Content-Type",
        path: "/v1/jobs",
        options: { raw: '{"topic":"t"}', headers: { "content-type": `application/${"x".repeat(20_000)}` } },
        status: 415,
      },
      { label: "no Content-Type", path: "/v1/jobs", options: { raw: new TextEncoder().encode('{"topic":"t"}') }, status: 415 },
      {
        label: "20 KB signature",
        path: "/v1/hooks/t",
        options: { raw: "{}", token: null, headers: { ...json, "x-delayline-signature": `sha256=${"f".repeat(20_000)}` } },
        status: 401,
      },
    ]);
  });
});

describe("topic names", () => {
  const hostile = [
    "",
    " ",
    "a b",
    "a:b",
    "{main}",
    "dl:{main}:jobs",
    "t:x:due",
    "*",
    "a/b",
    "../x",
    ".",
    "..",
    "x".repeat(65),
    "émails",
    "a\nb",
    "a\u0000b",
    "a\rb",
    "💥",
    "t?x",
    "t#x",
    "a,b",
    "$(id)",
    "';--",
    "\u202etxt",
    "a%00b",
    "redis.call('FLUSHALL')",
  ];

  it("are 422 in a body, naming the field", async () => {
    await refuses(
      prod(),
      hostile.flatMap((topic) => [
        { label: `job ${JSON.stringify(topic)}`, path: "/v1/jobs", options: { body: { topic } }, status: 422, errorPath: "topic" },
        {
          label: `batch ${JSON.stringify(topic)}`,
          path: "/v1/jobs/batch",
          options: { body: { jobs: [{ topic: "ok" }, { topic }] } },
          status: 422,
          errorPath: "jobs[1].topic",
        },
      ]),
    );
  });

  it("are no job id's topic either: one rule for topic names (the dot segments included)", () => {
    const ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    for (const topic of hostile) expect(topicOfJobId(`${topic}.${ulid}`), JSON.stringify(topic)).toBeNull();
    for (const topic of ["emails", "a.b", "...", "x".repeat(64)]) expect(topicOfJobId(`${topic}.${ulid}`)).toBe(topic);
  });

  it("are 422 in a path", async () => {
    const attacks: Attack[] = [];
    // Names a URL path cannot carry as one segment: empty, and the dot segments the URL parser resolves.
    for (const topic of hostile.filter((t) => !["", ".", ".."].includes(t))) {
      const seg = encodeURIComponent(topic);
      attacks.push(
        { label: `GET topic ${JSON.stringify(topic)}`, path: `/v1/topics/${seg}`, options: {}, status: 422 },
        { label: `PUT topic ${JSON.stringify(topic)}`, path: `/v1/topics/${seg}`, options: { method: "PUT", body: { paused: true } }, status: 422 },
        { label: `pause ${JSON.stringify(topic)}`, path: `/v1/topics/${seg}/pause`, options: { method: "POST" }, status: 422 },
        { label: `purge ${JSON.stringify(topic)}`, path: `/v1/topics/${seg}/dead`, options: { method: "DELETE" }, status: 422 },
        { label: `hook ${JSON.stringify(topic)}`, path: `/v1/hooks/${seg}`, options: { raw: "{}", headers: json }, status: 422 },
      );
    }
    await refuses(prod(), attacks);
  });
});

// Lua and JSON-breaking text: if any of it were ever run or spliced, keys would vanish or appear.
const LUA = [
  "redis.call('FLUSHALL')",
  "]] redis.call('DEL', KEYS[1]) --[[",
  "'); redis.call('SET', 'pwned', '1'); --",
  '" .. redis.call("FLUSHDB") .. "',
  "return redis.call('KEYS', '*')",
  "os.exit(1)",
  "loadstring('redis.call(\"FLUSHALL\")')()",
  "cjson.decode('{')",
  '"}],"job":{"id":"x"},"x":[{"',
  '\\u0000\\"}\\n--',
  "KEYS[1] ARGV[1] %s%s%n",
];

describe("Lua-looking strings", () => {
  it("are 422 in every structured field", async () => {
    const attacks: Attack[] = [];
    for (const lua of LUA) {
      const job = (field: Record<string, unknown>, errorPath: string): Attack => ({
        label: `${errorPath} = ${lua}`,
        path: "/v1/jobs",
        options: { body: { topic: "t", ...field } },
        status: 422,
        errorPath,
      });
      attacks.push(
        job({ topic: lua }, "topic"),
        job({ delay: lua }, "delay"),
        job({ runAt: lua }, "runAt"),
        job({ maxAttempts: lua }, "maxAttempts"),
        job({ timeoutMs: lua }, "timeoutMs"),
        job({ backoff: { type: lua } }, "backoff.type"),
        job({ backoff: { type: "fixed", delay: lua } }, "backoff.delay"),
        job({ backoff: { type: "schedule", delays: ["1s", lua] } }, "backoff.delays[1]"),
        job({ target: { url: lua } }, "target.url"),
        job({ target: { url: "https://example.com/", method: lua } }, "target.method"),
        job({ target: { url: "https://example.com/", headers: { [lua]: "v" } } }, `target.headers.${lua}`),
        { label: `PATCH delay ${lua}`, path: `/v1/jobs/${JOB_ID}`, options: { method: "PATCH", body: { delay: lua } }, status: 422, errorPath: "delay" },
        { label: `PATCH runAt ${lua}`, path: `/v1/jobs/${JOB_ID}`, options: { method: "PATCH", body: { runAt: lua } }, status: 422, errorPath: "runAt" },
        { label: `topic mode ${lua}`, path: "/v1/topics/t", options: { method: "PUT", body: { mode: lua } }, status: 422, errorPath: "mode" },
        { label: `topic url ${lua}`, path: "/v1/topics/t", options: { method: "PUT", body: { url: lua } }, status: 422, errorPath: "url" },
        { label: `topic rate ${lua}`, path: "/v1/topics/t", options: { method: "PUT", body: { ratePerSec: lua } }, status: 422, errorPath: "ratePerSec" },
        {
          label: `topic backoff ${lua}`,
          path: "/v1/topics/t",
          options: { method: "PUT", body: { backoff: { type: "fixed", delay: lua } } },
          status: 422,
          errorPath: "backoff.delay",
        },
        { label: `hook ?delay ${lua}`, path: `/v1/hooks/t?delay=${encodeURIComponent(lua)}`, options: { raw: "{}", headers: json }, status: 422 },
        { label: `dead ?limit ${lua}`, path: `/v1/topics/t/dead?limit=${encodeURIComponent(lua)}`, options: {}, status: 422 },
        { label: `dead ?cursor ${lua}`, path: `/v1/topics/t/dead?cursor=${encodeURIComponent(lua)}`, options: {}, status: 422 },
        { label: `replay delay ${lua}`, path: "/v1/topics/t/dead/replay", options: { body: { all: true, delay: lua } }, status: 422, errorPath: "delay" },
        { label: `claim max ${lua}`, path: "/v1/topics/t/claim", options: { body: { max: lua } }, status: 422, errorPath: "max" },
        { label: `ack attempt ${lua}`, path: `/v1/jobs/${JOB_ID}/ack`, options: { body: { attempt: lua } }, status: 422, errorPath: "attempt" },
        { label: `nack attempt ${lua}`, path: `/v1/jobs/${JOB_ID}/nack`, options: { body: { attempt: lua, error: "x" } }, status: 422, errorPath: "attempt" },
        {
          label: `extend attempt ${lua}`,
          path: `/v1/jobs/${JOB_ID}/extend`,
          options: { body: { attempt: lua, leaseMs: 30_000 } },
          status: 422,
          errorPath: "attempt",
        },
        {
          label: `extend leaseMs ${lua}`,
          path: `/v1/jobs/${JOB_ID}/extend`,
          options: { body: { attempt: 1, leaseMs: lua } },
          status: 422,
          errorPath: "leaseMs",
        },
      );
    }
    await refuses(prod(), attacks);
  });

  it("are kept and delivered verbatim wherever text is data", async () => {
    // Delivery to the local receiver needs private targets allowed (the dev profile).
    const env = isolatedEnv({ ...onAbuseRedis, ALLOW_PRIVATE_TARGETS: "true" });
    const tag = `lua-${crypto.randomUUID().slice(0, 8)}`;
    const topic = "redis.call";
    const secret = `${LUA[0]}${LUA[1]}`;
    expect(
      (await call(env, `/v1/topics/${topic}`, { method: "PUT", body: { signingSecret: secret, webhookSecret: `${LUA[2]}-webhook`, maxAttempts: 1 } })).status,
    ).toBe(200);
    const ids: string[] = [];
    for (const [i, lua] of LUA.entries()) {
      const payload = { [lua]: lua, list: [lua, { nested: lua }], n: i };
      const target = {
        url: `${receiver}/${tag}/${i}/${encodeURIComponent(lua)}?q=${encodeURIComponent(lua)}`,
        headers: { "x-lua": lua.replace(/[^\x20-\x7e]/g, "") },
      };
      const r = await call(env, "/v1/jobs", {
        body: { topic, payload, idempotencyKey: lua, target },
        headers: { "idempotency-key": "ignored: the body's key wins" },
      });
      expect(r.status, lua).toBe(201);
      ids.push(r.body.id);
      // The same Lua-looking key is one job; every other key is its own.
      const again = await call(env, "/v1/jobs", { body: { topic, payload: "second", idempotencyKey: lua } });
      expect(again.body, lua).toMatchObject({ id: r.body.id, deduplicated: true });
      expect((await call(env, `/v1/jobs/${r.body.id}`)).body.payload, lua).toEqual(payload);
      // Webhook text and JSON bodies keep every byte.
      const text = await call(env, `/v1/hooks/${topic}?delay=1h`, { raw: lua, headers: { "content-type": "text/plain" } });
      expect((await call(env, `/v1/jobs/${text.body.id}`)).body.payload).toEqual({ contentType: "text/plain", text: lua });
      const hookJson = await call(env, `/v1/hooks/${topic}?delay=1h`, { raw: JSON.stringify({ [lua]: [lua] }), headers: json });
      expect((await call(env, `/v1/jobs/${hookJson.body.id}`)).body.payload).toEqual({ [lua]: [lua] });
      tally.verbatim += 4;
    }
    // The Lua-looking webhook secret authorises exactly what it signed.
    const signedBody = JSON.stringify({ from: LUA[3] });
    const mac = await hmacHex(`${LUA[2]}-webhook`, signedBody);
    const signed = await call(env, `/v1/hooks/${topic}?delay=1h`, {
      raw: signedBody,
      token: null,
      headers: { ...json, "x-delayline-signature": `sha256=${mac}` },
    });
    expect(signed.status).toBe(202);

    // Deliver the jobs: each arrives with its payload, path, query and header exactly as sent.
    await tickUntilIdle(env, [topic]);
    const got = await deliveries(`/${tag}/`);
    expect(got).toHaveLength(LUA.length);
    for (const [i, lua] of LUA.entries()) {
      const d = got.find((x) => x.headers["delayline-job-id"] === ids[i])!;
      expect(d, lua).toBeDefined();
      expect(JSON.parse(d.body)).toEqual({ [lua]: lua, list: [lua, { nested: lua }], n: i });
      const url = new URL(d.path, "http://x");
      expect(decodeURIComponent(url.pathname.split("/")[3]!)).toBe(lua);
      expect(d.headers["x-lua"]).toBe(lua.replace(/[^\x20-\x7e]/g, "").trim());
      expect(d.headers["delayline-topic"]).toBe(topic);
      expect(await verifySignature({ header: d.headers["delayline-signature"], body: d.body, secrets: secret })).toEqual({ ok: true });
    }
    // Pull consumers' error text is kept as given.
    await call(env, "/v1/topics/pulled", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
    for (const lua of LUA) {
      const { body: job } = await call(env, "/v1/jobs", { body: { topic: "pulled", payload: lua } });
      const { body: claimed } = await call(env, "/v1/topics/pulled/claim", { body: { max: 1 } });
      expect(claimed.jobs[0].id).toBe(job.id);
      expect((await call(env, `/v1/jobs/${job.id}/nack`, { body: { attempt: 1, error: lua } })).body.state).toBe("dead");
      expect((await call(env, `/v1/jobs/${job.id}`)).body.lastError).toBe(lua);
      tally.verbatim++;
    }
    // Replaying ids that are Lua text finds nothing and writes nothing.
    const before = await digest();
    expect((await call(env, "/v1/topics/pulled/dead/replay", { body: { ids: LUA } })).body).toEqual({ replayed: 0, notFound: LUA, nextCursor: null });
    expect(await digest()).toBe(before);

    // Nothing ran: the canary outside every prefix lives, and no key was made outside the deployments' prefixes.
    expect(await rest(["GET", canary])).toBe("still here");
    const keys = (await rest(["KEYS", "*"])) as string[];
    expect(keys.filter((k) => k !== canary && !/^t[0-9a-f]{8}:\{api\}:/.test(k))).toEqual([]);
  });

  it("idempotency keys that are not well-formed Unicode are 422: two of them would be one key in Redis", async () => {
    await refuses(prod(), [
      { label: "lone high surrogate", path: "/v1/jobs", options: { body: { topic: "t", idempotencyKey: "\ud800" } }, status: 422, errorPath: "idempotencyKey" },
      { label: "lone low surrogate", path: "/v1/jobs", options: { body: { topic: "t", idempotencyKey: "k\udc00" } }, status: 422, errorPath: "idempotencyKey" },
      {
        label: "reversed pair",
        path: "/v1/jobs/batch",
        options: { body: { jobs: [{ topic: "t", idempotencyKey: "\udc00\ud800" }] } },
        status: 422,
        errorPath: "jobs[0].idempotencyKey",
      },
    ]);
    const env = prod();
    const a = await call(env, "/v1/jobs", { body: { topic: "t", idempotencyKey: "emoji 💥" } });
    const b = await call(env, "/v1/jobs", { body: { topic: "t", idempotencyKey: "emoji 💣" } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
  });

  it("instants a Date cannot hold are 422, never a stored job answered with a 500", async () => {
    const { body: job } = await call(prod(), "/v1/jobs", { body: { topic: "t", delay: "1h" } });
    await refuses(
      prod(),
      [8_640_000_000_000_001, 8.7e15, Number.MAX_SAFE_INTEGER].flatMap((runAt) => [
        { label: `runAt ${runAt}`, path: "/v1/jobs", options: { body: { topic: "t", runAt } }, status: 422, errorPath: "runAt" },
        {
          label: `batch runAt ${runAt}`,
          path: "/v1/jobs/batch",
          options: { body: { jobs: [{ topic: "t", runAt }] } },
          status: 422,
          errorPath: "jobs[0].runAt",
        },
        { label: `PATCH runAt ${runAt}`, path: `/v1/jobs/${job.id}`, options: { method: "PATCH", body: { runAt } }, status: 422, errorPath: "runAt" },
      ]),
    );
  });

  it("header values a fetch would refuse are 422, not a job that can never be delivered", async () => {
    const bad = ["a\u0000b", "tab\u0007bell", "💥", "é", "line\u2028break"];
    await refuses(
      prod(),
      bad.map((value) => ({
        label: `header ${JSON.stringify(value)}`,
        path: "/v1/jobs",
        options: { body: { topic: "t", target: { url: "https://example.com/", headers: { "x-h": value } } } },
        status: 422,
        errorPath: "target.headers.x-h",
      })),
    );
  });

  it("hop-by-hop, Proxy-*, Host and Content-Length headers are 422 in any case, in a job and in a batch; so is a name given twice", async () => {
    const names = [
      "Connection",
      "connection",
      "KEEP-ALIVE",
      "Upgrade",
      "TE",
      "Trailer",
      "Transfer-Encoding",
      "transfer-encoding",
      "Proxy-Authorization",
      "proxy-connection",
      "Host",
      "HOST",
      "Content-Length",
    ];
    const target = (headers: Record<string, string>) => ({ url: "https://example.com/", headers });
    await refuses(prod(), [
      ...names.flatMap((name): Attack[] => [
        {
          label: `job header ${name}`,
          path: "/v1/jobs",
          options: { body: { topic: "t", target: target({ [name]: "x" }) } },
          status: 422,
          errorPath: `target.headers.${name}`,
        },
        {
          label: `batch header ${name}`,
          path: "/v1/jobs/batch",
          options: { body: { jobs: [{ topic: "t" }, { topic: "t", target: target({ "x-ok": "1", [name]: "x" }) }] } },
          status: 422,
          errorPath: `jobs[1].target.headers.${name}`,
        },
      ]),
      {
        label: "X-Token twice",
        path: "/v1/jobs",
        options: { body: { topic: "t", target: target({ "X-Token": "a", "x-token": "b" }) } },
        status: 422,
        errorPath: "target.headers.x-token",
      },
    ]);
  });
});

const SSRF = [
  "http://127.0.0.1/",
  "http://127.0.0.1:8787/v1/jobs",
  "http://127.1/",
  "http://0/",
  "http://0.0.0.0/",
  "http://2130706433/",
  "http://017700000001/",
  "http://0177.0.0.1/",
  "http://0x7f000001/",
  "http://0x7f.0x0.0x0.0x1/",
  "http://①②⑦.0.0.1/",
  "http://127.0.0.1./",
  "http://[::1]/",
  "http://[::]/",
  "http://[0:0:0:0:0:0:0:1]/",
  "http://[::ffff:127.0.0.1]/",
  "http://[::ffff:7f00:1]/",
  "http://[::127.0.0.1]/",
  "http://[::ffff:0:7f00:1]/",
  "http://[2002:7f00:1::]/",
  "http://[64:ff9b::7f00:1]/",
  "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
  "http://2852039166/",
  "http://0251.0376.0251.0376/",
  "http://0xa9fea9fe/",
  "http://[::ffff:169.254.169.254]/",
  "http://[fe80::1]/",
  "http://10.0.0.1/",
  "http://10.255.255.255/",
  "http://167772161/",
  "http://012.0.0.1/",
  "http://0xa.0.0.1/",
  "http://10.1/",
  "http://172.16.0.1/",
  "http://192.168.0.1/",
  "http://100.64.0.1/",
  "http://[fd00::1]/",
  "http://localhost/",
  "http://LOCALHOST./",
  "http://localhost../",
  "http://ｌｏｃａｌｈｏｓｔ/",
  "http://api.localhost/",
  "http://a.b.localhost:8080/",
  "http://metadata.google.internal/computeMetadata/v1/",
  "https://user:pass@example.com/",
  "http://example.com@127.0.0.1/",
];

describe("SSRF targets", () => {
  it("are 422 at the edge, for a job's target and a topic's url, in every spelling", async () => {
    const attacks: Attack[] = SSRF.flatMap((url) => [
      { label: `job ${url}`, path: "/v1/jobs", options: { body: { topic: "t", target: { url } } }, status: 422, errorPath: "target.url" },
      {
        label: `batch ${url}`,
        path: "/v1/jobs/batch",
        options: { body: { jobs: [{ topic: "t" }, { topic: "t", target: { url } }] } },
        status: 422,
        errorPath: "jobs[1].target.url",
      },
      { label: `topic ${url}`, path: "/v1/topics/t", options: { method: "PUT", body: { url } }, status: 422, errorPath: "url" },
    ]);
    await refuses(prod(), attacks);
    // Public targets are fine.
    expect((await call(prod(), "/v1/jobs", { body: { topic: "t", target: { url: "https://example.com/hook" } } })).status).toBe(201);
  });

  it("credentials and other protocols are refused even where private targets are allowed", async () => {
    await refuses(isolatedEnv({ ...onAbuseRedis, ALLOW_PRIVATE_TARGETS: "true" }), [
      {
        label: "credentials",
        path: "/v1/jobs",
        options: { body: { topic: "t", target: { url: "http://a:b@127.0.0.1/" } } },
        status: 422,
        errorPath: "target.url",
      },
      { label: "file", path: "/v1/jobs", options: { body: { topic: "t", target: { url: "file:///etc/passwd" } } }, status: 422, errorPath: "target.url" },
      { label: "gopher", path: "/v1/topics/t", options: { method: "PUT", body: { url: "gopher://127.0.0.1:6379/_FLUSHALL" } }, status: 422, errorPath: "url" },
    ]);
  });

  it("a job stored while private targets were allowed is refused at delivery once they are not", async () => {
    const dev = isolatedEnv({ ...onAbuseRedis, ALLOW_PRIVATE_TARGETS: "true" });
    const tag = `late-${crypto.randomUUID().slice(0, 8)}`;
    const job = await call(dev, "/v1/jobs", { body: { topic: "late", target: { url: `${receiver}/${tag}/ok` } } });
    await call(dev, "/v1/topics/viaurl", { method: "PUT", body: { url: `${receiver}/${tag}/topic` } });
    const viaUrl = await call(dev, "/v1/jobs", { body: { topic: "viaurl" } });
    await tickUntilIdle({ ...dev, ALLOW_PRIVATE_TARGETS: "false" }, ["late", "viaurl"]);
    for (const id of [job.body.id, viaUrl.body.id]) {
      expect((await call(dev, `/v1/jobs/${id}`)).body).toMatchObject({ state: "dead", attempts: 1, lastError: expect.stringMatching(/refused target/) });
    }
    expect(await deliveries(`/${tag}/`)).toEqual([]);
  });

  it("redirects are never followed, whatever their status and wherever they point", async () => {
    const dev = isolatedEnv({ ...onAbuseRedis, ALLOW_PRIVATE_TARGETS: "true" });
    const tag = `redir-${crypto.randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    for (const status of [301, 302, 303, 307, 308]) {
      for (const to of [`${receiver}/${tag}/followed`, "http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://2130706433/"]) {
        const url = `${receiver}/${tag}/redirect?status=${status}&to=${encodeURIComponent(to)}`;
        ids.push((await call(dev, "/v1/jobs", { body: { topic: "redir", target: { url }, maxAttempts: 3 } })).body.id);
        tally.refused++;
      }
    }
    await tickUntilIdle(dev, ["redir"]);
    for (const id of ids) {
      // Permanent on the first attempt: a redirect is not retried either.
      expect((await call(dev, `/v1/jobs/${id}`)).body).toMatchObject({
        state: "dead",
        attempts: 1,
        lastError: expect.stringMatching(/^HTTP 30\d.*redirects are not followed/),
      });
    }
    const got = await deliveries(`/${tag}/`);
    expect(got.map((d) => d.path).sort()).toEqual(ids.map(() => `/${tag}/redirect`));
  });

  it("a public target redirecting to the metadata address is one request, refused as permanent", async () => {
    const calls: Array<{ url: string; redirect: string | undefined }> = [];
    const fakeFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      calls.push({ url: String(input), redirect: init?.redirect });
      return new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } });
    }) as typeof fetch;
    const job = {
      id: "t.x",
      topic: "t",
      attempt: 1,
      dueAt: 0,
      payload: {},
      target: { url: "https://hooks.example.com/in" },
      signal: new AbortController().signal,
      fetch: fakeFetch,
    };
    await expect(deliverHttp(job, { allowPrivate: false })).rejects.toBeInstanceOf(PermanentError);
    expect(calls).toEqual([{ url: "https://hooks.example.com/in", redirect: "manual" }]);
  });
});

async function hmacHex(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return [...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("webhook signatures", () => {
  it("forged ones are 401 and change nothing; a replay of a valid one makes no second job", async () => {
    const env = prod();
    const secret = "webhook-secret-0123456789";
    await call(env, "/v1/topics/gh", { method: "PUT", body: { webhookSecret: secret } });
    await call(env, "/v1/topics/other", { method: "PUT", body: { webhookSecret: "another-secret-9876543210" } });
    const body = '{"action":"opened","number":7}';
    const good = await hmacHex(secret, body);
    const sig = (header: string, value: string, extra: Partial<Attack> = {}): Attack => ({
      label: `${header}: ${value.slice(0, 80)}`,
      path: "/v1/hooks/gh",
      options: { raw: body, token: null, headers: { ...json, [header]: value } },
      status: 401,
      ...extra,
    });
    const attacks: Attack[] = [
      sig("x-delayline-signature", `sha256=${"0".repeat(64)}`),
      sig("x-delayline-signature", `sha256=${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`),
      sig("x-delayline-signature", `sha256=${await hmacHex("wrong-secret-0123456789", body)}`),
      sig("x-delayline-signature", `sha256=${await hmacHex(secret, `${body}\n`)}`),
      sig("x-delayline-signature", `sha256=${await hmacHex("another-secret-9876543210", body)}`),
      sig("x-delayline-signature", `sha256=${good.slice(0, 63)}`),
      sig("x-delayline-signature", `sha256=${good}0`),
      sig("x-delayline-signature", `sha256= ${good}`),
      sig("x-delayline-signature", `sha1=${good.slice(0, 40)}`),
      sig("x-delayline-signature", good),
      sig("x-delayline-signature", `sha256=${good}, sha256=${good}`),
      sig("x-delayline-signature", ""),
      sig("x-hub-signature-256", `sha256=${await hmacHex("wrong-secret-0123456789", body)}`),
      sig("x-hub-signature", `sha1=${good.slice(0, 40)}`),
      // The right signature, the wrong body or the wrong topic.
      {
        ...sig("x-delayline-signature", `sha256=${good}`),
        label: "tampered body",
        options: { raw: body.replace("7", "8"), token: null, headers: { ...json, "x-delayline-signature": `sha256=${good}` } },
      },
      { ...sig("x-delayline-signature", `sha256=${good}`), label: "another topic's secret", path: "/v1/hooks/other" },
      { ...sig("x-delayline-signature", `sha256=${good}`), label: "a topic without a secret", path: "/v1/hooks/nosecret" },
      {
        ...sig("x-delayline-signature", `sha256=${good}`),
        label: "signature in the query",
        path: `/v1/hooks/gh?signature=sha256=${good}`,
        options: { raw: body, token: null, headers: json },
      },
      // A wrong token does not fall through to a forged signature.
      {
        ...sig("x-delayline-signature", `sha256=${"1".repeat(64)}`),
        label: "wrong token and forged signature",
        options: { raw: body, token: "wrong-token-0123456789", headers: { ...json, "x-delayline-signature": `sha256=${"1".repeat(64)}` } },
      },
    ];
    await refuses(env, attacks, { reads: true });

    const first = await call(env, "/v1/hooks/gh", { raw: body, token: null, headers: { ...json, "x-delayline-signature": `sha256=${good}` } });
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    // Replays answer like the first delivery (a sender retrying after a timeout must see success) and change nothing.
    const before = await digest();
    const replays: Array<Record<string, string>> = [
      { "x-delayline-signature": `sha256=${good}` },
      { "x-hub-signature-256": `sha256=${good}` },
      { "x-delayline-signature": `sha256=${good.toUpperCase()}` },
    ];
    for (const headers of replays) {
      for (const query of ["", "?delay=1h", "?delay=0s"]) {
        const replay = await call(env, `/v1/hooks/gh${query}`, { raw: body, token: null, headers: { ...json, ...headers } });
        expect(replay.status).toBe(202);
        expect(replay.body).toEqual({ id: first.body.id, deduplicated: true });
        tally.refused++;
      }
    }
    expect(await digest()).toBe(before);
    expect((await call(env, "/v1/topics/gh")).body.scheduled).toBe(1);
  });

  it("malformed, expired and future timestamped signatures (ours, Stripe's, Standard Webhooks') are 401, and an oversized kept header 431, without asking Redis", async () => {
    const env = prod();
    const body = '{"event":"paid"}';
    const now = Math.floor(Date.now() / 1000);
    const mac = (t: number) => hmacHex("webhook-secret-0123456789", `${t}.${body}`);
    const sig = async (label: string, value: string): Promise<Attack> => ({
      label,
      path: "/v1/hooks/ts",
      options: { raw: body, token: null, headers: { ...json, "x-delayline-signature": value } },
      status: 401,
    });
    await refuses(env, [
      await sig("t without v1", `t=${now}`),
      await sig("v1 without t", `v1=${await mac(now)}`),
      await sig("t not a number", `t=soon,v1=${await mac(now)}`),
      await sig("v1 too short", `t=${now},v1=${(await mac(now)).slice(2)}`),
      await sig("v1 in upper case", `t=${now},v1=${(await mac(now)).toUpperCase()}`),
      await sig("an hour old", `t=${now - 3_600},v1=${await mac(now - 3_600)}`),
      await sig("301 s old", `t=${now - 301},v1=${await mac(now - 301)}`),
      await sig("a day ahead", `t=${now + 86_400},v1=${await mac(now + 86_400)}`),
      await sig("the epoch", `t=0,v1=${await mac(0)}`),
      ...[
        ["Stripe-Signature an hour old", { "stripe-signature": `t=${now - 3_600},v1=${await mac(now - 3_600)}` }],
        ["Stripe-Signature without v1", { "stripe-signature": `t=${now},v0=${await mac(now)}` }],
        ["Stripe-Signature not hex", { "stripe-signature": `t=${now},v1=zz` }],
        ["webhook-signature without webhook-id", { "webhook-timestamp": String(now), "webhook-signature": "v1,AAAA" }],
        ["webhook-signature without webhook-timestamp", { "webhook-id": "msg_1", "webhook-signature": "v1,AAAA" }],
        ["webhook-timestamp an hour old", { "webhook-id": "msg_1", "webhook-timestamp": String(now - 3_600), "webhook-signature": "v1,AAAA" }],
        ["webhook-timestamp not a number", { "webhook-id": "msg_1", "webhook-timestamp": "soon", "webhook-signature": "v1,AAAA" }],
        ["webhook-id with a dot", { "webhook-id": "msg.1", "webhook-timestamp": String(now), "webhook-signature": "v1,AAAA" }],
        ["webhook-id over 200 characters", { "webhook-id": "m".repeat(201), "webhook-timestamp": String(now), "webhook-signature": "v1,AAAA" }],
        ["webhook-signature of another version", { "webhook-id": "msg_1", "webhook-timestamp": String(now), "webhook-signature": "v1a,AAAA" }],
      ].map(
        ([label, headers]): Attack => ({
          label: label as string,
          path: "/v1/hooks/ts",
          options: { raw: body, token: null, headers: { ...json, ...(headers as Record<string, string>) } },
          status: 401,
        }),
      ),
      {
        label: "a kept header over 256 bytes",
        path: "/v1/hooks/ts",
        options: { raw: body, token: null, headers: { ...json, "x-github-event": "e".repeat(257), "x-delayline-signature": `t=${now},v1=${await mac(now)}` } },
        status: 431,
      },
    ]);
  });

  it("a flood of forged signatures costs one Redis read per topic per 5 s, not one per request", async () => {
    const env = prod();
    await call(env, "/v1/topics/flood", { method: "PUT", body: { webhookSecret: "webhook-secret-0123456789" } });
    const body = '{"action":"opened"}';
    const forged = (i: number, format: "sha256" | "timestamped") => ({
      raw: body,
      token: null,
      headers: {
        ...json,
        "x-delayline-signature":
          format === "sha256" ? `sha256=${i.toString(16).padStart(64, "0")}` : `t=${Math.floor(Date.now() / 1000)},v1=${i.toString(16).padStart(64, "0")}`,
      },
    });
    const before = await commandsRun();
    for (let i = 0; i < 50; i++) {
      const r = await call(env, "/v1/hooks/flood", forged(i, i % 2 ? "sha256" : "timestamped"));
      expectProblem(r, 401, `forged ${i}`);
    }
    // A topic without a secret costs one read too, then none.
    for (let i = 0; i < 10; i++) expectProblem(await call(env, "/v1/hooks/nosecret", forged(i, "sha256")), 401, `no secret ${i}`);
    // HGETALL of each topic's settings, once (twice if the 5 s passed mid-flood on a slow machine).
    expect(await commandsRun()).toBeLessThanOrEqual(before + 4);
    expect(await commandsRun()).toBeGreaterThanOrEqual(before + 2);

    // A secret changed through this isolate applies at once: the remembered one is dropped.
    await call(env, "/v1/topics/flood", { method: "PUT", body: { webhookSecret: "rotated-secret-9876543210" } });
    const signed = await call(env, "/v1/hooks/flood", {
      raw: body,
      token: null,
      headers: { ...json, "x-delayline-signature": `sha256=${await hmacHex("rotated-secret-9876543210", body)}` },
    });
    expect(signed.status).toBe(202);
  });
});
