import { errors, Redis, type Requester } from "@upstash/redis/cloudflare";
import type { Settings } from "../env.js";
import { RedisCommandError, type RedisLimit, RedisLimitError, RedisOutcomeUnknownError, RedisTimeoutError, RedisUnavailableError } from "./errors.js";

// The error classes live in errors.ts; the edge and the tick import the outage class from here.
export { RedisUnavailableError };

/**
 * The one place the Upstash client is built.
 *
 * - `automaticDeserialization: false`: values are our own JSON, parsed where
 *   their schema is known; the default would turn the string "42" into 42.
 * - `responseEncoding: false`: replies come as plain JSON strings, not
 *   base64. Base64 guards bytes that are not UTF-8, and every value we
 *   store is text we wrote; decoding it cost a busy tick a tenth of its
 *   CPU (a claim's reply carries every record of its chunk).
 * - auto-pipelining stays on: concurrent calls in one invocation share one
 *   REST request, and every request is a Workers subrequest.
 * - every request carries its own deadline, and the client retries nothing:
 *   {@link redisCall} retries a call only when running it twice is harmless.
 */
export function createRedis(s: RedisSettings): Redis {
  return new Redis(clientConfig(s, true, slicedDeadlines(s.redisTimeoutMs)));
}

type RedisSettings = Pick<Settings, "redisUrl" | "redisToken" | "redisTimeoutMs">;

function clientConfig(s: RedisSettings, autoPipelining: boolean, signal: () => AbortSignal): ConstructorParameters<typeof Redis>[0] {
  return {
    url: s.redisUrl,
    token: s.redisToken,
    automaticDeserialization: false,
    responseEncoding: false,
    enableTelemetry: false,
    enableAutoPipelining: autoPipelining,
    signal,
    // No retries in the client: it would re-send a request whatever it carries,
    // a write whose reply was lost included. {@link redisCall} retries what is safe to.
    retry: { retries: 0 },
  };
}

/** How many ms apart requests may be and still share one deadline timer. */
const DEADLINE_SLICE_MS = 100;

/**
 * Deadlines for one client's requests: each aborts `ms` to `ms` + 100 ms
 * after it starts, and requests starting within the same 100 ms share one
 * timer. A timer per request lives for the whole timeout, so an invocation
 * making thousands of Redis calls a second (a busy tick) would hit workerd's
 * cap of 10,000 active timers. Only for a client used by one invocation: a
 * signal made in one request cannot be used by another.
 */
function slicedDeadlines(ms: number): () => AbortSignal {
  let slice: { at: number; signal: AbortSignal } | undefined;
  return () => {
    const now = Date.now();
    if (!slice || now - slice.at >= DEADLINE_SLICE_MS) slice = { at: now, signal: AbortSignal.timeout(ms + DEADLINE_SLICE_MS) };
    return slice.signal;
  };
}

const shared = new Map<string, Redis>();

/**
 * The isolate's client for callers that make one Redis call at a time (the
 * producer's writes), built once: constructing an Upstash client (and, with
 * auto-pipelining, a pipeline per call) cost the Worker more CPU than the
 * rest of an enqueue put together. It does not auto-pipeline, because one
 * pipeline shared by concurrent requests would send their calls in one
 * fetch, and a request cancelled by its client would fail the others'.
 * Callers that fan calls out use {@link createRedis}.
 */
export function sharedRedis(s: RedisSettings): Redis {
  const key = JSON.stringify([s.redisUrl, s.redisToken, s.redisTimeoutMs]);
  let redis = shared.get(key);
  // Shared by the isolate's requests, so every request gets a timer of its own.
  if (!redis) {
    redis = new Redis(clientConfig(s, false, () => AbortSignal.timeout(s.redisTimeoutMs)));
    shared.set(key, redis);
  }
  return redis;
}

