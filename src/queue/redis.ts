import { errors, Redis, type Requester } from "@upstash/redis/cloudflare";
import type { Settings } from "../env.js";

/** Raised when Redis (Upstash or the bridge) cannot be reached in time; the edge answers 503. */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/**
 * Raised when a request to Redis passed its deadline (REDIS_TIMEOUT_MS): Redis
 * may be up and merely slow or busy, or the reply too large to arrive in time.
 * An outage to the tick like any other; the edge still answers 503 but says
 * what happened instead of calling Redis unreachable.
 */
export class RedisTimeoutError extends RedisUnavailableError {
  override name = "RedisTimeoutError";
}

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
 * - every request carries its own deadline, and network errors get two quick
 *   retries instead of five slow ones, so an outage becomes a 503 promptly.
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
    retry: { retries: 2, backoff: (n) => 50 * 2 ** n },
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
 * It goes through the client's own requester, so retries, deadlines and
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

/**
 * Runs a Redis call and turns transport failures (refused, timed out, the
 * bridge reporting Redis down) into {@link RedisUnavailableError}. Redis' own
 * errors (WRONGTYPE, a Lua error) pass through unchanged: they are bugs, not outages.
 */
export async function redisCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isTimeout(err)) {
      throw new RedisTimeoutError(
        `Redis did not answer before the request's deadline (REDIS_TIMEOUT_MS): it is slow or busy, or the reply too large, not necessarily down (${(err as Error).message})`,
      );
    }
    if (isOutage(err)) throw new RedisUnavailableError(`Redis is unreachable: ${(err as Error).message}`);
    throw err;
  }
}

/** The request's own deadline passed: the only abort our clients make is their timeout signal (see {@link slicedDeadlines}). */
function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
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
