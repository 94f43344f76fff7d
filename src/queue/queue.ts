import type { Redis } from "@upstash/redis/cloudflare";
import { z } from "zod";
import { createdAtOfJobId, newJobId, topicOfJobId } from "./ids.js";
import { Keys } from "./keys.js";
import { Schedules } from "./schedules.js";
import { TopicLimitError } from "./errors.js";
import { Health } from "./health.js";
import * as lua from "./lua.generated.js";
import { observationVector, SERIES_MINUTES, snapshotOf, type MetricsSnapshot, type Observation } from "./metrics.js";
import { decideAfterFailure, type Backoff } from "./policy/backoff.js";
import { pipeline, redisCall } from "./redis.js";
import { replies } from "./replies.js";
import { runScript } from "./scripts.js";
import {
  decodeTopicConf,
  DEFAULT_TOPIC_DEFAULTS,
  encodeTopicPatch,
  type TopicDefaults,
  type TopicPatch,
  type TopicSecrets,
  type TopicSettings,
} from "./topics.js";
import {
  deadEntrySchema,
  flatHash,
  intReply,
  nullableString,
  parseRecord,
  vectorText,
  type AttemptRecord,
  type DeadEntry,
  type JobRecord,
  type JobState,
  type Target,
} from "./types.js";

export { TopicLimitError } from "./errors.js";

/** Options of a {@link Queue}. */
export interface QueueOptions {
  redis: Redis;
  /** Key prefix with a hash tag, e.g. `dl:{main}`. */
  prefix: string;
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
  /** The clock. Default `Date.now`. */
  now?: () => number;
}

/** A job to enqueue. */
export interface EnqueueInput {
  topic: string;
  payload: unknown;
  /** Run this many ms from now. Default 0. Ignored when `runAt` is given. */
  delayMs?: number;
  /** Run at this epoch ms; a time in the past means now. */
  runAt?: number;
  maxAttempts?: number;
  backoff?: Backoff;
  target?: Target;
  timeoutMs?: number;
  /** A repeat of this key within the idempotency window returns the first job's id. */
  idempotencyKey?: string;
}

export interface EnqueueResult {
  id: string;
  topic: string;
  /** When the job is due; for a repeat of an idempotency key, the existing job's, or null once it is in flight or finished. */
  dueAt: number | null;
  deduplicated: boolean;
}

export interface ClaimedJob {
  id: string;
  topic: string;
  attempt: number;
  dueAt: number;
  leaseExpiresAt: number;
  record: JobRecord;
}

/** Who claims: the tick (push topics) or a pull consumer over HTTP (pull topics). */
export type ClaimMode = "push" | "pull";

/** What kept a claim from taking every ready job. */
export type HeldBy = "concurrency" | "rate" | "paused" | "mode";

export interface ClaimResult {
  jobs: ClaimedJob[];
  /** The earliest due time still scheduled in the topic, or null when none is. */
  nextDueAt: number | null;
  paused: boolean;
  /** Expired leases handled by this claim. */
  reaped: { retried: number; dead: number };
  /** When the topic's rate limit held jobs back: ms until the next one may start; else 0. */
  rateLimitedForMs: number;
  /** Why ready jobs were left (null: none were, or only `max` did); "mode": the topic is of the other mode and gave nothing. */
  heldBy: HeldBy | null;
  /** Push claims: when the tick can next make progress on the topic (its score in the topic index), or null for never. */
  nextLookAt: number | null;
  /** Push claims: the topic's settings and secrets as the claim read them (null for pull claims and a topic of the other mode). */
  topic: { settings: TopicSettings; secrets: TopicSecrets } | null;
}

/** How long an isolate trusts that a topic it registered is still registered (a topic deleted meanwhile is registered again by its next enqueue after this). */
const REGISTERED_TTL_MS = 60_000;
/** A lease outlasts the handler's timeout by this much, so a slow settle is not mistaken for a dead worker. */
const LEASE_MARGIN_MS = 30_000;
/** Most scheduled jobs one call of delete-topic drops while purging. */
const PURGE_BATCH = 1_000;

export type Outcome = (
  | { id: string; attempt: number; kind: "ack" }
  | { id: string; attempt: number; kind: "retry"; at: number; error: string }
  | { id: string; attempt: number; kind: "dead"; error: string }
) & {
  /** How late the handler started and how long it ran; goes into the topic's histograms and the attempt history. */
  observed?: Observation;
  /** When the handler started, epoch ms; goes into the attempt history. Default: when the job was claimed. */
  startedAt?: number;
  /** The HTTP status of the delivery's response (http deliveries that got one); goes into the attempt history. */
  httpStatus?: number;
};

export interface JobSnapshot {
  id: string;
  topic: string;
  state: JobState;
  /** When the job is or was due (for a job in flight: the due time of the current attempt). */
  dueAt: number | null;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  createdAt: number;
  payload: unknown;
  leaseExpiresAt?: number;
  finishedAt?: number;
  /** The schedule whose occurrence made this job, and that occurrence (epoch ms). */
  scheduleId?: string;
  scheduledFor?: number;
  /** Its attempts, oldest first (the last {@link ATTEMPT_HISTORY_LIMIT}). */
  history: AttemptRecord[];
}

/** The states a topic's jobs can be listed in. */
export type ListedState = "scheduled" | "inflight";

/** A position in a listing: the score (due time or lease deadline, ms) and id of a job; a page starts after it. */
export interface ListPosition {
  score: number;
  id: string;
}

/** One job of a listing. */
export interface ListedJob {
  id: string;
  topic: string;
  state: ListedState;
  /** When the job is due (in flight: the due time of the current attempt). */
  dueAt: number | null;
  attempts: number;
  lastError: string | null;
  createdAt: number;
  /** In flight only. */
  leaseExpiresAt?: number;
  /** Only when asked for. */
  payload?: unknown;
  /** The schedule whose occurrence made the job, and that occurrence (read with the payload, so only when it is asked for). */
  scheduleId?: string;
  scheduledFor?: number;
}

