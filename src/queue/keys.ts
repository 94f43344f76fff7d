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
 *   <p>:t:<topic>:j:<ulid>   STRING job record JSON, from enqueue until the job is swept (changed only by an upsert while pending)
 *   <p>:t:<topic>:m:<ulid>   STRING job meta JSON (lua/lib/records.lua): while the job lives
 *                                   {"a":attempts,"d":due ms,"e":last error,"s":claimed ms,"h":attempt history},
 *                                   absent before the first claim; once finished {"st":state,"a","e","f":finished ms,"h"}
 *   <p>:t:<topic>:done       ZSET   finished jobs (succeeded, cancelled, dropped, expired): job id -> finished ms; swept past the
 *                                   retention window (sweep.lua), their two keys with them
 *   <p>:t:<topic>:due        ZSET   job id -> due ms (scheduled, incl. waiting for a retry): the pending jobs a
 *                                   topic's maxLength caps (src/queue/lua/lib/pending.lua)
 *   <p>:t:<topic>:lease      ZSET   job id -> lease deadline ms (in flight)
 *   <p>:t:<topic>:exp        ZSET   job id -> expiresAt ms: the pending jobs that carry an expiry and never started
 *                                   (lua/lib/expire.lua); left at their first claim, cancel, expiry or purge
 *   <p>:t:<topic>:dead:at    ZSET   dead letters: job id -> failed ms (capped: the oldest are swept); a letter is
 *                                   its job's two keys, the meta's state "dead"
 *   <p>:model                STRING "2" once the hash model's keys (below) have been migrated (migrate-model.lua)
 *
 * Keys of earlier versions, read only to migrate them:
 *   <p>:jobs, <p>:meta       HASH   job id -> record / meta, for every job of the deployment
 *   <p>:done:<n>             HASH   job id -> finished-job record, retention bucket n = floor(ms / retention)
 *   <p>:t:<topic>:dead:entries HASH job id -> dead-letter entry JSON
 *   <p>:t:<topic>:conf       HASH   topic settings (src/queue/topics.ts), maxLength and overflow among them
 *   <p>:t:<topic>:bucket     HASH   token bucket: t (tokens), ts (ms of last refill)
 *   <p>:t:<topic>:metrics    HASH   "dispatched", "dropped" and "expired" counters; "total" metrics vector (src/queue/metrics.ts);
 *                                   "m<slot>" / "g<slot>" that vector / a backlog sample per minute, slot = minute mod 1440
 *   <p>:t:<topic>:fdue       ZSET   keyed jobs (a flow key or a priority) scheduled or waiting: job id -> due ms
 *   <p>:t:<topic>:fsched     ZSET   keyed jobs not yet due (or due, their key not yet served): "<key>\n<priority>\n<id>" -> due ms
 *   <p>:t:<topic>:fready     ZSET   due keyed jobs waiting their key's turn: "<key>\n<eff>\n<id>" -> 0, by lex
 *   <p>:t:<topic>:fcal       ZSET   flow key -> its turn (<= now: ready) or when its rate lets it start again
 *   <p>:t:<topic>:fpark      ZSET   flow key -> 1 at its parallelism, 2 paused (out of the calendar)
 *   <p>:t:<topic>:fin        HASH   flow key -> its jobs in flight
 *   <p>:t:<topic>:ftat       ZSET   flow key -> its rate's theoretical arrival time (GCRA), ms; forgotten once passed
 *   <p>:t:<topic>:fkeys      HASH   flow key -> its own settings JSON (lua/lib/flow.lua)
 *   <p>:t:<topic>:fkidx      ZSET   the flow keys' index: "<key>\n<due, 15 digits>\n<id>" -> 0, by lex: every job of a
 *                                   flow key scheduled or waiting (a key's count and its jobs in due order)
 *   <p>:t:<topic>:lbl:<l>    ZSET   label l's index: job id -> 0, by lex (ids of a topic sort by their ULID: enqueue order);
 *                                   written at enqueue (and by an upsert) for labelled jobs only. Members whose job
 *                                   finished are removed lazily: by walks by the label (label-page.lua) and by each
 *                                   labelled enqueue, which checks LABEL_TRIM_PROBES random members per job it adds
 *                                   (lua/lib/labels.lua): a member is live while its id is in due, fdue, lease or dead:at
 *   <p>:t:<topic>:labels     SET    the labels whose index exists (delete-topic drops their indexes); a label leaves
 *                                   it when its index empties
 *   <p>:t:<topic>:idem:<k>   STRING job id for idempotency key k ("=<id>": the job its request's content repeated);
 *                                   expires after the window (mode "finished": after the job's delay plus the window,
 *                                   renewed by a repeat finding it alive; free once the job is in none of due, fdue,
 *                                   lease: enqueue.lua)
 *   <p>:t:<topic>:cdup:<h>   STRING job id whose content hashes to h (content-keys.ts), in a topic with contentDedupMs;
 *                                   expires after that window
 *   <p>:t:<topic>:jobkey:<k> STRING id of the job upserted under job key k, then a line per label it carries
 *                                   (src/queue/lua/upsert.lua): checked against that job's state at each upsert, so a
 *                                   pointer its job left behind frees the key
 *   <p>:t:<topic>:purged     STRING ms of the topic's last purge: keys of jobs made before it and gone are free
 *                                   (enqueue.lua); expires after the idempotency window or MAX_CONTENT_DEDUP_MS, the
 *                                   longer, as every window and content key has (a "finished" key needs it not)
 *   <p>:sched:defs           HASH   schedule id -> definition JSON (as PUT gave it, normalized)
 *   <p>:sched:state          HASH   schedule id -> state JSON {rev, next, runs, lastRunAt, lastJobId, paused, …}
 *   <p>:sched:ids            ZSET   schedule id -> 0 (paging in id order)
 *   <p>:sched:due            ZSET   schedule id -> next occurrence ms (not paused, not ended); its head is the
 *                                   score of the index member "~schedules" (src/queue/lua/lib/index.lua)
 *
 * A job id is `<topic>.<ULID>`, so every operation by id finds its topic's keys
 * and its own. No key holds more than one job, save the topic's sorted sets
 * of ids (due, lease, done, dead:at, the label indexes) and its small settings and counters.
 */
/** The topic index's member for the schedules (no topic name holds "~"): see src/queue/lua/lib/index.lua. */
export const SCHEDULES_INDEX_MEMBER = "~schedules";

/** A job's own keys: its record and its meta (lua/lib/records.lua). */
export interface JobKeys {
  record: string;
  meta: string;
}

export interface TopicKeys {
  due: string;
  lease: string;
  /** Pending never-started jobs that carry an expiry -> their expiresAt (lua/lib/expire.lua). */
  exp: string;
  /** Finished jobs (succeeded, cancelled, dropped) -> finished ms, swept past retention. */
  done: string;
  deadAt: string;
  /** The dead-letter hash of the hash model, read only to migrate it (migrate-model.lua). */
  deadEntries: string;
  conf: string;
  bucket: string;
  metrics: string;
  /** When the topic was last purged (delete-topic.lua), so idempotency keys of the jobs it dropped are free. */
  purged: string;
  /** The flow keys' sets (lua/lib/flow.lua), in the order scripts take them: fdue, fsched, fready, fcal, fpark, fin, ftat, fkeys, fkidx. */
  flow: FlowKeys;
}

/** A shaped topic's keys for its keyed jobs and flow keys: see lua/lib/flow.lua. */
export interface FlowKeys {
  fdue: string;
  fsched: string;
  fready: string;
  fcal: string;
  fpark: string;
  fin: string;
  ftat: string;
  fkeys: string;
  /** The flow keys' index: each key's scheduled and waiting jobs in due order (lex members, see {@link keyIndexMember}). */
  fkidx: string;
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
  /** "2" once the hash model's keys were migrated. */
  readonly model: string;
  /** The hash model's deployment-wide record and meta hashes, read only to migrate them. */
  readonly legacyJobs: string;
  readonly legacyMeta: string;
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
    this.model = `${prefix}:model`;
    this.legacyJobs = `${prefix}:jobs`;
    this.legacyMeta = `${prefix}:meta`;
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
      exp: `${t}:exp`,
      done: `${t}:done`,
      deadAt: `${t}:dead:at`,
      deadEntries: `${t}:dead:entries`,
      conf: `${t}:conf`,
      bucket: `${t}:bucket`,
      metrics: `${t}:metrics`,
      purged: `${t}:purged`,
      flow: {
        fdue: `${t}:fdue`,
        fsched: `${t}:fsched`,
        fready: `${t}:fready`,
        fcal: `${t}:fcal`,
        fpark: `${t}:fpark`,
        fin: `${t}:fin`,
        ftat: `${t}:ftat`,
        fkeys: `${t}:fkeys`,
        fkidx: `${t}:fkidx`,
      },
    };
  }

  /** Label `label`'s index of the topic's jobs that carry it (lua/lib/labels.lua). */
  labelIndex(topic: string, label: string): string {
    return `${this.prefix}:t:${topic}:lbl:${label}`;
  }

  /** The topic's labels whose index exists. */
  labelSet(topic: string): string {
    return `${this.prefix}:t:${topic}:labels`;
  }

  idempotency(topic: string, key: string): string {
    return `${this.prefix}:t:${topic}:idem:${key}`;
  }

  /** The content key of a job whose content hashes to `hash` (content-keys.ts), in a topic that dedups by content. */
  contentDedup(topic: string, hash: string): string {
    return `${this.prefix}:t:${topic}:cdup:${hash}`;
  }

  /** The pointer of job key `key`: the id of the job an upsert stored under it (lua/upsert.lua). */
  jobKeyPointer(topic: string, key: string): string {
    return `${this.prefix}:t:${topic}:jobkey:${key}`;
  }

  /**
   * The keys of the job with this id (`[<shard>~]<topic>.<ULID>`: the ULID is
   * its last 26 characters), among its topic's keys: the shard the id names
   * is the database these keys are in, not part of them.
   */
  job(id: string): JobKeys {
    const dot = id.length - 27;
    // Neither a shard's nor a topic's name holds "~": -1 + 1 is the start of an id without a shard.
    const t = `${this.prefix}:t:${id.slice(id.indexOf("~") + 1, dot)}`;
    const ulid = id.slice(dot + 1);
    return { record: `${t}:j:${ulid}`, meta: `${t}:m:${ulid}` };
  }

  /** The record and meta keys of each id, in order: record1, meta1, record2, meta2, … */
  jobPairs(ids: readonly string[]): string[] {
    const out: string[] = [];
    for (const id of ids) {
      const k = this.job(id);
      out.push(k.record, k.meta);
    }
    return out;
  }

  /** The hash model's finished-job hash of the retention bucket holding `ms`, read only to migrate it. */
  legacyDone(ms: number, retentionMs: number): string {
    return `${this.prefix}:done:${Math.floor(ms / retentionMs)}`;
  }
}

