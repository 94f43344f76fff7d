import { Redis } from "@upstash/redis/cloudflare";
import type { Settings } from "../env.js";

/** Raised when Redis (Upstash or the bridge) cannot be reached in time; the edge answers 503. */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/**
 * The one place the Upstash client is built.
 *
 * - `automaticDeserialization: false`: values are our own JSON, parsed where
 *   their schema is known; the default would turn the string "42" into 42.
 * - auto-pipelining stays on: concurrent calls in one invocation share one
 *   REST request, and every request is a Workers subrequest.
 * - every request carries its own deadline, and network errors get two quick
 *   retries instead of five slow ones, so an outage becomes a 503 promptly.
 */
export function createRedis(s: RedisSettings): Redis {
  return new Redis(clientConfig(s, true));
}

type RedisSettings = Pick<Settings, "redisUrl" | "redisToken" | "redisTimeoutMs">;

function clientConfig(s: RedisSettings, autoPipelining: boolean): ConstructorParameters<typeof Redis>[0] {
  return {
    url: s.redisUrl,
    token: s.redisToken,
    automaticDeserialization: false,
    enableTelemetry: false,
    enableAutoPipelining: autoPipelining,
    signal: () => AbortSignal.timeout(s.redisTimeoutMs),
    retry: { retries: 2, backoff: (n) => 50 * 2 ** n },
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
  if (!redis) shared.set(key, (redis = new Redis(clientConfig(s, false))));
  return redis;
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
    if (isOutage(err)) throw new RedisUnavailableError(`Redis is unreachable: ${(err as Error).message}`);
    throw err;
  }
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