/**
 * Sends `commands` as one `/pipeline` REST request (not a transaction) and
 * throws, as the client's own pipeline does, when Redis refused one of them.
 * It goes through the client's own requester, so deadlines and
 * errors are the client's; what it skips is `redis.pipeline()`, whose
 * constructor builds a closure for each of the client's ~250 commands: on
 * the single-job enqueue that cost a tenth of the Worker's CPU per request.
 * (`client` is protected in the client's types, public at run time; the
 * enqueue tests fail if a version of the client changes it.)
 */
export async function pipeline(redis: Redis, commands: Array<Array<string | number>>): Promise<void> {
  const requester = (redis as unknown as { client: Requester }).client;
  const replies = (await requester.request({ path: ["pipeline"], body: commands })) as unknown as Array<{ error?: string }>;
  for (const [i, reply] of replies.entries()) {
    if (reply.error) throw new errors.UpstashError(`Command ${i + 1} [ ${commands[i]![0]} ] failed: ${reply.error}`);
  }
}

/** Sends `commands` in one request and answers their results in order; throws on the first command Redis refused. */
export async function pipelineRead(redis: Redis, commands: Array<Array<string | number>>): Promise<unknown[]> {
  const requester = (redis as unknown as { client: Requester }).client;
  const replies = (await requester.request({ path: ["pipeline"], body: commands })) as unknown as Array<{ error?: string; result?: unknown }>;
  return replies.map((reply, i) => {
    if (reply.error) throw new errors.UpstashError(`Command ${i + 1} [ ${commands[i]![0]} ] failed: ${reply.error}`);
    return reply.result;
  });
}

/** The exact texts Upstash (and Redis, for maxmemory) refuse a command with, and the limit each names. */
const LIMIT_TEXTS: Array<[RegExp, RedisLimit]> = [
  [/ERR max single record size exceeded/, "record-size"],
  [/ERR max request size exceeded/, "request-size"],
  [/ERR max requests limit exceeded/, "requests"],
  [/ERR DB capacity quota exceeded/, "capacity"],
  [/OOM command not allowed when used memory > 'maxmemory'/, "memory"],
];

/** What a call to Redis is, for its errors and its retries. */
export interface RedisOp {
  /** What error messages name: a command (`HGET`) or a script (`script enqueue`); never an argument. */
  readonly name: string;
  /** Running it twice is harmless (a read, or a write that is idempotent by construction), so a failure that may have reached Redis is retried. */
  readonly repeatSafe: boolean;
  /** A limit error of this call is counted (see {@link takeLimitErrors}). Default true; false for the call that stores the counts. */
  readonly countsLimits?: boolean;
}

/** How many times a call is sent again after a transport failure, and the wait before each (50 ms, doubling). */
const RETRIES = 2;

/** Limit errors counted since the isolate started (or since {@link takeLimitErrors}), by limit: kept here because Redis may be refusing the write that would count them. */
const limitErrors = new Map<RedisLimit, number>();

/** The limit errors counted and not yet taken (read only). */
export function pendingLimitErrors(): ReadonlyMap<RedisLimit, number> {
  return limitErrors;
}

/** The limit errors counted since the last call, and forgets them: the caller writes them to Redis (and adds them back with {@link restoreLimitErrors} if that fails). */
export function takeLimitErrors(): Map<RedisLimit, number> {
  const taken = new Map(limitErrors);
  limitErrors.clear();
  return taken;
}

/** Puts back counts {@link takeLimitErrors} handed out that could not be written. */
export function restoreLimitErrors(counts: Map<RedisLimit, number>): void {
  for (const [limit, n] of counts) limitErrors.set(limit, (limitErrors.get(limit) ?? 0) + n);
}

