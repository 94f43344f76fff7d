import type { MetricsSnapshot, Observation } from "./metrics.js";
import type { Backoff } from "./policy/backoff.js";
import type { TopicSecrets, TopicSettings } from "./topics.js";
import type { AttemptRecord, JobRecord, JobState, Target } from "./types.js";

// What the Queue takes and returns: the public shapes of its operations,
// named once here so that the Queue and the modules doing the work
// (jobs.ts, job-changes.ts, job-reads.ts, dead-letters.ts, topic-admin.ts,
// tick-state.ts) share them.

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
  /** A repeat of this key returns its job's id: within the idempotency window, or (`idempotencyUntil: "finished"`) while that job lives. */
  idempotencyKey?: string;
  idempotencyUntil?: "window" | "finished";
  /** Whether the topic's `contentDedupMs` applies. Default true; false for a dead letter moved into another topic. */
  contentDedup?: boolean;
  /** An ingested webhook's provider headers, kept in the record for its handler. */
  webhookHeaders?: Record<string, string>;
  /** The flow key whose turns and limits the job goes by (a tenant, a customer, a host); none: the topic's default lane. */
  flowKey?: string;
  /** 0 (default) to 9: among the due jobs of its key (or lane), a head start of priority × the topic's `flow.priorityStepMs`. */
  priority?: number;
  /** Up to {@link MAX_LABELS} labels of {@link LABEL_PATTERN} (a repeat stored once), which listings and bulk calls filter by. Default: none. */
  labels?: string[];
  /** Epoch ms at which the job, if it has not started by then, ends as expired instead (lua/lib/expire.lua). Default: never. */
  expiresAt?: number;
}

export interface EnqueueResult {
  id: string;
  topic: string;
  /** When the job is due; for a repeat of an idempotency key, the existing job's, or null once it is in flight or finished. */
  dueAt: number | null;
  deduplicated: boolean;
  /** `content`: a repeat of a job's content (its topic's `contentDedupMs`); absent for a repeat of an idempotency key, and a new job. */
  deduplicatedBy?: "content";
}

/** A job stored under a job key ({@link Queue.upsert}): a new one, or a change to the key's pending job. */
export interface UpsertInput extends Omit<EnqueueInput, "idempotencyKey" | "idempotencyUntil" | "contentDedup"> {
  /** The job key, 1–{@link JOB_KEY_MAX_BYTES} UTF-8 bytes: a topic holds at most one pending job under it. */
  jobKey: string;
  /**
   * What becomes of the key's pending job (scheduled, or waiting for a retry): "replace" gives it this job's record
   * and due time, no later than `maxWaitMs` after it was first enqueued; "keepDue" gives it this job's record and
   * keeps its due time; "ignore" leaves it as it is. A job in flight is never changed: a new one waits behind it.
   * Default "replace".
   */
  onConflict?: "replace" | "keepDue" | "ignore";
  /** How long after the pending job's first enqueue a "replace" may still put it off, ms. Default: no bound. */
  maxWaitMs?: number;
}

export interface UpsertResult {
  id: string;
  topic: string;
  /** When the job is due. */
  dueAt: number;
  /** "created": a new job (the key was free, or its job in flight); "replaced" or "ignored": the key's pending job, changed or not. */
  result: "created" | "replaced" | "ignored";
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
type ClaimMode = "push" | "pull";

/** What kept a claim from taking every ready job; "bytes": the claim's reply reached CLAIM_REPLY_BUDGET_BYTES, and more are takeable now. */
type HeldBy = "concurrency" | "rate" | "paused" | "mode" | "bytes";

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
  /** REST requests the claim made: 2 (its candidates' read and the script), one more when it swept (at most CLAIM_REQUESTS_MAX, save orphans). */
  requests: number;
}

/** Options of {@link Queue.claim}. */
export interface ClaimOptions {
  max: number;
  /** Default the topic's timeoutMs plus 30 s. */
  leaseMs?: number;
  now?: number;
  /** Default "push" (the tick). */
  mode?: ClaimMode;
  /**
   * Push claims of a topic with neither a rate limit nor a concurrency limit also take jobs due up to this long from
   * `now`, each leased from its due time; the caller starts each at its `dueAt`. Default 0.
   */
  leadMs?: number;
}

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

/** Options of {@link Queue.settle}. */
export interface SettleOptions {
  now?: number;
  /**
   * What the topic index learns: "retries" each retry's time (the tick's settles; the default), "due" the topic's
   * earliest due job (a topic with a concurrency limit, whose freed slots let ready jobs start), "none" nothing (pull
   * consumers: pull topics are not indexed).
   */
  index?: "retries" | "due" | "none";
  /**
   * How long before its due time the caller's claims take a job (the tick's lead, TICK_LEAD_MS; 0 for a topic with
   * limits, which no claim takes ahead): a topic the settle rescores by its earliest due job is scored this much
   * before it. Default 0.
   */
  leadMs?: number;
}

/** How a pull consumer says an attempt failed ({@link Queue.nack}). */
export interface NackFailure {
  error: string;
  retryAfterMs?: number;
  permanent?: boolean;
}

/**
 * What became of a pull consumer's lease extension ({@link Queue.extend}): the lease's new deadline; or "stale" (not
 * leased at that attempt), "not-found" (no such job) or "push" (its topic is push: the tick's lease).
 */