/** A shaped topic's flow keys in the order scripts take them in KEYS (lua/lib/flow.lua). */
export function flowKeyList(f: FlowKeys): string[] {
  return [f.fdue, f.fsched, f.fready, f.fcal, f.fpark, f.fin, f.ftat, f.fkeys, f.fkidx];
}

/** A keyed job's member of its topic's fsched: its key and priority ride along (lua/lib/flow.lua's scheduledMember). */
export function scheduledMember(flowKey: string, priority: number, id: string): string {
  return `${flowKey}\n${priority}\n${id}`;
}

/** A job's member of its topic's flow keys' index (lua/lib/flow.lua's indexMember): its key, its due time in 15 digits, its id. */
export function keyIndexMember(flowKey: string, due: number, id: string): string {
  return `${flowKey}\n${String(Math.round(due)).padStart(15, "0")}\n${id}`;
}

/**
 * A flow key's range of the keys' index as ZRANGE … BYLEX bounds: its jobs
 * after the position `after` (due time, id), due within [from, to] (epoch ms,
 * either open). The index orders a key's jobs by due time, then id, as the
 * due set orders its own, so a position means the same in both.
 */
export function keyIndexRange(flowKey: string, after: { score: number; id: string } | undefined, from?: number, to?: number): [string, string] {
  const pad = (ms: number) => String(Math.max(0, Math.round(ms))).padStart(15, "0");
  let low = `[${flowKey}\n`;
  if (from !== undefined) low = `[${flowKey}\n${pad(from)}\n`;
  if (after && (from === undefined || after.score >= from)) low = `(${keyIndexMember(flowKey, after.score, after.id)}`;
  const high = to === undefined ? `(${flowKey}\v` : `(${flowKey}\n${pad(Math.round(to) + 1)}`;
  return [low, high];
}

/** The job id of a member of the flow keys' index: its last part. */
export function idOfIndexMember(member: string): string {
  return member.slice(member.lastIndexOf("\n") + 1);
}

/** The keys of the deployment with this prefix. */
export function keys(prefix: string): Keys {
  return new Keys(prefix);
}
