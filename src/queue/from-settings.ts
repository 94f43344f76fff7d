import type { Settings } from "../env.js";
import { Queue } from "./queue.js";
import { createRedis } from "./redis.js";

/** The deployment's queue, configured from its settings; `now` replaces the clock (tests). */
export function queueFromSettings(s: Settings, now?: () => number): Queue {
  return new Queue({
    ...(now ? { now } : {}),
    redis: createRedis(s),
    prefix: s.prefix,
    defaults: { maxAttempts: s.defaultMaxAttempts, timeoutMs: s.defaultTimeoutMs },
    retentionMs: s.retentionMs,
    deadLetterCap: s.deadLetterCap,
    idempotencyWindowMs: s.idempotencyWindowMs,
  });
}
