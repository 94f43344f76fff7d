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
  // fetch() failing outright (connection refused) is a TypeError in workerd;
  // an expired per-request deadline is a TimeoutError or AbortError.
  if (["TypeError", "TimeoutError", "AbortError", "UpstashJSONParseError"].includes(err.name)) return true;
  // The bridge answers 503 with this text when its Redis is down.
  return /Redis is unreachable|bridge is shutting down/.test(err.message);
}
