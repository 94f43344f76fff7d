/**
 * Every Redis key delayline uses is built here and nowhere else.
 *
 * A deployment's keys share one prefix holding a hash tag, so they all live
 * in one cluster slot and every script may touch any of them (each still
 * receives every key it touches in KEYS):
 *
 *   <p>                      prefix, e.g. `dl:{main}`
 *   <p>:tick:last            STRING epoch ms of the latest scheduled() start (heartbeat)
 *   <p>:tick:lock            STRING owner token of the running tick loop; expires unless renewed
 *   <p>:tick:asleep          STRING present while the tick sleeps longer than TICK_POLL_MS (producers then wake jobs due soon); expires
 *   <p>:tick:status          STRING JSON the running (or last) tick loop reports: rounds, claims, subrequests, budget
 *   <p>:topics               SET    topic registry: every topic that exists (capped by MAX_TOPICS)
 *   <p>:index                ZSET   topic index: topic -> when the tick should next look at it; holds
 *                                   every push topic with work that is not paused (src/queue/lua/lib/index.lua)
 *   <p>:parked               SET    topics that are pull or paused (sampled for the per-minute series)
 *   <p>:jobs                 HASH   job id -> job record JSON (immutable while the job lives)
 *   <p>:meta                 HASH   job id -> {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":attempt history};
 *                                   absent before the first claim (lua/lib/records.lua)
 *   <p>:done:<n>             HASH   job id -> finished-job record, retention bucket n = floor(ms / retention); expires
 *   <p>:t:<topic>:due        ZSET   job id -> due ms (scheduled, incl. waiting for a retry)
 *   <p>:t:<topic>:lease      ZSET   job id -> lease deadline ms (in flight)
 *   <p>:t:<topic>:dead:at    ZSET   dead letters: job id -> failed ms (capped: the oldest are trimmed)
 *   <p>:t:<topic>:dead:entries HASH job id -> dead-letter entry JSON (lua/lib/records.lua deadEntry)
 *   <p>:t:<topic>:dead       LIST   dead letters written before they were kept by id, newest first;
 *                                   moved into the two above by migrate-dead.lua
 *   <p>:t:<topic>:conf       HASH   topic settings
 *   <p>:t:<topic>:bucket     HASH   token bucket: t (tokens), ts (ms of last refill)
 *   <p>:t:<topic>:metrics    HASH   "dispatched" counter; "total" metrics vector (src/queue/metrics.ts);
 *                                   "m<slot>" / "g<slot>" that vector / a backlog sample per minute, slot = minute mod 1440
 *   <p>:t:<topic>:idem:<k>   STRING job id for idempotency key k; expires after the window
 *   <p>:t:<topic>:purged     STRING ms of the topic's last purge: keys of jobs made before it and gone are free
 *                                   (enqueue.lua); expires after the idempotency window, as every such key has
 *   <p>:sched:defs           HASH   schedule id -> definition JSON (as PUT gave it, normalized)
 *   <p>:sched:state          HASH   schedule id -> state JSON {rev, next, runs, lastRunAt, lastJobId, paused, …}
 *   <p>:sched:ids            ZSET   schedule id -> 0 (paging in id order)
 *   <p>:sched:due            ZSET   schedule id -> next occurrence ms (not paused, not ended); its head is the
 *                                   score of the index member "~schedules" (src/queue/lua/lib/index.lua)
 *
 * A job id is `<topic>.<ULID>`, so every operation by id finds its topic's keys.
 */
/** The topic index's member for the schedules (no topic name holds "~"): see src/queue/lua/lib/index.lua. */
export const SCHEDULES_INDEX_MEMBER = "~schedules";

export interface TopicKeys {
  due: string;
  lease: string;
  deadAt: string;
  deadEntries: string;
  /** The dead-letter list of earlier versions, drained by migrate-dead.lua. */
  deadLegacy: string;
  conf: string;
  bucket: string;
  metrics: string;
  /** When the topic was last purged (delete-topic.lua), so idempotency keys of the jobs it dropped are free. */
  purged: string;
}

export class Keys {
  readonly tickLast: string;
  readonly tickLock: string;
  readonly tickAsleep: string;
  readonly tickStatus: string;
  /** Hash limit -> how many commands Redis refused at that limit (src/queue/limit-errors.ts). */
  readonly limitErrors: string;
  readonly topics: string;
  readonly topicIndex: string;
  readonly parked: string;
  readonly jobs: string;
  readonly meta: string;
  readonly scheduleDefs: string;
  readonly scheduleState: string;
  readonly scheduleIds: string;
  readonly schedulesDue: string;

  constructor(readonly prefix: string) {
    this.tickLast = `${prefix}:tick:last`;
    this.tickLock = `${prefix}:tick:lock`;
    this.tickAsleep = `${prefix}:tick:asleep`;
    this.tickStatus = `${prefix}:tick:status`;
    this.limitErrors = `${prefix}:limit-errors`;
    this.topics = `${prefix}:topics`;
    this.topicIndex = `${prefix}:index`;
    this.parked = `${prefix}:parked`;
    this.jobs = `${prefix}:jobs`;
    this.meta = `${prefix}:meta`;
    this.scheduleDefs = `${prefix}:sched:defs`;
    this.scheduleState = `${prefix}:sched:state`;
    this.scheduleIds = `${prefix}:sched:ids`;
    this.schedulesDue = `${prefix}:sched:due`;
  }

  topic(topic: string): TopicKeys {
    const t = `${this.prefix}:t:${topic}`;
    return {
      due: `${t}:due`,
      lease: `${t}:lease`,
      deadAt: `${t}:dead:at`,
      deadEntries: `${t}:dead:entries`,
      deadLegacy: `${t}:dead`,
      conf: `${t}:conf`,
      bucket: `${t}:bucket`,
      metrics: `${t}:metrics`,
      purged: `${t}:purged`,
    };
  }

  idempotency(topic: string, key: string): string {
    return `${this.prefix}:t:${topic}:idem:${key}`;
  }

  /** The finished-job hash of the retention bucket holding `ms`. */
  done(ms: number, retentionMs: number): string {
    return `${this.prefix}:done:${Math.floor(ms / retentionMs)}`;
  }
}

/** The keys of the deployment with this prefix. */
export function keys(prefix: string): Keys {
  return new Keys(prefix);
}