/** Options of {@link Queue.listJobs}. */
export interface ListJobsOptions {
  state: ListedState;
  /** Lowest due time (scheduled) or lease deadline (in flight) listed, epoch ms. Default: none. */
  from?: number;
  /** Highest due time (scheduled) or lease deadline (in flight) listed, epoch ms. Default: none. */
  to?: number;
  /** Most jobs on the page, 1 to {@link MAX_LIST_LIMIT}. Default 100. */
  limit?: number;
  /** Where the previous page ended (its `next`). Default: the start. */
  after?: ListPosition;
  /** Include payloads; a page then also ends once its records pass {@link LIST_PAGE_BYTES}. Default false. */
  payload?: boolean;
}

/** Most jobs one call of a bulk cancel takes: about 2 ms of Redis time for small payloads (test/workers/queue/bounded-calls.test.ts). */
export const BULK_CANCEL_BATCH = 250;

/** A bulk cancel's call stops once the records it read pass this many bytes, so a call stays short whatever the payloads. */
export const BULK_CALL_BYTES = 1_048_576;

/** Most dead letters one call of a replay, purge or migration looks at: about 3 ms of Redis time for small payloads (bounded-calls.test.ts). */
export const DEAD_BATCH = 250;

/** Which dead letters a bulk replay or purge takes. */
export interface DeadFilter {
  /** Earliest failed time, epoch ms. Default: none. */
  failedFrom?: number;
  /** Latest failed time, epoch ms. Default: none. */
  failedTo?: number;
  /** Only letters whose last error holds this text (case-sensitive). Default: any. */
  errorContains?: string;
}

function walkArgs(o: DeadFilter & { after?: ListPosition }): Array<string | number> {
  return [
    o.failedFrom === undefined ? "-inf" : Math.round(o.failedFrom),
    o.failedTo === undefined ? "+inf" : Math.round(o.failedTo),
    o.after ? Math.round(o.after.score) : "",
    o.after?.id ?? "",
    o.errorContains ?? "",
  ];
}

/** Most jobs one listing page holds. */
export const MAX_LIST_LIMIT = 1_000;

/** With payloads, a listing page ends once its records pass this many bytes (it always holds one job). */
export const LIST_PAGE_BYTES = 1_048_576;

export interface TopicStats {
  topic: string;
  settings: TopicSettings;
  scheduled: number;
  ready: number;
  inflight: number;
  dead: number;
  /** Due time of the oldest job that is ready now, or null. */
  oldestReadyDueAt: number | null;
  /** Attempts started (claimed), and attempts that ended in each way; `dead` counts jobs dead-lettered. */
  counters: { dispatched: number; succeeded: number; retried: number; dead: number };
  /** All-time outcome counters and lateness / handler duration histograms. */
  metrics: MetricsSnapshot;
}

/** One minute of a topic's series. */
export interface SeriesPoint {
  /** Start of the minute, epoch ms. */
  at: number;
  /** What settled during the minute; null when nothing did. */
  metrics: MetricsSnapshot | null;
  /** The backlog the tick saw during the minute; null when no tick sampled it. */
  backlog: { scheduled: number; ready: number; inflight: number } | null;
}

/** What the running (or last) tick loop reports about itself. */
export interface TickStatus {
  /** The invocation's scheduled time (its minute), epoch ms. */
  startedAt: number;
  /** When this status was written, epoch ms. */
  updatedAt: number;
  rounds: number;
  claimed: number;
  subrequests: number;
  budget: number;
  /** Whether the loop looks only every TICK_IDLE_PEEK_MS. */
  asleep: boolean;
  /** Why the loop ended; null while it runs. */
  ended: string | null;
}

const scheduleOf = (r: JobRecord): Pick<JobSnapshot, "scheduleId" | "scheduledFor"> =>
  r.scheduleId !== undefined && r.scheduledFor !== undefined ? { scheduleId: r.scheduleId, scheduledFor: r.scheduledFor } : {};
/** How many attempts a job's history keeps, the latest (HISTORY_LIMIT in lua/lib/records.lua). */
export const ATTEMPT_HISTORY_LIMIT = 25;

/** The error text kept with an attempt: at most this many bytes of UTF-8. */
export const ATTEMPT_ERROR_BYTES = 1_024;

/** `text` cut to at most `bytes` bytes of UTF-8, never inside a character. */
function clipUtf8(text: string, bytes: number): string {
  const encoded = new TextEncoder().encode(text);
  if (encoded.length <= bytes) return text;
  let end = bytes;
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(encoded.subarray(0, end));
}

/** Largest batch for enqueue, claim and settle: keeps every Lua unpack() well inside its limits. */
export const MAX_BATCH = 1_000;

// Topics this isolate has registered already, and when: only the first
// enqueue per topic (per REGISTERED_TTL_MS) pays the registration and its
// cap check, which keeps a single enqueue at three commands.
const registered = new Map<string, Map<string, number>>();

/**
 * delayline's queue: every state change of a job is one Lua script, so no
 * interleaving of producers, ticks and consumers can lose or duplicate a job.
 */
export class Queue {
  readonly keys: Keys;
  /** The deployment's recurring schedules. */
  readonly schedules: Schedules;
  /** Whether Redis answers, and the tick's heartbeat. */
  readonly health: Health;
  private readonly redis: Redis;
  private readonly defaults: TopicDefaults;
  private readonly retentionMs: number;
  private readonly deadLetterCap: number;
  private readonly idempotencyWindowMs: number;
  private readonly reapLimit: number;
  private readonly maxTopics: number;
  private readonly now: () => number;

