import type { Redis } from "@upstash/redis/cloudflare";
import { DEFAULT_DEAD_LETTER_CAP, DEFAULT_IDEMPOTENCY_WINDOW_MS, DEFAULT_MAX_TOPICS, DEFAULT_RETENTION_MS, REQUEST_BUDGET_BYTES } from "../limits.js";
import { MAIN_SHARD } from "./ids.js";
import { Keys } from "./keys.js";
import type { LuaScript } from "./lua.generated.js";
import { ensureModel as ensureDataModel } from "./model.js";
import { runScript } from "./scripts.js";
import { DEFAULT_TOPIC_DEFAULTS, type TopicDefaults } from "./topics.js";

/** Options of a {@link Queue}. */
export interface QueueOptions {
  redis: Redis;
  /** Key prefix with a hash tag, e.g. `dl:{main}`. */
  prefix: string;
  /** The shard these keys are (its name goes into the ids of jobs it mints, see src/queue/ids.ts). Default `main`. */
  shard?: string;
  /** Defaults for topics that do not set their own. Default {@link DEFAULT_TOPIC_DEFAULTS}. */
  defaults?: Partial<TopicDefaults>;
  /** Finished jobs stay readable this long. Default 3,600,000 ms (1 h). */
  retentionMs?: number;
  /** Dead-letter list length per topic; the oldest entries are trimmed. Default 10,000. */
  deadLetterCap?: number;
  /** How long an idempotency key is remembered. Default 86,400,000 ms (24 h). */
  idempotencyWindowMs?: number;
  /** Most expired leases one claim reaps. Default 100. */
  reapLimit?: number;
  /** Most topics the registry holds; enqueueing to or configuring one more is refused. Default 10,000. */
  maxTopics?: number;
  /**
   * Largest Redis request, in bytes, a call carrying caller-sized data (a
   * batch enqueue, a schedule write) may make; a larger one is refused with a
   * RequestTooLargeError before anything is sent. Default 9,961,472
   * (REQUEST_BUDGET_BYTES: 95% of Upstash's 10 MB request limit).
   */
  requestBudgetBytes?: number;
  /** The clock. Default `Date.now`. */
  now?: () => number;
}

/**
 * What every part of a Queue works with: its client, keys and settings (the
 * options with their defaults applied), and the script runner. One per
 * Queue, shared by the modules that do its work.
 */
export class QueueContext {
  readonly redis: Redis;
  readonly keys: Keys;
  readonly shard: string;
  readonly defaults: TopicDefaults;
  readonly retentionMs: number;
  readonly deadLetterCap: number;
  readonly idempotencyWindowMs: number;
  readonly reapLimit: number;
  readonly maxTopics: number;
  readonly requestBudgetBytes: number;
  readonly now: () => number;

  constructor(options: QueueOptions) {
    this.redis = options.redis;
    this.keys = new Keys(options.prefix);
    this.shard = options.shard ?? MAIN_SHARD;
    this.defaults = { ...DEFAULT_TOPIC_DEFAULTS, ...options.defaults };
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.deadLetterCap = options.deadLetterCap ?? DEFAULT_DEAD_LETTER_CAP;
    this.idempotencyWindowMs = options.idempotencyWindowMs ?? DEFAULT_IDEMPOTENCY_WINDOW_MS;
    this.reapLimit = options.reapLimit ?? 100;
    this.maxTopics = options.maxTopics ?? DEFAULT_MAX_TOPICS;
    this.requestBudgetBytes = options.requestBudgetBytes ?? REQUEST_BUDGET_BYTES;
    this.now = options.now ?? Date.now;
  }

  /** Runs one of the Lua scripts on this queue's client. */
  async run(script: LuaScript, keys: string[], args: Array<string | number>, options: { keyed?: boolean } = {}): Promise<unknown> {
    // Every script reads the per-job model: the hash model's keys are moved first (a resolved promise after that).
    await this.ensureModel();
    return runScript(this.redis, script, keys, args, options);
  }

  /** Resolves once the deployment's data is in the per-job model, migrating it the first time (src/queue/model.ts); one GET per isolate and prefix after that. */
  ensureModel(): Promise<void> {
    return ensureDataModel(this);
  }
}
