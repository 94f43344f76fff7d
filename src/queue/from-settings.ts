import type { Settings } from "../env.js";
import { Queue } from "./queue.js";
import { createRedis, sharedRedis } from "./redis.js";

/** How {@link queueFromSettings} builds the queue. */
export interface QueueFromSettingsOptions {
  /** Replaces the clock (tests). Default Date.now. */
  now?: () => number;
  /**
   * The caller makes its calls one after another, so it may use the
   * isolate's shared client (see {@link sharedRedis}), where concurrent
   * calls would each be a request of their own; otherwise a client of its
   * own whose concurrent calls share one request. Default false.
   */
  oneCallAtATime?: boolean;
}

/** The deployment's queue, configured from its settings. */
export function queueFromSettings(s: Settings, { now, oneCallAtATime = false }: QueueFromSettingsOptions = {}): Queue {
  return new Queue({
    ...(now ? { now } : {}),
    redis: oneCallAtATime ? sharedRedis(s) : createRedis(s),
    prefix: s.prefix,
    defaults: { maxAttempts: s.defaultMaxAttempts, timeoutMs: s.defaultTimeoutMs, signatureScheme: s.signatureScheme },
    retentionMs: s.retentionMs,
    deadLetterCap: s.deadLetterCap,
    idempotencyWindowMs: s.idempotencyWindowMs,
    maxTopics: s.maxTopics,
  });
}