  constructor(options: QueueOptions) {
    this.redis = options.redis;
    this.keys = new Keys(options.prefix);
    this.defaults = { ...DEFAULT_TOPIC_DEFAULTS, ...options.defaults };
    this.retentionMs = options.retentionMs ?? 3_600_000;
    this.deadLetterCap = options.deadLetterCap ?? 10_000;
    this.idempotencyWindowMs = options.idempotencyWindowMs ?? 86_400_000;
    this.reapLimit = options.reapLimit ?? 100;
    this.maxTopics = options.maxTopics ?? 10_000;
    this.now = options.now ?? Date.now;
    this.schedules = new Schedules(this.redis, this.keys, this.maxTopics);
    this.health = new Health(this.redis, this.keys);
  }

  private doneKeys(now: number): { current: string; previous: string } {
    return {
      current: this.keys.done(now, this.retentionMs),
      previous: this.keys.done(now - this.retentionMs, this.retentionMs),
    };
  }

  /** A done bucket must outlive its last write by a whole retention window. */
  private get doneTtlMs(): number {
    return 2 * this.retentionMs;
  }

  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    return (await this.enqueueBatch([input]))[0]!;
  }

  /** Enqueues up to {@link MAX_BATCH} jobs in one atomic call, in order. */
  async enqueueBatch(inputs: EnqueueInput[]): Promise<EnqueueResult[]> {
    if (inputs.length === 0) return [];
    if (inputs.length > MAX_BATCH) throw new RangeError(`a batch holds at most ${MAX_BATCH} jobs`);
    const now = this.now();
    let seen = registered.get(this.keys.prefix);
    if (!seen) {
      seen = new Map();
      registered.set(this.keys.prefix, seen);
    }
    const isRegistered = (topic: string) => (seen.get(topic) ?? -Infinity) > now - REGISTERED_TTL_MS;
    const keys = [this.keys.jobs, this.keys.topics, this.keys.topicIndex];
    const args: Array<string | number> = [inputs.length, this.idempotencyWindowMs, this.maxTopics];
    const planned: Array<{ topic: string }> = [];
    const newTopics = new Set<string>();
    const jobs: Array<{ id: string; dueAt: number; record: string; topic: string }> = [];
    for (const input of inputs) {
      const id = newJobId(input.topic, now);
      const dueAt = input.runAt !== undefined ? Math.max(now, Math.round(input.runAt)) : now + Math.max(0, Math.round(input.delayMs ?? 0));
      const record: JobRecord = { payload: input.payload, createdAt: now };
      if (input.maxAttempts !== undefined) record.maxAttempts = input.maxAttempts;
      if (input.backoff !== undefined) record.backoff = input.backoff;
      if (input.target !== undefined) record.target = input.target;
      if (input.timeoutMs !== undefined) record.timeoutMs = input.timeoutMs;
      if (input.idempotencyKey !== undefined) record.idempotencyKey = input.idempotencyKey;
      const due = this.keys.topic(input.topic).due;
      keys.push(due, input.idempotencyKey !== undefined ? this.keys.idempotency(input.topic, input.idempotencyKey) : due);
      let flags = input.idempotencyKey !== undefined ? "i" : "-";
      if (!isRegistered(input.topic)) {
        flags += "r";
        newTopics.add(input.topic);
      }
      jobs.push({ id, dueAt, record: JSON.stringify(record), topic: input.topic });
      args.push(id, dueAt, jobs[jobs.length - 1]!.record, input.topic, flags);
      planned.push({ topic: input.topic });
    }
    const only = jobs[0]!;
    if (inputs.length === 1 && inputs[0]!.idempotencyKey === undefined && newTopics.size === 0) {
      // The steady-traffic path: three commands in one request, no script.
      // The order makes it safe without one: the record exists before its id
      // is due, and the id is due before the topic index hears of it, so a
      // claim between two of the commands either misses the job (and the
      // index then still leads to it) or takes it (and the index entry that
      // follows is merely early, which costs one empty claim).
      const t = this.keys.topic(only.topic);
      await redisCall(() =>
        pipeline(this.redis, [
          ["hset", this.keys.jobs, only.id, only.record],
          ["zadd", t.due, only.dueAt, only.id],
          ["zadd", this.keys.topicIndex, "lt", only.dueAt, only.topic],
        ]),
      );
      return [{ id: only.id, topic: only.topic, dueAt: only.dueAt, deduplicated: false }];
    }
    const reply = replies.enqueue.parse(await runScript(this.redis, lua.enqueue, keys, args));
    if (reply.result === "topic-limit") throw new TopicLimitError(reply.count, reply.limit);
    for (const t of newTopics) seen.set(t, now);
    return planned.map((p, i) => ({ ...reply.jobs[i]!, topic: p.topic }));
  }

  /**
   * Reaps expired leases, then leases up to `max` due jobs of `topic` for
   * `leaseMs`, within the topic's rate limit and concurrency.
   */
  async claim(
    topic: string,
    options: {
      max: number;
      /** Default the topic's timeoutMs plus 30 s. */
      leaseMs?: number;
      now?: number;
      /** Default "push" (the tick). */
      mode?: ClaimMode;
      /**
       * Push claims of a topic with neither a rate limit nor a concurrency
       * limit also take jobs due up to this long from `now`, each leased from
       * its due time; the caller starts each at its `dueAt`. Default 0.
       */
      leadMs?: number;
    },
  ): Promise<ClaimResult> {
    const max = Math.min(Math.max(0, Math.floor(options.max)), MAX_BATCH);
    const now = options.now ?? this.now();
    const mode = options.mode ?? "push";
    const t = this.keys.topic(topic);
    const raw = await runScript(
      this.redis,
      lua.claim,
      [
        t.due,
        t.lease,
        this.keys.jobs,
        this.keys.meta,
        t.conf,
        t.bucket,
        t.metrics,
        t.deadAt,
        this.keys.done(now, this.retentionMs),
        this.keys.topicIndex,
        t.deadEntries,
      ],
      [
        now,
        max,
        options.leaseMs ?? "",
        Math.floor(Math.random() * 2 ** 31),
        this.defaults.maxAttempts,
        JSON.stringify(this.defaults.backoff),
        this.deadLetterCap,
        this.doneTtlMs,
        this.reapLimit,
        topic,
        mode,
        this.defaults.timeoutMs,
        LEASE_MARGIN_MS,
        Math.max(0, Math.floor(options.leadMs ?? 0)),
      ],
    );
    const { jobs, leaseDeadline, conf, ...rest } = replies.claim.parse(raw);
    return {
      // A job taken ahead is leased from its due time.
      jobs: jobs.map((j): ClaimedJob => ({ ...j, topic, leaseExpiresAt: leaseDeadline + Math.max(0, j.dueAt - now) })),
      ...rest,
      topic: mode === "push" && rest.heldBy !== "mode" ? decodeTopicConf(conf, this.defaults) : null,
    };
  }

  /**
   * Settles a chunk of one topic's claimed jobs; each result says whether it
   * applied or was stale. The chunk's outcomes and observations go into the
   * topic's metrics in the same call.
   */
  async settle(
    topic: string,
    outcomes: Outcome[],
    options: {
      now?: number;
      /**
       * What the topic index learns: "retries" each retry's time (the tick's
       * settles; the default), "due" the topic's earliest due job (a topic
       * with a concurrency limit, whose freed slots let ready jobs start),
       * "none" nothing (pull consumers: pull topics are not indexed).
       */
      index?: "retries" | "due" | "none";
    } = {},
  ): Promise<Array<{ id: string; applied: boolean }>> {
    if (outcomes.length === 0) return [];
    if (outcomes.length > MAX_BATCH) throw new RangeError(`settle at most ${MAX_BATCH} outcomes at once`);
    const now = options.now ?? this.now();
    const t = this.keys.topic(topic);
    const observed = observationVector(outcomes.flatMap((o) => (o.observed ? [o.observed] : [])));
    const indexMode = { retries: "r", due: "c", none: "" }[options.index ?? "retries"];
    const args: Array<string | number> = [now, this.deadLetterCap, this.doneTtlMs, observed ? JSON.stringify(observed) : "", outcomes.length, topic, indexMode];
    for (const o of outcomes) {
      args.push(
        o.id,
        o.attempt,
        o.kind,
        o.kind === "retry" ? Math.round(o.at) : 0,
        o.kind === "ack" ? "" : clipUtf8(o.error, ATTEMPT_ERROR_BYTES),
        o.startedAt === undefined ? "" : Math.round(o.startedAt),
        o.observed === undefined ? "" : Math.max(0, Math.round(o.observed.durationMs)),
        o.httpStatus ?? "",
      );
    }
    const raw = await runScript(
      this.redis,
      lua.settle,
      [t.due, t.lease, this.keys.jobs, this.keys.meta, t.metrics, t.deadAt, this.keys.done(now, this.retentionMs), this.keys.topicIndex, t.deadEntries],
      args,
    );
    const applied = replies.settle.length(outcomes.length).parse(raw);
    return outcomes.map((o, i) => ({ id: o.id, applied: applied[i]! }));
  }

  /** Acks one claimed job by id (pull consumers). */
  async ack(id: string, attempt: number): Promise<"acked" | "stale"> {
    const topic = topicOfJobId(id);
    if (!topic) return "stale";
    const [r] = await this.settle(topic, [{ id, attempt, kind: "ack" }], { index: "none" });
    return r!.applied ? "acked" : "stale";
  }

  /**
   * Fails one claimed job by id (pull consumers): retried by its policy (or
   * at `retryAfterMs`), or dead when permanent or out of attempts.
   */
  async nack(id: string, attempt: number, failure: { error: string; retryAfterMs?: number; permanent?: boolean }): Promise<"retry" | "dead" | "stale"> {
    const topic = topicOfJobId(id);
    if (!topic) return "stale";
    const [recordText, { settings }] = await Promise.all([redisCall(() => this.redis.hget<string>(this.keys.jobs, id)), this.topicSettings(topic)]);
    if (recordText === null) return "stale";
    const record = parseRecord(recordText);
    const now = this.now();
    const decision = decideAfterFailure({
      attempt,
      maxAttempts: record.maxAttempts ?? settings.maxAttempts,
      backoff: record.backoff ?? settings.backoff,
      now,
      ...(failure.permanent !== undefined ? { permanent: failure.permanent } : {}),
      ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
    });
    const outcome: Outcome =
      decision.kind === "retry" ? { id, attempt, kind: "retry", at: decision.at, error: failure.error } : { id, attempt, kind: "dead", error: failure.error };
    const [r] = await this.settle(topic, [outcome], { now, index: "none" });
    return r!.applied ? decision.kind : "stale";
  }

  /** Cancels a scheduled job. */
  async cancel(id: string): Promise<"cancelled" | "not-found" | "inflight"> {
    const topic = topicOfJobId(id);
    if (!topic) return "not-found";
    const t = this.keys.topic(topic);
    const now = this.now();
    return replies.cancel.parse(
      await runScript(
        this.redis,
        lua.cancel,
        [t.due, t.lease, this.keys.jobs, this.keys.meta, this.keys.done(now, this.retentionMs)],
        [id, now, this.doneTtlMs],
      ),
    );
  }

  /**
   * Cancels the scheduled jobs of a due window (every scheduled job without
   * one), at most {@link BULK_CANCEL_BATCH} (fewer with large payloads) per
   * call, in due order: pass `next` back as `after` until it is null. Jobs in
   * flight are left alone; `inflight` says how many the topic has. Each
   * cancelled job stays readable as "cancelled" for the retention window.
   */
  async cancelWindow(
    topic: string,
    options: {
      /** Lowest due time cancelled, epoch ms. Default: none. */
      dueFrom?: number;
      /** Highest due time cancelled, epoch ms. Default: none. */
      dueTo?: number;
      /** Where the previous call stopped. Default: the window's start. */
      after?: ListPosition;
    } = {},
  ): Promise<{ cancelled: number; inflight: number; next: ListPosition | null }> {
    const t = this.keys.topic(topic);
    const now = this.now();
    const raw = await runScript(
      this.redis,
      lua.cancelJobs,
      [t.due, t.lease, this.keys.jobs, this.keys.meta, this.keys.done(now, this.retentionMs)],
      [
        now,
        this.doneTtlMs,
        "window",
        options.dueFrom === undefined ? "-inf" : Math.round(options.dueFrom),
        options.dueTo === undefined ? "+inf" : Math.round(options.dueTo),
        options.after ? Math.round(options.after.score) : "",
        options.after?.id ?? "",
        BULK_CANCEL_BATCH,
        BULK_CALL_BYTES,
      ],
    );
    return replies.cancelJobs.window.parse(raw);
  }

  /**
   * Cancels the given jobs of a topic that are scheduled (each id once); the
   * others are counted: in flight (left alone) or not scheduled (unknown,
   * finished, another topic's). Bounded Redis calls, as {@link cancelWindow}.
   */
  async cancelIds(topic: string, ids: string[]): Promise<{ cancelled: number; inflight: number; notScheduled: number }> {
    const t = this.keys.topic(topic);
    const total = { cancelled: 0, inflight: 0, notScheduled: 0 };
    const unique = [...new Set(ids)];
    for (let at = 0; at < unique.length; ) {
      const now = this.now();
      const batch = unique.slice(at, at + BULK_CANCEL_BATCH);
      const raw = await runScript(
        this.redis,
        lua.cancelJobs,
        [t.due, t.lease, this.keys.jobs, this.keys.meta, this.keys.done(now, this.retentionMs)],
        [now, this.doneTtlMs, "ids", "-inf", "+inf", "", "", BULK_CANCEL_BATCH, BULK_CALL_BYTES, ...batch],
      );
      const r = replies.cancelJobs.ids.parse(raw);
      total.cancelled += r.cancelled;
      total.inflight += r.inflight;
      total.notScheduled += r.notScheduled;
      at += Math.max(1, r.handled);
    }
    return total;
  }

  /** Moves a scheduled job to a new due time (a time in the past means now). */
  async reschedule(id: string, dueAt: number): Promise<"rescheduled" | "not-found" | "inflight"> {
    const topic = topicOfJobId(id);
    if (!topic) return "not-found";
    const t = this.keys.topic(topic);
    const due = Math.max(this.now(), Math.round(dueAt));
    return replies.reschedule.parse(await runScript(this.redis, lua.reschedule, [t.due, t.lease, this.keys.topicIndex], [id, due, topic]));
  }

  /** Everything known about a job, or null when it is unknown or its retention ran out. */
  async get(id: string): Promise<JobSnapshot | null> {
    const topic = topicOfJobId(id);
    if (!topic) return null;
    const t = this.keys.topic(topic);
    const now = this.now();
    const done = this.doneKeys(now);
    const raw = await runScript(
      this.redis,
      lua.get,
      [t.due, t.lease, this.keys.jobs, this.keys.meta, done.current, done.previous, t.conf, t.deadEntries],
      [id],
    );
    const { record: job, meta, due, lease, done: d, topicMaxAttempts, letter: e } = replies.get.parse(raw);
    const maxAttemptsOf = (r: JobRecord) => r.maxAttempts ?? topicMaxAttempts ?? this.defaults.maxAttempts;
    if (job) {
      const m = meta ?? { a: 0, e: null, d: undefined, h: undefined };
      const view: JobSnapshot = {
        id,
        topic,
        state: lease !== null ? "inflight" : "scheduled",
        dueAt: lease !== null ? (m.d ?? null) : due,
        attempts: m.a,
        maxAttempts: maxAttemptsOf(job),
        lastError: m.e ?? null,
        createdAt: job.createdAt,
        payload: job.payload,
        ...scheduleOf(job),
        history: m.h ?? [],
      };
      if (lease !== null) view.leaseExpiresAt = lease;
      return view;
    }
    if (!d && e) {
      // Past the retention window, a dead job is still known by its dead letter.
      return {
        id,
        topic,
        state: "dead",
        dueAt: null,
        attempts: e.attempts,
        maxAttempts: maxAttemptsOf(e.job),
        lastError: e.lastError,
        createdAt: e.job.createdAt,
        payload: e.job.payload,
        finishedAt: e.failedAt,
        history: e.history,
      };
    }
    if (!d) return null;
    if (now - d.finishedAt > this.retentionMs) return null;
    return {
      id,
      topic,
      state: d.state,
      dueAt: null,
      attempts: d.attempts,
      maxAttempts: maxAttemptsOf(d.job),
      lastError: d.lastError,
      createdAt: d.job.createdAt,
      payload: d.job.payload,
      finishedAt: d.finishedAt,
      ...scheduleOf(d.job),
      history: d.history,
    };
  }

  /**
   * A page of a topic's scheduled jobs in due order, or of its jobs in flight
   * in lease-deadline order (ties in id order, which is enqueue order).
   * `next` is where the page ended; passed back as `after`, it starts the
   * next page right after that job, so jobs enqueued, claimed or cancelled
   * meanwhile never make a page repeat or skip one that stays listed. One
   * command per call plus a few per page, however large the set.
   */
  async listJobs(topic: string, options: ListJobsOptions): Promise<{ jobs: ListedJob[]; next: ListPosition | null }> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit ?? 100)), MAX_LIST_LIMIT);
    const t = this.keys.topic(topic);
    const set = options.state === "scheduled" ? t.due : t.lease;
    const raw = await runScript(
      this.redis,
      lua.listJobs,
      [set, this.keys.jobs, this.keys.meta],
      [
        options.after ? Math.round(options.after.score) : "",
        options.after?.id ?? "",
        options.from === undefined ? "-inf" : Math.round(options.from),
        options.to === undefined ? "+inf" : Math.round(options.to),
        limit,
        options.payload ? "1" : "0",
        LIST_PAGE_BYTES,
      ],
    );
    const page = replies.listJobs.parse(raw);
    const jobs: ListedJob[] = [];
    for (const { id, score, meta, record } of page.jobs) {
      const inflight = options.state === "inflight";
      const job: ListedJob = {
        id,
        topic,
        state: options.state,
        dueAt: inflight ? (meta?.d ?? null) : score,
        attempts: meta?.a ?? 0,
        lastError: meta?.e ?? null,
        createdAt: record?.createdAt ?? createdAtOfJobId(id) ?? 0,
      };
      if (inflight) job.leaseExpiresAt = score;
      if (options.payload) job.payload = record?.payload ?? null;
      if (record) Object.assign(job, scheduleOf(record));
      jobs.push(job);
    }
    const last = page.jobs.at(-1);
    return { jobs, next: page.more && last ? { score: last.score, id: last.id } : null };
  }

  /** Moves a topic's dead letters of earlier versions (a list) to where they are kept now, a bounded batch per call. */
  private async migrateDead(topic: string): Promise<void> {
    const t = this.keys.topic(topic);
    while (replies.migrateDead.parse(await runScript(this.redis, lua.migrateDead, [t.deadLegacy, t.deadAt, t.deadEntries], [DEAD_BATCH])) > 0);
  }

  /**
   * A page of a topic's dead letters, newest first (ties by id), optionally
   * within a failed-time window. `next` is where the page ended; passed back
   * as `after` it starts the next page right after that letter, so letters
   * that arrive, are replayed, deleted or trimmed meanwhile never make a page
   * repeat or skip one that stays.
   */
  async deadLetters(
    topic: string,
    options: {
      /** Letters on the page, 1 to {@link MAX_LIST_LIMIT}. Default 50. */
      limit?: number;
      /** Where the previous page ended. Default: the newest letter. */
      after?: ListPosition;
      /** Earliest failed time listed, epoch ms. Default: none. */
      failedFrom?: number;
      /** Latest failed time listed, epoch ms. Default: none. */
      failedTo?: number;
    } = {},
  ): Promise<{ entries: DeadEntry[]; next: ListPosition | null }> {
    await this.migrateDead(topic);
    const t = this.keys.topic(topic);
    const limit = Math.min(Math.max(1, Math.floor(options.limit ?? 50)), MAX_LIST_LIMIT);
    const raw = await runScript(
      this.redis,
      lua.listDead,
      [t.deadAt, t.deadEntries],
      [
        options.after ? Math.round(options.after.score) : "",
        options.after?.id ?? "",
        options.failedFrom === undefined ? "-inf" : Math.round(options.failedFrom),
        options.failedTo === undefined ? "+inf" : Math.round(options.failedTo),
        limit,
        LIST_PAGE_BYTES,
      ],
    );
    const page = replies.listDead.parse(raw);
    const last = page.letters.at(-1);
    return {
      entries: page.letters.flatMap((l) => (l.entry ? [l.entry] : [])),
      next: page.more && last ? { score: last.score, id: last.id } : null,
    };
  }

  /** One dead letter by id, or null when the topic holds none for it. */
  async deadLetter(id: string): Promise<DeadEntry | null> {
    const topic = topicOfJobId(id);
    if (!topic) return null;
    await this.migrateDead(topic);
    const raw = await redisCall(() => this.redis.hget<string>(this.keys.topic(topic).deadEntries, id));
    return raw === null ? null : deadEntrySchema.parse(typeof raw === "string" ? JSON.parse(raw) : raw);
  }

  /**
   * Puts the given dead jobs back on the schedule with fresh attempts (their
   * attempt history kept), each due at `dueAt` plus a random share of
   * `spreadMs`. Returns how many, and which of the given ids are not dead
   * letters of the topic (each once). Bounded Redis calls of
   * {@link DEAD_BATCH} letters (fewer with large payloads) each.
   */
  async replayDead(topic: string, options: { ids: string[]; dueAt?: number; spreadMs?: number }): Promise<{ replayed: number; notFound: string[] }> {
    await this.migrateDead(topic);
    const unique = [...new Set(options.ids)];
    const total = { replayed: 0, notFound: [] as string[] };
    for (let at = 0; at < unique.length; ) {
      const r = replies.replayDead.ids.parse(
        await runScript(this.redis, lua.replayDead, this.replayKeys(topic), [...this.replayArgs(topic, options, "ids"), ...unique.slice(at, at + DEAD_BATCH)]),
      );
      total.replayed += r.replayed;
      total.notFound.push(...r.notFound);
      at += Math.max(1, r.handled);
    }
    return total;
  }

  /**
   * One bounded step of replaying a topic's dead letters, oldest first: those
   * within a failed-time window whose error holds `errorContains` (every
   * letter without filters). Pass `next` back as `after` until it is null.
   * At most {@link DEAD_BATCH} letters are looked at per call (fewer with
   * large payloads), so no call holds Redis for long.
   */
  async replayDeadStep(
    topic: string,
    options: DeadFilter & { after?: ListPosition; dueAt?: number; spreadMs?: number } = {},
  ): Promise<{ replayed: number; next: ListPosition | null }> {
    await this.migrateDead(topic);
    const raw = await runScript(this.redis, lua.replayDead, this.replayKeys(topic), [...this.replayArgs(topic, options, "walk"), ...walkArgs(options)]);
    const { count, next } = replies.replayDead.walk.parse(raw);
    return { replayed: count, next };
  }

  private replayKeys(topic: string): string[] {
    const t = this.keys.topic(topic);
    return [t.deadAt, t.deadEntries, t.due, this.keys.jobs, this.keys.meta, this.keys.topicIndex];
  }

  private replayArgs(topic: string, options: { dueAt?: number; spreadMs?: number }, mode: "ids" | "walk"): Array<string | number> {
    const due = Math.max(this.now(), Math.round(options.dueAt ?? 0));
    return [due, Math.max(0, Math.round(options.spreadMs ?? 0)), Math.floor(Math.random() * 2 ** 31), topic, DEAD_BATCH, BULK_CALL_BYTES, mode];
  }

  /** One bounded step of dropping a topic's dead letters, as {@link replayDeadStep} walks them. */
  async purgeDeadStep(topic: string, options: DeadFilter & { after?: ListPosition } = {}): Promise<{ purged: number; next: ListPosition | null }> {
    await this.migrateDead(topic);
    const t = this.keys.topic(topic);
    const raw = await runScript(this.redis, lua.purgeDead, [t.deadAt, t.deadEntries], [DEAD_BATCH, BULK_CALL_BYTES, "walk", ...walkArgs(options)]);
    const { count, next } = replies.purgeDead.walk.parse(raw);
    return { purged: count, next };
  }

  /** Replays every dead letter a filter picks (all without one), step after bounded step; returns how many. */
  async replayDeadMatching(topic: string, options: DeadFilter & { dueAt?: number; spreadMs?: number } = {}): Promise<number> {
    let replayed = 0;
    let after: ListPosition | undefined;
    for (;;) {
      const r = await this.replayDeadStep(topic, { ...options, ...(after ? { after } : {}) });
      replayed += r.replayed;
      if (!r.next) return replayed;
      after = r.next;
    }
  }

  /** Drops every dead letter a filter picks (all without one), step after bounded step; returns how many. */
  async purgeDead(topic: string, filter: DeadFilter = {}): Promise<number> {
    let purged = 0;
    let after: ListPosition | undefined;
    for (;;) {
      const r = await this.purgeDeadStep(topic, { ...filter, ...(after ? { after } : {}) });
      purged += r.purged;
      if (!r.next) return purged;
      after = r.next;
    }
  }

  /** Drops one dead letter; false when the topic holds none for that id. */
  async deleteDead(topic: string, id: string): Promise<boolean> {
    await this.migrateDead(topic);
    const t = this.keys.topic(topic);
    return replies.purgeDead.ids.parse(await runScript(this.redis, lua.purgeDead, [t.deadAt, t.deadEntries], [1, BULK_CALL_BYTES, "ids", id])) === 1;
  }

  /** Changes a topic's settings (null clears a field back to its default) and registers it. */
  async configureTopic(topic: string, patch: TopicPatch): Promise<void> {
    const t = this.keys.topic(topic);
    const { set, clear } = encodeTopicPatch(patch);
    const result = replies.configureTopic.parse(
      await runScript(
        this.redis,
        lua.configureTopic,
        [t.conf, this.keys.topics, t.bucket, this.keys.topicIndex, this.keys.parked, t.due, t.lease],
        [topic, this.maxTopics, set.length, ...set.flat(), ...clear],
      ),
    );
    if (result === "topic-limit") throw new TopicLimitError(await this.topicCount(), this.maxTopics);
  }

  /** How many topics the registry holds. */
  async topicCount(): Promise<number> {
    return intReply.parse(await redisCall(() => this.redis.scard(this.keys.topics)));
  }

  /**
   * Deletes a topic that holds nothing: no job in flight, and — unless
   * `purge` — no scheduled job and no dead letter. With `purge`, its
   * scheduled jobs and dead letters go too, a bounded batch per Redis call.
   */
  async deleteTopic(
    topic: string,
    options: { purge?: boolean } = {},
  ): Promise<
    | { result: "deleted"; purged: { scheduled: number; dead: number } }
    | { result: "inflight"; scheduled: number; inflight: number; dead: number }
    | { result: "not-empty"; scheduled: number; inflight: number; dead: number }
  > {
    const t = this.keys.topic(topic);
    const keys = [
      t.due,
      t.lease,
      t.deadAt,
      t.conf,
      t.bucket,
      t.metrics,
      this.keys.jobs,
      this.keys.meta,
      this.keys.topics,
      this.keys.topicIndex,
      this.keys.parked,
      t.deadEntries,
      t.deadLegacy,
    ];
    const purged = { scheduled: 0, dead: 0 };
    for (;;) {
      const r = replies.deleteTopic.parse(await runScript(this.redis, lua.deleteTopic, keys, [topic, options.purge ? "1" : "0", PURGE_BATCH]));
      purged.scheduled += r.dropped;
      purged.dead += r.droppedDead;
      if (r.result === "deleted") {
        registered.get(this.keys.prefix)?.delete(topic);
        return { result: "deleted", purged };
      }
      if (r.result !== "purging") return { result: r.result, scheduled: r.scheduled, inflight: r.inflight, dead: r.dead };
    }
  }

  /** A topic's settings with defaults applied, and its secrets (for signing and verifying only). */
  async topicSettings(topic: string): Promise<{ settings: TopicSettings; secrets: TopicSecrets }> {
    // Without automatic deserialization HGETALL arrives as Redis sends it: a flat field/value array.
    const raw: unknown = await redisCall(() => this.redis.hgetall(this.keys.topic(topic).conf));
    return decodeTopicConf(flatHash.parse(raw ?? []), this.defaults);
  }

  /** Settings, backlog and counters of one topic, read in one consistent snapshot. */
  async topicStats(topic: string): Promise<TopicStats> {
    const t = this.keys.topic(topic);
    const now = this.now();
    const raw = await runScript(this.redis, lua.topicStats, [t.due, t.lease, t.deadAt, t.conf, t.metrics, t.deadLegacy], [now]);
    const { scheduled, ready, inflight, dead, conf, dispatched, total, oldest } = replies.topicStats.parse(raw);
    const metrics = snapshotOf(total);
    return {
      topic,
      settings: decodeTopicConf(conf, this.defaults).settings,
      scheduled,
      ready,
      inflight,
      dead,
      oldestReadyDueAt: ready > 0 && oldest !== null ? Number(oldest) : null,
      counters: { dispatched: Number(dispatched ?? 0), succeeded: metrics.succeeded, retried: metrics.retried, dead: metrics.dead },
      metrics,
    };
  }

  /**
   * The last `minutes` minutes (at most 1,440) of a topic's per-minute
   * series, oldest first, ending with the minute holding `now`. One command.
   */
  async topicSeries(topic: string, options: { minutes: number; now?: number }): Promise<SeriesPoint[]> {
    const minutes = Math.min(Math.max(1, Math.floor(options.minutes)), SERIES_MINUTES);
    const last = Math.floor((options.now ?? this.now()) / 60_000);
    const wanted = Array.from({ length: minutes }, (_, i) => last - minutes + 1 + i);
    const fields = wanted.flatMap((m) => [`m${m % SERIES_MINUTES}`, `g${m % SERIES_MINUTES}`]);
    const raw = await redisCall(() => this.redis.hmget(this.keys.topic(topic).metrics, ...fields));
    // Without automatic deserialization HMGET arrives as an array of values (or null when no field exists).
    const values = z.array(nullableString).nullable().parse(raw) ?? [];
    // A slot holding another minute is from an earlier day: read it as empty.
    const ofMinute = (text: string | null | undefined, minute: number) => {
      if (!text) return null;
      const v = vectorText.parse(text);
      return v[0] === minute ? v.slice(1) : null;
    };
    return wanted.map((minute, i) => {
      const m = ofMinute(values[2 * i], minute);
      const g = ofMinute(values[2 * i + 1], minute);
      return {
        at: minute * 60_000,
        metrics: m ? snapshotOf(m) : null,
        backlog: g ? { scheduled: g[0] ?? 0, ready: g[1] ?? 0, inflight: g[2] ?? 0 } : null,
      };
    });
  }

  /** What the running (or last) tick loop reported about itself, or null when none has. */
  async tickStatus(): Promise<TickStatus | null> {
    const raw = await redisCall(() => this.redis.get<string>(this.keys.tickStatus));
    return raw === null ? null : tickStatusSchema.parse(JSON.parse(raw));
  }

  /**
   * The tick's poll: the topics whose work is due (at most `limit`, earliest
   * first) and when the next one falls due, from the head of the topic
   * index — one command however many topics exist. With `renewLock`, the
   * tick lock is renewed in the same call; the sleep mark, the status and
   * the per-minute backlog samples ride along the same way.
   */
  async peek(options: {
    now: number;
    /** Most due topics to return. */
    limit: number;
    renewLock?: { token: string; ttlMs: number };
    /** Set the sleep mark for this many ms, or clear it ("clear"); leave it when unset. */
    sleepMark?: number | "clear";
    /** Record the tick's status. */
    status?: TickStatus;
    /** Sample these topics' backlogs into the per-minute series for the minute holding `at` (epoch ms). */
    sample?: { at: number; topics: string[] };
    /** List what to sample next: the first this-many topics of the index and every parked (pull or paused) topic. */
    listToSample?: number;
  }): Promise<{
    lockHeld: boolean;
    due: Array<{ topic: string; at: number }>;
    /** A schedule's next occurrence has come (see Schedules.fire). */
    schedulesDue: boolean;
    more: boolean;
    nextAt: number | null;
    toSample: string[];
  }> {
    const keys = [
      this.keys.topicIndex,
      this.keys.tickLock,
      this.keys.tickAsleep,
      this.keys.tickStatus,
      this.keys.parked,
      ...(options.sample?.topics ?? []).flatMap((t) => {
        const k = this.keys.topic(t);
        return [k.due, k.lease, k.metrics];
      }),
    ];
    const mark = options.sleepMark === undefined ? "" : options.sleepMark === "clear" ? "-" : String(options.sleepMark);
    const args = [
      options.renewLock?.token ?? "",
      options.renewLock?.ttlMs ?? 0,
      mark,
      options.status ? JSON.stringify(options.status) : "",
      options.sample ? Math.floor(options.sample.at / 60_000) : "",
      options.now,
      Math.max(1, Math.floor(options.limit)),
      options.listToSample ? "1" : "0",
      options.listToSample ?? 0,
    ];
    return replies.peek.parse(await runScript(this.redis, lua.peek, keys, args));
  }

  /** Whether the tick has said it sleeps longer than its poll interval (producers then wake jobs due soon themselves). */
  async tickAsleep(): Promise<boolean> {
    return (await redisCall(() => this.redis.exists(this.keys.tickAsleep))) === 1;
  }

  /** Every registered topic, sorted by name. */
  async listTopics(): Promise<string[]> {
    const members = z.array(z.string()).parse(await redisCall(() => this.redis.smembers(this.keys.topics)));
    return members.sort();
  }
}

const tickStatusSchema = z.object({
  startedAt: z.number(),
  updatedAt: z.number(),
  rounds: z.number(),
  claimed: z.number(),
  subrequests: z.number(),
  budget: z.number(),
  asleep: z.boolean(),
  ended: z.string().nullable(),
}) satisfies z.ZodType<TickStatus>;
