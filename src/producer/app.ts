import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, ErrorHandler, MiddlewareHandler, Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { settings, SettingsError } from "../env.js";
import { shardsFromSettings } from "../queue/from-settings.js";
import { FlowKeyFullError, RedisLimitError, RedisOutcomeUnknownError, TopicContendedError, TopicFullError } from "../queue/errors.js";
import { RedisUnavailableError } from "../queue/redis.js";
import { RequestTooLargeError, TopicLimitError } from "../queue/queue.js";
import type { Shards } from "../queue/shards.js";
import { bearerToken, tokenMatches } from "./auth.js";
import { jsonBody } from "./body.js";
import { PartialBatchError, partialBatchProblem } from "./batch-split.js";
import { oneCallShards, router, type AppEnv } from "./context.js";
import { withPageHeaders } from "./page-headers.js";
import { ApiProblem, PROBLEM_TYPES, problem } from "./problem.js";
import { health, healthRoute } from "./routes/health.js";
import { hooks } from "./routes/hooks.js";
import { jobs } from "./routes/jobs.js";
import { schedules } from "./routes/schedules.js";
import { metrics, stats } from "./routes/stats.js";
import { topics } from "./routes/topics.js";
import { topicJobs } from "./routes/topic-jobs.js";
import { dead } from "./routes/dead.js";
import { flowKeys } from "./routes/flow-keys.js";
import { Problem } from "./schema-parts.js";

export type { AppEnv };

/**
 * The producer: delayline's HTTP API, /metrics, /healthz and the pages, as a
 * hono app of its own for each delayline() call, so routes or middleware a
 * Worker adds to one deployment's app are not another's.
 */
export function createApp(): OpenAPIHono<AppEnv> {
  const app = router();
  // Registered first so it also sees what later middleware, notFound and onError return.
  app.use(noSniff);
  app.use(headerLimit);
  // The OpenAPI document needs no settings or Redis: it is registered before
  // the middleware below, so it answers before any of it runs.
  describe(app);
  app.use(async (c, next) => {
    // Parsing here makes a misconfigured deployment fail on its first request,
    // naming the setting, rather than somewhere deep in a handler.
    c.set("settings", settings(c.env));
    await next();
  });
  // The API and /metrics need a token; the pages (/docs, /dashboard) ask for one themselves.
  app.use("/metrics", (c, next) => requireToken(c, next));
  app.use("/v1/*", async (c, next) => {
    // Webhook ingest authorises itself: a bearer token or a body signature.
    if (c.req.path.startsWith("/v1/hooks/")) return next();
    return requireToken(c, next);
  });
  app.use("/v1/*", limitBody);
  app.use("/v1/*", async (c, next) => {
    if (c.req.path.startsWith("/v1/hooks/")) return next();
    return jsonBody(c, next);
  });
  app.use("/v1/*", withQueue);
  app.use("/metrics", withQueue);
  app.openapi(healthRoute, health);
  servePages(app);
  app.route("/v1/jobs", jobs);
  app.route("/v1/topics", topics);
  app.route("/v1/topics", topicJobs);
  app.route("/v1/topics", dead);
  app.route("/v1/topics", flowKeys);
  app.route("/v1/hooks", hooks);
  app.route("/v1/schedules", schedules);
  app.route("/v1/stats", stats);
  app.route("/metrics", metrics);
  app.notFound((c) => {
    const allowed = servedMethods(app, c.req.path);
    if (allowed.length > 0) {
      return problem(405, `${c.req.method} is not allowed on ${c.req.path}`, { headers: { allow: allowed.join(", ") } });
    }
    return problem(404, `no route for ${c.req.method} ${c.req.path}`);
  });
  app.onError(onError);
  return app;
}

/**
 * The most header bytes (names and values) a request may carry. HTTP servers
 * in front of the Worker have limits of their own, but they differ (and
 * locally one answers a flood of headers with a 500), so the API states its own.
 */
const MAX_HEADER_BYTES = 32 * 1024;

// Every answer (JSON, problem+json, /metrics' text, the pages) says what it is
// and nothing else: a browser must not sniff an API answer into HTML or script.
const noSniff: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  try {
    c.res.headers.set("x-content-type-options", "nosniff");
  } catch {
    // Immutable headers (a response passed through from a fetch): copy it.
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set("x-content-type-options", "nosniff");
  }
};

const headerLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  let size = 0;
  for (const [name, value] of c.req.raw.headers) size += name.length + value.length + 4;
  if (size > MAX_HEADER_BYTES) return problem(431, `the request headers are ${size} bytes; the limit is ${MAX_HEADER_BYTES}`);
  await next();
};

/** The OpenAPI document's parts of its own (the routes describe themselves) and its route. */
function describe(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.register("Problem", Problem);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  app.openAPIRegistry.registerComponent("securitySchemes", "signature", {
    type: "apiKey",
    in: "header",
    name: "X-Delayline-Signature",
    description:
      't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> (refused more than 300 s from now), or sha256=<hex HMAC-SHA256 of the raw body>, ' +
      "with the topic's webhookSecret (webhook ingest only; Stripe-Signature, Standard Webhooks' webhook-signature and X-Hub-Signature-256 are accepted too)",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "delayline",
      version: "0.1.0",
      description: "A delay pipeline for Cloudflare Workers on Upstash Redis. Errors are application/problem+json (RFC 9457).",
      license: { name: "MIT", url: "https://opensource.org/license/mit" },
    },
    // Relative, so it resolves against wherever the document was fetched: the
    // /docs page calls the deployment serving it (`npm start`'s included), and a
    // generator run on a downloaded copy leaves the base URL to its caller
    // rather than baking in a host.
    servers: [{ url: "/", description: "The deployment serving this document" }],
    security: [{ bearer: [] }],
  });
}

async function requireToken(c: Context<AppEnv>, next: Next) {
  const token = bearerToken(c.req.header("authorization"));
  if (token === null || !tokenMatches(token, c.get("settings").apiTokens)) {
    return problem(401, token === null ? "send Authorization: Bearer <token>" : "the token is not valid", {
      headers: { "www-authenticate": 'Bearer realm="delayline"' },
    });
  }
  await next();
}

// hono's bodyLimit, built once per limit (settings change only by
// redeploying) rather than once per request as it was. Shared by every app
// in the isolate: a limit's middleware holds nothing of a deployment.
const bodyLimits = new Map<number, MiddlewareHandler>();
const tooLarge = (maxBytes: number) => problem(413, `the body is larger than ${maxBytes} bytes`);

const limitBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  const maxBytes = c.get("settings").maxBodyBytes;
  // With a Content-Length (and no Transfer-Encoding) hono's bodyLimit only
  // compares it with the limit, as here; but its first step reads
  // `request.body`, which makes workerd create the body's stream object.
  const length = c.req.raw.headers.get("content-length");
  if (length !== null && !c.req.raw.headers.has("transfer-encoding")) return Number.parseInt(length, 10) > maxBytes ? tooLarge(maxBytes) : next();
  let limit = bodyLimits.get(maxBytes);
  if (!limit) {
    limit = bodyLimit({ maxSize: maxBytes, onError: () => tooLarge(maxBytes) });
    bodyLimits.set(maxBytes, limit);
  }
  return limit(c, next);
};

const withQueue = async (c: Context<AppEnv>, next: Next) => {
  // Reads fan out (a topic list asks for every topic's stats at once), and
  // their calls share one request through a client of their own. Writes make
  // their calls one after another: they use the isolate's shared client.
  const s = c.get("settings");
  let shards: Shards | undefined;
  if (c.req.method === "GET" || c.req.method === "HEAD") shards = shardsFromSettings(s);
  else shards = oneCallShards(s);
  c.set("shards", shards);
  c.set("queue", shards.queue()!);
  await next();
};

// Pages served from Workers static assets: the API reference (Swagger UI,
// built into public/docs by scripts/build-docs.mjs), the dashboard
// (public/dashboard, scripts/build-dashboard.mjs) and the icon
// (scripts/build-favicon.mjs). Neither page needs a CDN. Static assets
// usually answer before the Worker runs, with public/_headers; what reaches
// the Worker gets the same headers here.
const asset = (what: string) => async (c: Context<AppEnv>) => {
  if (!c.env.ASSETS) throw new ApiProblem(404, `${what} is not deployed with this Worker (no ASSETS binding)`);
  return withPageHeaders(c.req.path, await c.env.ASSETS.fetch(c.req.raw));
};
function servePages(app: OpenAPIHono<AppEnv>): void {
  for (const [page, what] of [
    ["/docs", "the API reference"],
    ["/dashboard", "the dashboard"],
  ] as const) {
    app.get(page, (c) => c.redirect(`${page}/`, 301));
    app.get(`${page}/*`, asset(what));
  }
  app.get("/favicon.ico", asset("the icon"));
}

