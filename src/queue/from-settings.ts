import type { Settings } from "../env.js";
import { REQUEST_BUDGET_PERCENT } from "../limits.js";
import type { Shard } from "../settings/shards.js";
import { MAIN_SHARD } from "./ids.js";
import { TickLock } from "./lock.js";
import { Queue } from "./queue.js";
import { createRedis, sharedRedis } from "./redis.js";
import { Shards } from "./shards.js";

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
  /** Which shard's queue. Default the `main` shard. */
  shard?: Shard;
}

/** The `main` shard of the settings (without `DELAYLINE_SHARDS`, the only one: today's URL, token and prefix). */
const mainShard = (s: Settings): Shard => s.shards.find((sh) => sh.name === MAIN_SHARD)!;

/**
 * The shard of the settings named `name` (`main` unless given), for
 * {@link queueFromSettings} and {@link tickLockFromSettings}: what the tick's
 * invocations for one shard build theirs from. Throws for a name the settings
 * do not list (an invocation started under settings since changed).
 */
export function shardNamed(s: Settings, name: string = MAIN_SHARD): Shard {
  const shard = s.shards.find((sh) => sh.name === name);
  if (!shard) throw new Error(`no shard named "${name}" in DELAYLINE_SHARDS`);
  return shard;
}

/** What a client of `shard` needs: its URL and token, and the deployment's timeout. */
const clientSettings = (s: Settings, shard: Shard) => ({ redisUrl: shard.redisUrl, redisToken: shard.redisToken, redisTimeoutMs: s.redisTimeoutMs });

/** The queue of one shard of the deployment (the `main` shard unless `shard` is given), configured from its settings. */
export function queueFromSettings(s: Settings, { now, oneCallAtATime = false, shard = mainShard(s) }: QueueFromSettingsOptions = {}): Queue {
  const client = clientSettings(s, shard);
  return new Queue({
    ...(now ? { now } : {}),
    redis: oneCallAtATime ? sharedRedis(client) : createRedis(client),
    prefix: shard.prefix,
    shard: shard.name,
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
export function tickLockFromSettings(s: Settings, shard: Shard = mainShard(s)): TickLock {
  return new TickLock(createRedis(clientSettings(s, shard)), shard.prefix);
}

/** Every shard's queue (each built as {@link queueFromSettings} builds one), with the topics' placement and pins. */
export function shardsFromSettings(s: Settings, options: Omit<QueueFromSettingsOptions, "shard"> = {}): Shards {
  return new Shards(
    s.shards.map((shard) => ({ name: shard.name, queue: queueFromSettings(s, { ...options, shard }) })),
    s.shardPins,
  );
}
