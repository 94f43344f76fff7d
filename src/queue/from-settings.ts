import type { Settings } from "../env.js";
import { REQUEST_BUDGET_PERCENT } from "../limits.js";
import { TickLock } from "./lock.js";
import { Queue } from "./queue.js";
import { createRedis, sharedRedis } from "./redis.js";

// The deployment's Redis clients are made here and in nothing outside
// src/queue: callers get the operations (a Queue, its health, the tick's
// lock), never a client (test/node/imports.test.ts holds this).

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
    requestBudgetBytes: Math.floor((s.redisMaxRequestBytes * REQUEST_BUDGET_PERCENT) / 100),
  });
}

/**
 * The deployment's tick lock, on a client of its own: the loop spends a
 * subrequest on every ask, and the queue's auto-pipelining client could fold
 * an ask into one request with the queue's calls of the same moment.
 */
export function tickLockFromSettings(s: Settings): TickLock {
  return new TickLock(createRedis(s), s.prefix);
}