/** The methods `app` serves at `path`, for telling 405 from 404. */
function servedMethods(app: OpenAPIHono<AppEnv>, path: string): string[] {
  const methods = new Set<string>();
  for (const r of app.routes) {
    if (r.method === "ALL") continue;
    const pattern = new RegExp(`^${r.path.replace(/:[^/]+/g, "[^/]+")}/?$`);
    if (pattern.test(path)) methods.add(r.method);
  }
  return [...methods];
}

const onError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof PartialBatchError) return partialBatchProblem(err, onError(err.firstError as Error, c) as Response);
  if (err instanceof SettingsError) {
    console.error(JSON.stringify({ level: "error", msg: err.message }));
    return problem(500, err.message, { type: PROBLEM_TYPES.settings });
  }
  if (err instanceof RedisLimitError) return limitProblem(err);
  if (err instanceof RedisOutcomeUnknownError) {
    return problem(
      503,
      `${err.message}. The outcome is unknown: the request may or may not have taken effect. Retry it with the same Idempotency-Key, which never duplicates; send one with every write that must not happen twice.`,
      { headers: { "retry-after": "1" } },
    );
  }
  if (err instanceof RedisUnavailableError) {
    // Usually nothing changed, but not always: Redis may have run a write whose
    // answer was lost or came too late. Only a retry with the same key is safe.
    return problem(503, `${err.message}. The request may or may not have taken effect; retry it with the same Idempotency-Key, which never duplicates.`, {
      headers: { "retry-after": "1" },
    });
  }
  if (err instanceof TopicLimitError) return problem(422, err.message, { type: PROBLEM_TYPES.topicLimit });
  if (err instanceof TopicFullError) {
    return problem(429, err.message, { type: PROBLEM_TYPES.topicFull, full: { topic: err.topic, pending: err.pending, maxLength: err.maxLength } });
  }
  if (err instanceof FlowKeyFullError) {
    const full = { topic: err.topic, flowKey: err.flowKey, pending: err.pending, maxKeyLength: err.maxKeyLength };
    return problem(429, err.message, { type: PROBLEM_TYPES.flowKeyFull, full });
  }
  if (err instanceof TopicContendedError) return problem(503, err.message, { headers: { "retry-after": "1" } });
  if (err instanceof RequestTooLargeError) return problem(413, err.message, { type: PROBLEM_TYPES.requestTooLarge });
  if (err instanceof ApiProblem) {
    return problem(err.status, err.message, { headers: err.headers, ...(err.errors ? { errors: err.errors } : {}) });
  }
  // Hono's own 4xx (e.g. malformed JSON caught by its validator).
  if (err instanceof HTTPException && err.status >= 400 && err.status < 500) return problem(err.status, err.message || "bad request");
  console.error(JSON.stringify({ level: "error", msg: "unhandled error", path: c.req.path, error: String(err) }));
  return problem(500, "internal error");
};

/**
 * A limit of Redis' (Upstash's) refused the request (see RedisLimitError for what may have been written). Storage
 * limits (a record or the database full) answer 507, as retrying soon will not
 * help until jobs finish or the plan grows; a request too large 413; the
 * request-count quota 503 with Retry-After, as it lifts with time.
 */
function limitProblem(err: RedisLimitError): Response {
  // The message names the call, never its arguments (see redisCall).
  console.error(JSON.stringify({ level: "error", msg: "Redis refused a request at one of its limits", limit: err.limit, error: err.message }));
  const status = err.limit === "request-size" ? 413 : err.limit === "requests" ? 503 : 507;
  return problem(status, err.message, {
    type: PROBLEM_TYPES.redisLimit,
    limit: err.limit,
    ...(status === 503 ? { headers: { "retry-after": "60" } } : {}),
  });
}
