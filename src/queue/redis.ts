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
export function createRedis(s: Pick<Settings, "redisUrl" | "redisToken" | "redisTimeoutMs">): Redis {
  return new Redis({
    url: s.redisUrl,
    token: s.redisToken,
    automaticDeserialization: false,
    enableTelemetry: false,
    signal: () => AbortSignal.timeout(s.redisTimeoutMs),
    retry: { retries: 2, backoff: (n) => 50 * 2 ** n },
  });
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
