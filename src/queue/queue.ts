import { QueueContext, type QueueOptions } from "./context.js";
import * as deadEdits from "./dead-edits.js";
import * as deadLetters from "./dead-letters.js";
import { DryRuns } from "./dry-runs.js";
import * as flowKeys from "./flow-keys.js";
import { Health } from "./health.js";
import * as limitErrors from "./limit-errors.js";
import type { RedisLimit } from "./errors.js";
import * as jobChanges from "./job-changes.js";
import * as jobReads from "./job-reads.js";
import * as claims from "./claims.js";
import * as jobs from "./jobs.js";
import type { Keys } from "./keys.js";
import { Schedules } from "./schedules.js";
import * as tickState from "./tick-state.js";
import * as topicAdmin from "./topic-admin.js";
import * as upserts from "./upserts.js";
import type { TopicPatch, TopicSecrets, TopicSettings } from "./topics.js";
import type { DeadEntry, JobRecord } from "./types.js";
import type {
  CancelWindowOptions,
  ClaimOptions,
  ClaimResult,
  DeadFilter,
  DeadLettersOptions,
  DeleteTopicResult,
  EnqueueInput,
  EnqueueResult,
  JobSnapshot,
  LeaseExtension,
  ListedJob,
  ListJobsOptions,
  ListPosition,
  NackFailure,
  Outcome,
  SeriesPoint,
  SettleOptions,
  TopicPage,
  TopicPageOptions,
  TopicStats,
  UpsertInput,
  UpsertResult,
} from "./views.js";
import type { PeekOptions, PeekResult, TickLook, TickSleep, TickStatus } from "./tick-views.js";

// The queue's entry: the Queue class, and under the names they have always
// had here, its options, views, limits and errors. The work is done by one
// module per concern (jobs, job-changes, job-reads, dead-letters,
// topic-admin, tick-state), all on the Queue's QueueContext.

// MAX_BATCH, MAX_LIST_LIMIT, LIST_PAGE_BYTES, the bulk batches and the attempt-history bounds.
export * from "./bounds.js";
export type { QueueOptions } from "./context.js";
export { RequestTooLargeError, TopicLimitError } from "./errors.js";
export type * from "./views.js";
export type * from "./tick-views.js";

/**
 * delayline's queue: every state change of a job is one Lua script, so no
 * interleaving of producers, ticks and consumers can lose or duplicate a job.
 */
export class Queue {
  readonly keys: Keys;
  /** The shard these keys are (`main` unless the options name another). */
  readonly shard: string;
  /** The deployment's recurring schedules. */
  readonly schedules: Schedules;
  /** Whether Redis answers, and the tick's heartbeat. */
  readonly health: Health;
  /** What a bulk cancel, replay or purge would touch, by reads alone. */
  readonly dryRun: DryRuns;
  private readonly ctx: QueueContext;

