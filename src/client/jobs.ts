/** `dl.jobs`: enqueue, read, change and cancel jobs; list a topic's; and pull consumers' claim, ack and nack. */
import type { z } from "@hono/zod-openapi";
import type * as schemas from "../producer/schemas.js";
import { addDryRunIds, everyPage } from "./pages.js";
import { path, query } from "./paths.js";
import { ONCE, SAFE, unlessNotFound, type Requester } from "./requester.js";
import { DelaylineConflictError } from "./errors.js";

// Every request and response type is the API's own zod schema, imported as a
// type only: the client carries no schema code, and cannot drift from the server.

/** A duration as the API takes it: ms, or a text such as "90s" or "1h". */
export type Duration = string | number;
/** A job to enqueue, as POST /v1/jobs takes it: with `flowKey` and `priority`, served by its key's turns and limits (docs/flow-control.md); with up to 8 `labels`, found by them. */
export type JobRequest = z.input<typeof schemas.JobBody>;
/** What an enqueue answers: the job's id, topic and due time, and whether an earlier job with its idempotency key was returned. */
export type Enqueued = z.output<typeof schemas.EnqueueResponse>;
/** An upsert, as POST /v1/jobs takes it: a job with its `jobKey`, and no idempotency key (a repeat lands on the key's job anyway). */
export type UpsertRequest = Omit<JobRequest, "idempotencyKey" | "jobKey"> & { jobKey: string };
/** What an upsert answers: the key's job (its id, topic and due time) and what became of it: `created`, `replaced` or `ignored`. */
export type Upserted = Enqueued & { result: NonNullable<Enqueued["result"]> };
/** A job's state, payload and attempt history (and its `flowKey`, `priority` and `labels` when it has them), as GET /v1/jobs/:id answers. */
export type Job = z.output<typeof schemas.JobView>;
/** One attempt of a job's history (Job.history, DeadLetter.history). */
export type Attempt = z.output<typeof schemas.AttemptView>;
/** A job as a listing shows it. */
export type ListedJob = z.output<typeof schemas.ListedJobView>;
/** A page of a topic's jobs; `nextCursor` goes on from it. */
export type JobPage = z.output<typeof schemas.JobPage>;
/** What one call of POST /v1/topics/:topic/jobs/cancel did. */
export type BulkCancelled = z.output<typeof schemas.BulkCancelResult>;
/** A job a pull consumer leased. */
export type ClaimedJob = z.output<typeof schemas.ClaimedView>;
/** A pull consumer's lease after its extension: `leaseExpiresAt` is its new deadline. */
export type ExtendedLease = z.output<typeof schemas.ExtendedView>;

/** What a listing of a topic's jobs shows. */
export interface ListJobsOptions {
  /** "scheduled" (in due order), "inflight" (in lease-deadline order) or "dead" (dead letters, newest first). Default "scheduled". */
  state?: "scheduled" | "inflight" | "dead";
  /** Earliest due time (scheduled), lease deadline (in flight) or failed time (dead) listed: ISO 8601 or epoch ms. Default: none. */
  from?: string | number;
  /** Latest due time (scheduled), lease deadline (in flight) or failed time (dead) listed: ISO 8601 or epoch ms. Default: none. */
  to?: string | number;
  /** Jobs per page, 1–1,000. Default 100. */
  limit?: number;
  /** Include payloads. Default false. */
  payload?: boolean;
  /**
   * Only this flow key's jobs: scheduled ones exactly, in due order; in
   * flight and dead ones by filtering each page, which may then hold fewer
   * than `limit`, even none, with a `nextCursor`. Default: every job.
   */
  flowKey?: string;
  /**
   * Only the jobs carrying this label, in enqueue order (not with `flowKey`):
   * each page looks at a bounded number of the label's jobs, so it may hold
   * fewer than `limit`, even none, with a `nextCursor`. Default: every job.
   */
  label?: string;
}

/**
 * Which of a topic's scheduled jobs {@link JobsResource.bulkCancel} cancels:
 * given ids (up to 1,000), a due window, one flow key's or one label's
 * (within a due window or not), or all.
 */
export type BulkCancelTarget = (
  | { ids: string[] }
  | { dueFrom?: string | number; dueTo?: string | number; flowKey?: string }
  | { dueFrom?: string | number; dueTo?: string | number; label: string }
  | { all: true }
) & {
  /** Change nothing: answer how many jobs the cancel would take, and the first 20 ids (`ids`). Default false. */
  dryRun?: boolean;
};

