import type { Settings } from "../env.js";
import { Queue } from "./queue.js";
import { createRedis, sharedRedis } from "./redis.js";

/**
 * The deployment's queue, configured from its settings; `now` replaces the
 * clock (tests). `oneCallAtATime`: the caller never has two of the queue's
 * calls in flight, so it may use the isolate's shared client (see
 * {@link sharedRedis}); otherwise concurrent calls share one request. Default false.
 */
export function queueFromSettings(s: Settings, now?: () => number, oneCallAtATime = false): Queue {
  return new Queue({
    ...(now ? { now } : {}),
    redis: oneCallAtATime ? sharedRedis(s) : createRedis(s),
    prefix: s.prefix,
    defaults: { maxAttempts: s.defaultMaxAttempts, timeoutMs: s.defaultTimeoutMs },
    retentionMs: s.retentionMs,
    deadLetterCap: s.deadLetterCap,
    idempotencyWindowMs: s.idempotencyWindowMs,
  });
}