/**
 * Runs a Redis call, retrying it when that is safe, and turns its failures into
 * errors whose messages carry no argument of the call (payloads, idempotency
 * keys and tokens must never reach a log, a problem document or the tick's status):
 *
 * - transport failures (refused, reset, the bridge reporting Redis down) become
 *   {@link RedisUnavailableError}, a passed deadline {@link RedisTimeoutError};
 *   a call that is not `repeatSafe` gets {@link RedisOutcomeUnknownError} instead,
 *   unless the failure proves the request was never sent (see {@link neverSent});
 * - a limit's text becomes {@link RedisLimitError};
 * - any other error of Redis' becomes {@link RedisCommandError}.
 *
 * A transport failure is retried (twice) only when the call is `repeatSafe` or
 * was never sent; a passed deadline or an answer from the server never is.
 */
export async function redisCall<T>(op: RedisOp, call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const transport = !isTimeout(err) && isTransport(err);
      if (transport && attempt < RETRIES && (op.repeatSafe || neverSent(err))) {
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        continue;
      }
      throw redisError(op, err);
    }
  }
}

/** The error {@link redisCall} throws for `err`. */
function redisError(op: RedisOp, err: unknown): Error {
  const text = redactedText(err);
  const unknown = `${op.name} changes state and Redis may have run it, so it was not sent again: its outcome is unknown`;
  if (isTimeout(err)) {
    const why = `Redis did not answer before the request's deadline (REDIS_TIMEOUT_MS), for ${op.name}: it is slow or busy, or the reply too large, not necessarily down`;
    return op.repeatSafe ? new RedisTimeoutError(why) : new RedisOutcomeUnknownError(`${why}; ${unknown}`);
  }
  for (const [pattern, limit] of LIMIT_TEXTS) {
    if (!pattern.test(text)) continue;
    if (op.countsLimits !== false) limitErrors.set(limit, (limitErrors.get(limit) ?? 0) + 1);
    return new RedisLimitError(limit, `Redis refused ${op.name}: the ${limit} limit is reached (${text})`);
  }
  if (isOutage(err)) {
    const why = `Redis is unreachable (${op.name}): ${text}`;
    return op.repeatSafe || neverSent(err) ? new RedisUnavailableError(why) : new RedisOutcomeUnknownError(`${why}; ${unknown}`);
  }
  return new RedisCommandError(`Redis refused ${op.name}: ${text}`);
}

/**
 * An error's text without anything of the call: the client appends the whole
 * command to an error answered with a non-2xx status (`…, command was: [...]`)
 * and quotes up to 200 characters of a reply that is not JSON; Redis quotes
 * the arguments of a command it does not know.
 */
function redactedText(err: unknown): string {
  if (!(err instanceof Error)) return "an error that is not an Error";
  if (err.name === "UpstashJSONParseError") return "a reply that is not JSON";
  return err.message
    .replace(/, command was: [\s\S]*$/, "")
    .replace(/, with args beginning with:[\s\S]*$/, "")
    .slice(0, 300);
}

/**
 * The request provably never left: Node's fetch reports a refused connection
 * as ECONNREFUSED. workerd reports a refused connection and a reply lost after
 * the request was sent alike ("Network connection lost."), so on Workers no
 * failure counts as never sent.
 */
function neverSent(err: unknown): boolean {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  return cause?.code === "ECONNREFUSED";
}

/** The request's own deadline passed: the only abort our clients make is their timeout signal (see {@link slicedDeadlines}). */
function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
}

/** The request failed on the way (escaped fetch itself) and no answer came: refused, reset. Node's fetch throws a TypeError with a cause. */
function isTransport(err: unknown): boolean {
  if (!(err instanceof Error) || err.name === "UpstashError" || err.name === "UpstashJSONParseError") return false;
  return err.name !== "TypeError" || err.cause !== undefined;
}

function isOutage(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  // Redis answered with an error of its own (WRONGTYPE, a Lua error): the
  // client raises an UpstashError. The bridge's "Redis is unreachable" (503)
  // arrives the same way and is an outage.
  if (err.name === "UpstashError") return /Redis is unreachable|bridge is shutting down|Service Unavailable|timed out/i.test(err.message);
  // Anything else escaped fetch itself: refused, reset, timed out, a body
  // that is not the protocol's JSON.
  return true;
}