/** What a bulk cancel did, or with `dryRun` would do (`ids`: the first 20 it would take). */
export interface BulkCancelOutcome {
  cancelled: number;
  inflight: number;
  notScheduled?: number;
  dryRun?: true;
  ids?: string[];
}

/**
 * The answer to a job whose idempotency key the client made: a repeat of
 * that key is the caller's own retry, not an earlier job, unless it
 * repeated an earlier job's content (a topic's contentDedupMs).
 */
function ownKeyAnswer(e: Enqueued): Enqueued {
  if (e.deduplicatedBy === "content") return e;
  return { ...e, deduplicated: false };
}

/** Jobs: `/v1/jobs`, a topic's `/v1/topics/:topic/jobs` and its pull consumers' `/v1/topics/:topic/claim`. */
export class JobsResource {
  constructor(private readonly r: Requester) {}

  /**
   * Enqueues one job; a repeated idempotency key returns the first job with
   * `deduplicated: true`. Without a key the client makes one
   * ({@link DelaylineOptions.idempotencyKeys}), so a retry after a lost
   * answer returns the job the first attempt stored; `deduplicated` is then
   * false, since no earlier call of the caller's made it.
   */
  async enqueue(job: JobRequest): Promise<Enqueued> {
    if (job.jobKey !== undefined) return this.upsert({ ...job, jobKey: job.jobKey });
    const given = job.idempotencyKey;
    const key = given ?? (this.r.generateKeys ? crypto.randomUUID() : undefined);
    if (key === undefined) return this.r.json("POST", "/v1/jobs", job, ONCE);
    const r = await this.r.json<Enqueued>("POST", "/v1/jobs", job, { headers: { "idempotency-key": key }, retry: true });
    return given === undefined ? ownKeyAnswer(r) : r;
  }

  /**
   * Upserts a job by its `jobKey`: a new job when no job of the topic holds
   * the key or its job is in flight (`created`), else the key's pending job
   * replaced or left as it was, as `onConflict` says (`replace` by default:
   * the new payload and due time, no later than `maxWait` after that job was
   * first enqueued). Retried like a read: a repeat lands on the key's job.
   */
  upsert(job: UpsertRequest): Promise<Upserted> {
    return this.r.json("POST", "/v1/jobs", job, SAFE);
  }

  /**
   * Enqueues up to 1,000 jobs, all or nothing. Jobs without an idempotency
   * key get one as {@link enqueue}'s do, so a retried batch stores each job
   * once; the batch is retried only when every job has a key.
   */
  async enqueueBatch(jobs: JobRequest[]): Promise<Enqueued[]> {
    const keyed = jobs.map((j) => (j.idempotencyKey === undefined && this.r.generateKeys ? { ...j, idempotencyKey: crypto.randomUUID() } : j));
    const retry = keyed.every((j) => j.idempotencyKey !== undefined);
    const r = (await this.r.json<{ jobs: Enqueued[] }>("POST", "/v1/jobs/batch", { jobs: keyed }, { retry })).jobs;
    return r.map((e, i) => (jobs[i]?.idempotencyKey === undefined ? ownKeyAnswer(e) : e));
  }

  /** A job's state, payload and attempt history, or null when unknown or past its retention. */
  get(id: string): Promise<Job | null> {
    return unlessNotFound(this.r.json<Job>("GET", path`/v1/jobs/${id}`, undefined, SAFE), null);
  }

  /**
   * Cancels a scheduled job: a {@link DelaylineConflictError} when it is in
   * flight or finished, {@link DelaylineNotFoundError} when unknown. Retried
   * like a read: when a retry finds the job already cancelled (the lost
   * answer's attempt did it), the cancel succeeded.
   */
  async cancel(id: string): Promise<void> {
    try {
      await this.r.json("DELETE", path`/v1/jobs/${id}`, undefined, SAFE);
    } catch (err) {
      if (err instanceof DelaylineConflictError && err.attempts > 1 && (await this.get(id))?.state === "cancelled") return;
      throw err;
    }
  }

  /** Moves a scheduled job to a new time. */
  reschedule(id: string, when: { delay: Duration } | { runAt: string | number }): Promise<{ id: string; dueAt: string }> {
    return this.r.json("PATCH", path`/v1/jobs/${id}`, when, SAFE);
  }

