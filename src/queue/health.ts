import type { Redis } from "@upstash/redis/cloudflare";
import { keys } from "./keys.js";
import { redisCall } from "./redis.js";

/** True when Redis answers PING; false on an outage. */
export async function redisIsUp(redis: Redis): Promise<boolean> {
  try {
    return (await redisCall(() => redis.ping())) === "PONG";
  } catch {
    return false;
  }
}

/** Records that a scheduled() invocation started now; `healthz` reports its age. */
export async function recordTickHeartbeat(redis: Redis, prefix: string, nowMs: number): Promise<void> {
  await redisCall(() => redis.set(keys(prefix).tickLast, String(nowMs)));
}

/** When the latest scheduled() invocation started, or null if none has. */
export async function lastTickAt(redis: Redis, prefix: string): Promise<number | null> {
  const raw = await redisCall(() => redis.get<string>(keys(prefix).tickLast));
  return raw === null ? null : Number(raw);
}