  constructor(options: QueueOptions) {
    this.ctx = new QueueContext(options);
    this.keys = this.ctx.keys;
    this.shard = this.ctx.shard;
    this.schedules = new Schedules(this.ctx.redis, this.keys, this.ctx.maxTopics, this.ctx.requestBudgetBytes, this.ctx.shard);
    this.health = new Health(this.ctx.redis, this.keys);
    this.dryRun = new DryRuns(this.ctx);
  }

  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    return (await this.enqueueBatch([input]))[0]!;
  }

  /** Enqueues up to {@link MAX_BATCH} jobs in one atomic call, in order. */
  enqueueBatch(inputs: EnqueueInput[]): Promise<EnqueueResult[]> {
    return jobs.enqueueBatch(this.ctx, inputs);
  }

  /**
   * Stores a job under a job key, in one script call after a read of the
   * key's pointer: a new job when the key is free or its job in flight, else
   * a change to the key's pending job as `onConflict` says (see {@link UpsertInput}).
   */
  upsert(input: UpsertInput): Promise<UpsertResult> {
    return upserts.upsert(this.ctx, input);
  }

  /**
   * Reaps expired leases, then leases up to `max` due jobs of `topic` for
   * `leaseMs`, within the topic's rate limit and concurrency.
   */
  claim(topic: string, options: ClaimOptions): Promise<ClaimResult> {
    return claims.claim(this.ctx, topic, options);
  }

  /**
   * Settles a chunk of one topic's claimed jobs; each result says whether it
   * applied or was stale. The chunk's outcomes and observations go into the
   * topic's metrics in the same call.
   */
  settle(topic: string, outcomes: Outcome[], options: SettleOptions = {}): Promise<Array<{ id: string; applied: boolean }>> {
    return jobs.settle(this.ctx, topic, outcomes, options);
  }

  /** Acks one claimed job by id (pull consumers). */
  ack(id: string, attempt: number): Promise<"acked" | "stale"> {
    return jobs.ack(this.ctx, id, attempt);
  }

  /**
   * Fails one claimed job by id (pull consumers): retried by its policy (or
   * at `retryAfterMs`), or dead when permanent or out of attempts.
   */
  nack(id: string, attempt: number, failure: NackFailure): Promise<"retry" | "dead" | "stale"> {
    return jobs.nack(this.ctx, id, attempt, failure);
  }

  /**
   * Moves the lease of a claimed job (pull consumers) to now + `leaseMs`,
   * while it is still leased at `attempt`.
   */
  extend(id: string, attempt: number, leaseMs: number): Promise<LeaseExtension> {
    return jobs.extend(this.ctx, id, attempt, leaseMs);
  }

  /** Cancels a scheduled job. */
  cancel(id: string): Promise<"cancelled" | "not-found" | "inflight"> {
    return jobChanges.cancel(this.ctx, id);
  }

  /**
   * Cancels the scheduled jobs of a due window (every scheduled job without
   * one; with `flowKey`, that key's jobs only), keyed jobs and plain ones
   * alike, at most {@link BULK_CANCEL_BATCH} (fewer with long attempt histories) per
   * call, in due order: pass `next` back as `after` until it is null. Jobs in
   * flight are left alone; `inflight` says how many the topic has. Each
   * cancelled job stays readable as "cancelled" for the retention window.
   */
  cancelWindow(topic: string, options: CancelWindowOptions = {}): Promise<{ cancelled: number; inflight: number; next: ListPosition | null }> {
    return jobChanges.cancelWindow(this.ctx, topic, options);
  }

  /**
   * Cancels the given jobs of a topic that are scheduled (each id once); the
   * others are counted: in flight (left alone) or not scheduled (unknown,
   * finished, another topic's). Bounded Redis calls, as {@link cancelWindow}.
   */
  cancelIds(topic: string, ids: string[]): Promise<{ cancelled: number; inflight: number; notScheduled: number }> {
    return jobChanges.cancelIds(this.ctx, topic, ids);
  }

  /** Moves a scheduled job to a new due time (a time in the past means now). */
  reschedule(id: string, dueAt: number): Promise<"rescheduled" | "not-found" | "inflight"> {
    return jobChanges.reschedule(this.ctx, id, dueAt);
  }

  /** Everything known about a job, or null when it is unknown or its retention ran out. */
  get(id: string): Promise<JobSnapshot | null> {
    return jobReads.get(this.ctx, id);
  }

  /**
   * A page of a topic's scheduled jobs in due order, or of its jobs in flight
   * in lease-deadline order (ties in id order, which is enqueue order).
   * `next` is where the page ended; passed back as `after`, it starts the
   * next page right after that job, so jobs enqueued, claimed or cancelled
   * meanwhile never make a page repeat or skip one that stays listed. One
   * command per call plus a few per page, however large the set. `flowKey`
   * lists one key's jobs (see {@link ListJobsOptions.flowKey}).
   */
  listJobs(topic: string, options: ListJobsOptions): Promise<{ jobs: ListedJob[]; next: ListPosition | null }> {
    return jobReads.listJobs(this.ctx, topic, options);
  }

  /**
   * A page of a topic's dead letters, newest first (ties by id), optionally
   * within a failed-time window. `next` is where the page ended; passed back
   * as `after` it starts the next page right after that letter, so letters
   * that arrive, are replayed, deleted or trimmed meanwhile never make a page
   * repeat or skip one that stays.
   */
  deadLetters(topic: string, options: DeadLettersOptions = {}): Promise<{ entries: DeadEntry[]; next: ListPosition | null }> {
    return deadLetters.deadLetters(this.ctx, topic, options);
  }

  /** One dead letter by id, or null when the topic holds none for it. */
  deadLetter(id: string): Promise<DeadEntry | null> {
    return deadLetters.deadLetter(this.ctx, id);
  }

  /**
   * Puts the given dead jobs back on the schedule with fresh attempts (their
   * attempt history kept), each due at `dueAt` plus a random share of
   * `spreadMs`. Returns how many, and which of the given ids are not dead
   * letters of the topic (each once). Bounded Redis calls of
   * {@link DEAD_BATCH} letters (fewer with long attempt histories) each.
   */
  replayDeadLetters(topic: string, options: { ids: string[]; dueAt?: number; spreadMs?: number }): Promise<{ replayed: number; notFound: string[] }> {
    return deadLetters.replayDeadLetters(this.ctx, topic, options);
  }

  /**
   * One bounded step of replaying a topic's dead letters, oldest first: those
   * within a failed-time window whose error holds `errorContains` (every
   * letter without filters). Pass `next` back as `after` until it is null.
   * At most {@link DEAD_BATCH} letters are looked at per call (fewer with
   * long attempt histories: a call reads metas, never payloads), so no call
   * holds Redis for long.
   */
  replayDeadLettersStep(
    topic: string,
    options: DeadFilter & { after?: ListPosition; dueAt?: number; spreadMs?: number } = {},
  ): Promise<{ replayed: number; next: ListPosition | null }> {
    return deadLetters.replayDeadLettersStep(this.ctx, topic, options);
  }

  /** One bounded step of dropping a topic's dead letters, as {@link replayDeadLettersStep} walks them. */
  purgeDeadLettersStep(topic: string, options: DeadFilter & { after?: ListPosition } = {}): Promise<{ purged: number; next: ListPosition | null }> {
    return deadLetters.purgeDeadLettersStep(this.ctx, topic, options);
  }

  /** Replays every dead letter a filter picks (all without one), step after bounded step; returns how many. */
  replayDeadLettersMatching(topic: string, options: DeadFilter & { dueAt?: number; spreadMs?: number } = {}): Promise<number> {
    return deadLetters.replayDeadLettersMatching(this.ctx, topic, options);
  }

  /** Drops every dead letter a filter picks (all without one), step after bounded step; returns how many. */
  purgeDeadLetters(topic: string, filter: DeadFilter = {}): Promise<number> {
    return deadLetters.purgeDeadLetters(this.ctx, topic, filter);
  }

  /** For a replay with edits: the records of those of the topic's `ids` that are dead letters, as many as a bounded read takes (`looked`). */
  deadRecords(ids: string[]): Promise<{ letters: Array<{ id: string; record: JobRecord }>; notFound: string[]; looked: number }> {
    return deadEdits.deadRecords(this.ctx, ids);
  }

  /** For a replay with edits: new records for letters still dead ("record"), or letters finished as moved to their new jobs ("move"); answers the ids changed. */
  editDeadLetters(topic: string, mode: "record" | "move", letters: Array<{ id: string; value: string }>, changes: string[]): Promise<string[]> {
    return deadEdits.editDeadLetters(this.ctx, topic, mode, letters, changes);
  }

  /** Drops one dead letter; false when the topic holds none for that id. */
  deleteDeadLetter(topic: string, id: string): Promise<boolean> {
    return deadLetters.deleteDeadLetter(this.ctx, topic, id);
  }

  /** Changes a topic's settings (null clears a field back to its default) and registers it. */
  /** Sets a flow key's own settings over its topic's flow settings; null removes them (false: there were none). */
  setFlowKey(topic: string, key: string, settings: flowKeys.FlowKeySettings | null): Promise<boolean> {
    return flowKeys.setFlowKey(this.ctx, topic, key, settings);
  }

  /** A flow key's own settings, or null. */
  flowKeySettings(topic: string, key: string): Promise<flowKeys.FlowKeySettings | null> {
    return flowKeys.flowKeySettings(this.ctx, topic, key);
  }

  /** Each key's length: its jobs scheduled and waiting, in the order of `keys` (exact: the flow keys' index). */
  flowKeyLengths(topic: string, keys: readonly string[]): Promise<number[]> {
    return flowKeys.flowKeyLengths(this.ctx, topic, keys);
  }

  /** The topic's `n` busiest flow keys, by jobs in flight and waiting. */
  busiestFlowKeys(topic: string, n: number): Promise<flowKeys.BusyFlowKey[]> {
    return flowKeys.busiestFlowKeys(this.ctx, topic, n);
  }

  /** A page of the topic's flow keys that have settings of their own. */
  listFlowKeys(topic: string, options: { cursor?: string; limit: number }): Promise<flowKeys.FlowKeyPage> {
    return flowKeys.listFlowKeys(this.ctx, topic, options);
  }

  configureTopic(topic: string, patch: TopicPatch): Promise<void> {
    return topicAdmin.configureTopic(this.ctx, topic, patch);
  }

  /** How many topics the registry holds. */
  topicCount(): Promise<number> {
    return topicAdmin.topicCount(this.ctx);
  }

  /**
   * Deletes a topic that holds nothing: no job in flight, and — unless
   * `purge` — no scheduled job and no dead letter. With `purge`, its
   * scheduled jobs and dead letters go too, a bounded batch per Redis call.
   */
  deleteTopic(topic: string, options: { purge?: boolean } = {}): Promise<DeleteTopicResult> {
    return topicAdmin.deleteTopic(this.ctx, topic, options);
  }

  /** A topic's settings with defaults applied, and its secrets (for signing and verifying only). */
  topicSettings(topic: string): Promise<{ settings: TopicSettings; secrets: TopicSecrets }> {
    return topicAdmin.topicSettings(this.ctx, topic);
  }

  /** Settings, backlog and counters of one topic, read in one consistent snapshot. */
  topicStats(topic: string): Promise<TopicStats> {
    return topicAdmin.topicStats(this.ctx, topic);
  }

  /**
   * The last `minutes` minutes (at most 1,440) of a topic's per-minute
   * series, oldest first, ending with the minute holding `now`. One command.
   */
  topicSeries(topic: string, options: { minutes: number; now?: number }): Promise<SeriesPoint[]> {
    return topicAdmin.topicSeries(this.ctx, topic, options);
  }

  /** One page of the registered topics in name order, with how many there are in all: one bounded script call. */
  listTopicsPage(options: TopicPageOptions): Promise<TopicPage> {
    return topicAdmin.listTopicsPage(this.ctx, options);
  }

  /** Every registered topic, sorted by name (page after page: one call per 500 topics). */
  listTopics(): Promise<string[]> {
    return topicAdmin.listTopics(this.ctx);
  }

  /** How many commands Redis refused at each of its limits (stored counts and this isolate's pending ones). */
  limitErrorCounts(): Promise<Record<RedisLimit, number>> {
    return limitErrors.limitErrorCounts(this.ctx);
  }

  /** Stores the limit errors this isolate counted, when Redis takes the write; no command when none is pending (answers whether it sent one). */
  flushLimitErrors(): Promise<boolean> {
    return limitErrors.flushLimitErrors(this.ctx);
  }

  /** What the running (or last) tick loop reported about itself, or null when none has. */
  tickStatus(): Promise<TickStatus | null> {
    return tickState.tickStatus(this.ctx);
  }

  /**
   * The tick's poll: the topics whose work is due (at most `limit`, earliest
   * first) and when the next one falls due, from the head of the topic
   * index — one command however many topics exist. With `renewLock`, the
   * tick lock is renewed in the same call; the sleep mark, the status and
   * the per-minute backlog samples ride along the same way.
   */
  peek(options: PeekOptions): Promise<PeekResult> {
    return tickState.peek(this.ctx, options);
  }

  /** Whether the tick has said it sleeps longer than its poll interval (producers then wake jobs due soon themselves). */
  async tickAsleep(): Promise<boolean> {
    return (await tickState.tickSleep(this.ctx)) !== null;
  }

  /** The tick's sleep mark: how it sleeps, if it does (producers then cover jobs due before it looks). */
  tickSleep(): Promise<TickSleep> {
    return tickState.tickSleep(this.ctx);
  }

  /**
   * A cron invocation's first step: records the heartbeat at `heartbeatAt`
   * and reads whether a loop runs, the sleep mark and the topic index's
   * earliest score — one request, three commands besides the script's own.
   */
  look(heartbeatAt: number): Promise<TickLook> {
    return tickState.look(this.ctx, heartbeatAt);
  }
}