  /**
   * One page of a topic's scheduled jobs, jobs in flight or dead letters;
   * pass `nextCursor` back as `cursor` for the next. A cursor is a position,
   * so jobs enqueued, claimed or cancelled meanwhile never make a page repeat or skip one.
   */
  list(topic: string, options: ListJobsOptions & { cursor?: string } = {}): Promise<JobPage> {
    const { state, from, to, limit, cursor, payload, flowKey, label } = options;
    return this.r.json("GET", path`/v1/topics/${topic}/jobs` + query({ state, from, to, limit, cursor, payload, flowKey, label }), undefined, SAFE);
  }

  /**
   * Every job of a listing, page after page:
   * `for await (const job of dl.jobs.all("mail", { state: "scheduled" }))`.
   * Fetches the next page only when the loop reaches it.
   */
  async *all(topic: string, options: ListJobsOptions = {}): AsyncGenerator<ListedJob, void, undefined> {
    for await (const page of everyPage((at) => this.list(topic, { ...options, ...at }))) yield* page.jobs;
  }

  /**
   * Cancels scheduled jobs of a topic — given ids (up to 1,000), a due
   * window, one flow key's or one label's, or all — call after call through the cursor, each call a bounded
   * batch on the server. Jobs in flight are left alone: `inflight` counts the
   * given ones in flight (ids), the label's jobs in flight (a label), or the topic's jobs in flight (a window or all).
   * With `dryRun` nothing changes: the count is what the cancel would take,
   * walked through the same cursor, and `ids` the first 20 of them.
   */
  async bulkCancel(topic: string, what: BulkCancelTarget): Promise<BulkCancelOutcome> {
    let cancelled = 0;
    // A label's calls each count the labelled jobs in flight they passed; the others, the topic's at the time.
    let passedInflight = 0;
    const ids: string[] = [];
    let last!: BulkCancelled;
    for await (last of everyPage((at) => this.r.json<BulkCancelled>("POST", path`/v1/topics/${topic}/jobs/cancel`, { ...what, ...at }, SAFE))) {
      cancelled += last.cancelled;
      passedInflight += last.inflight;
      addDryRunIds(ids, last.ids);
    }
    return {
      cancelled,
      inflight: "label" in what ? passedInflight : last.inflight,
      ...(last.notScheduled === undefined ? {} : { notScheduled: last.notScheduled }),
      ...(what.dryRun ? { dryRun: true as const, ids } : {}),
    };
  }

  /** Pull consumers: lease up to `max` due jobs of a pull-mode topic. Sent once: a retry would lease a second set. */
  async claim(topic: string, options: { max?: number; leaseMs?: number } = {}): Promise<ClaimedJob[]> {
    return (await this.r.json<{ jobs: ClaimedJob[] }>("POST", path`/v1/topics/${topic}/claim`, options, ONCE)).jobs;
  }

  /** Pull consumers: the attempt succeeded. A stale attempt throws a {@link DelaylineConflictError}. */
  async ack(id: string, attempt: number): Promise<void> {
    await this.r.json("POST", path`/v1/jobs/${id}/ack`, { attempt }, ONCE);
  }

  /**
   * Pull consumers: moves the lease of the claimed attempt to now + `leaseMs`
   * (1,000–3,600,000 ms, as a claim's; later or sooner than it was). Retried
   * like a reschedule: fenced by the attempt, a repeat counts from its own
   * arrival. An attempt no longer leased (expired and reaped, settled, claimed
   * again) or a push topic's job throws a {@link DelaylineConflictError}; an
   * unknown job a {@link DelaylineNotFoundError}.
   */
  extend(id: string, attempt: number, leaseMs: number): Promise<ExtendedLease> {
    return this.r.json("POST", path`/v1/jobs/${id}/extend`, { attempt, leaseMs }, SAFE);
  }

  /** Pull consumers: the attempt failed; retried by policy (or after retryAfterMs), or dead when permanent or out of attempts. */
  async nack(id: string, attempt: number, failure: { error: string; retryAfterMs?: number; permanent?: boolean }): Promise<"scheduled" | "dead"> {
    return (await this.r.json<{ state: "scheduled" | "dead" }>("POST", path`/v1/jobs/${id}/nack`, { attempt, ...failure }, ONCE)).state;
  }
}