export type LeaseExtension = { result: "extended"; leaseExpiresAt: number } | { result: "stale" | "not-found" | "push" };

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
  /** An ingested webhook's provider headers (lower-case names). */
  webhookHeaders?: Record<string, string>;
  /** The flow key whose turns and limits it goes by. */
  flowKey?: string;
  /** Its priority, 1–9 (absent: 0). */
  priority?: number;
  /** The job key it was stored under by an upsert. */
  jobKey?: string;
  /** How many upserts replaced it while it was pending. */
  replacements?: number;
  labels?: string[];
  expiresAt?: number;
  /** Its attempts, oldest first (the last {@link ATTEMPT_HISTORY_LIMIT}). */
  history: AttemptRecord[];
}

/** The states a topic's jobs can be listed in. */
type ListedState = "scheduled" | "inflight";

/** A position in a listing: the score (due time or lease deadline, ms) and id of a job; a page starts after it. */
export interface ListPosition {
  score: number;
  id: string;
}

/** One job of a listing. */
export interface ListedJob extends Pick<JobSnapshot, "labels"> {
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
  /** Scheduled and never started: when it expires unless started by then, epoch ms (its topic's exp set). */
  expiresAt?: number;
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
  /** Include payloads; a page then (and in a topic with labels) ends once its records pass {@link LIST_PAGE_BYTES}. Default false. */
  payload?: boolean;
  /**
   * Only the jobs of this flow key. Scheduled: the key's range of the keys' index, exact, in due order. In flight:
   * the lease set's page filtered by each job's meta (its key from its claim), so a page may hold fewer jobs than
   * `limit`, even none, and still have a `next`. Default: every job.
   */
  flowKey?: string;
  /** Only the jobs carrying this label, in enqueue order: a page may hold fewer than `limit`, even none, and have a `next`. Default: every job. */
  label?: string;
}

/** Which scheduled jobs {@link Queue.cancelWindow} cancels, and where its previous call stopped. */
export interface CancelWindowOptions {
  /** Lowest due time cancelled, epoch ms. Default: none. */
  dueFrom?: number;
  /** Highest due time cancelled, epoch ms. Default: none. */
  dueTo?: number;
  /** Where the previous call stopped. Default: the window's start. */
  after?: ListPosition;
  /** Only this flow key's jobs (its range of the keys' index), within the window when one is given. Default: every job. */
  flowKey?: string;
  /** Only the jobs carrying this label (in enqueue order), within the window. Default: every job. */
  label?: string;
}

/** Which dead letters a bulk replay or purge takes. */
export interface DeadFilter {
  /** Earliest failed time (listed or taken), epoch ms. Default: none. */
  failedFrom?: number;
  /** Latest failed time (listed or taken), epoch ms. Default: none. */
  failedTo?: number;
  /** Only letters whose last error holds this text (case-sensitive). Default: any. */
  errorContains?: string;
  /** Only letters carrying this label, in enqueue order. Default: any. */
  label?: string;
}

/** Options of {@link Queue.deadLetters}. */
export interface DeadLettersOptions extends Pick<DeadFilter, "failedFrom" | "failedTo" | "label"> {
  /** Letters on the page, 1 to {@link MAX_LIST_LIMIT}. Default 50. */
  limit?: number;
  /** Where the previous page ended. Default: the newest letter. */
  after?: ListPosition;
}

export interface TopicStats {
  topic: string;
  settings: TopicSettings;
  scheduled: number;
  ready: number;
  inflight: number;
  dead: number;
  /** Due time of the oldest job that is ready now, or null. */
  oldestReadyDueAt: number | null;
  /** Attempts started (claimed), and attempts that ended in each way; `dead` counts jobs dead-lettered, `dropped` jobs dropped for the topic's maxLength or a flow key's maxKeyLength (overflow dropOldest), `expired` jobs that expired before they started (lua/lib/expire.lua). */
  counters: { dispatched: number; succeeded: number; retried: number; dead: number; dropped: number; expired: number };
  /** All-time outcome counters and lateness / handler duration histograms. */
  metrics: MetricsSnapshot;
  /** A shaped topic's flow keys by where they stand (lua/lib/flow.lua); absent for a plain topic. */
  flowKeys?: FlowKeyCounts;
}

/** How many of a shaped topic's flow keys stand where. */
interface FlowKeyCounts {
  /** Keys with due jobs whose turn it is (or comes as other keys are served). */
  inTurn: number;
  /** Keys with due jobs that their rate holds back until a later start. */
  waitingForRate: number;
  /** Keys with as many jobs in flight as their parallelism allows. */
  atParallelism: number;
  /** Keys paused (with jobs waiting). */
  paused: number;
}

/** Options of {@link Queue.listTopicsPage}. */
export interface TopicPageOptions {
  /** Most names on the page (at least 1; the API caps it, see src/limits.ts). */
  limit: number;
  /** The page starts after this name (the previous page's `next`). Default: the first topic. */
  after?: string;
}

/** One page of the topic registry, in name order. */
export interface TopicPage {
  /** Topics registered in all (one SCARD inside the same script). */
  total: number;
  names: string[];
  /** The last name of this page when more follow (pass it as `after`), else null. */
  next: string | null;
}

/** What {@link Queue.deleteTopic} did: deleted the topic (and purged so much), or left it for what it holds. */
export type DeleteTopicResult =
  | { result: "deleted"; purged: { scheduled: number; dead: number } }
  | { result: "inflight"; scheduled: number; inflight: number; dead: number }
  | { result: "not-empty"; scheduled: number; inflight: number; dead: number };

/** One minute of a topic's series. */
export interface SeriesPoint {
  /** Start of the minute, epoch ms. */
  at: number;
  /** What settled during the minute; null when nothing did. */
  metrics: MetricsSnapshot | null;
  /** The backlog the tick saw during the minute; null when no tick sampled it. */
  backlog: { scheduled: number; ready: number; inflight: number } | null;
}
