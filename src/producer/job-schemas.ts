// The schemas of jobs: a job's request and views, its attempts, a topic's job
// listing and bulk cancel, a reschedule, and a pull consumer's claim, ack, nack and lease extension.
import { z } from "@hono/zod-openapi";
import type { AttemptRecord } from "../queue/types.js";
import {
  ATTEMPT_ERROR_BYTES,
  ATTEMPT_HISTORY_LIMIT,
  DEFAULT_LEASE_MS,
  DEFAULT_LIST_LIMIT,
  MAX_BATCH,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  MAX_MAX_ATTEMPTS,
  MAX_PRIORITY,
  MAX_RETRY_AFTER_MS,
  MAX_TIMEOUT_MS,
  MIN_LEASE_MS,
  MIN_MAX_ATTEMPTS,
  MIN_TIMEOUT_MS,
} from "../limits.js";

import {
  BackoffBody,
  Delay,
  DryRun,
  DryRunAnswer,
  FlowKey,
  Instant,
  iso,
  JobId,
  JobKey,
  KeyText,
  Label,
  Labels,
  QueryFlag,
  QueryInstant,
  TargetBody,
  TopicName,
  CURSOR_MAX_LENGTH,
} from "./schema-parts.js";

export const JobBody = z
  .object({
    topic: TopicName,
    payload: z
      .unknown()
      .optional()
      .openapi({ description: "Any JSON value", example: { to: "ada@example.com" } }),
    delay: Delay.optional(),
    runAt: Instant.optional(),
    expiresAt: Instant.optional().openapi({
      description:
        "When the job expires unless it has started by then (ISO 8601 or epoch ms): it then ends in state expired, never delivered. Must be after its due time. A retry never expires",
    }),
    ttl: Delay.optional().openapi({
      description: 'The same as expiresAt, as a time from the enqueue (ms, or a duration such as "10m")',
    }),
    maxAttempts: z.number().int().min(MIN_MAX_ATTEMPTS).max(MAX_MAX_ATTEMPTS).optional(),
    backoff: BackoffBody.optional(),
    idempotencyKey: KeyText.min(1).max(200).optional(),
    idempotencyUntil: z
      .enum(["window", "finished"])
      .optional()
      .openapi({
        description:
          "With an idempotency key (this field or the Idempotency-Key header), how long it holds: window (default), a repeat within the idempotency window (24 h by default) " +
          "gets the first job, whatever became of it; finished, a repeat gets the first job while it is scheduled, waiting for a retry or in flight, and once it has ended " +
          "(succeeded, dead, cancelled, dropped …) is a new job that takes the key. A finished key is kept for the job's delay plus the idempotency window, that much again " +
          "past its due time whenever a repeat finds it alive; past that it is free",
      }),
    target: TargetBody.optional(),
    timeoutMs: z.number().int().min(MIN_TIMEOUT_MS).max(MAX_TIMEOUT_MS).optional(),
    flowKey: FlowKey.optional(),
    priority: z
      .number()
      .int()
      .min(0)
      .max(MAX_PRIORITY)
      .optional()
      .openapi({
        description: `0 (default) to ${MAX_PRIORITY}: among the due jobs of its flow key (or of the topic's jobs without one), a head start of priority × the topic's flow.priorityStepMs — never before its own due time`,
      }),
    labels: Labels.optional(),
    jobKey: JobKey.optional(),
    onConflict: z
      .enum(["replace", "keepDue", "ignore"])
      .optional()
      .openapi({
        description:
          "With jobKey, what becomes of the key's pending job (scheduled, or waiting for a retry): replace (default) gives it this request's job and due time, " +
          "no later than maxWait after it was first enqueued; keepDue gives it this request's job and keeps its due time; ignore leaves it. " +
          "Its attempts start again. A job in flight is never changed: a new job waits behind it",
      }),
    maxWait: Delay.optional().openapi({
      description:
        'With jobKey: how long after the key\'s pending job was first enqueued a replace may still put it off (ms, or a duration such as "5s"); default no bound',
    }),
  })
  .strict()
  .refine((b) => b.delay === undefined || b.runAt === undefined, { message: "give delay or runAt, not both", path: ["runAt"] })
  .refine((b) => b.ttl === undefined || b.expiresAt === undefined, { message: "give ttl or expiresAt, not both", path: ["expiresAt"] })
  .refine((b) => b.jobKey !== undefined || (b.onConflict === undefined && b.maxWait === undefined), {
    message: "onConflict and maxWait go with a jobKey",
    path: ["jobKey"],
  })
  .refine((b) => b.jobKey === undefined || b.idempotencyUntil === undefined, {
    message: "an upsert (jobKey) takes no idempotency key: a repeat lands on the key's job anyway",
    path: ["idempotencyUntil"],
  })
  .refine((b) => b.jobKey === undefined || b.idempotencyKey === undefined, {
    message: "give idempotencyKey or jobKey, not both: an upsert's repeat lands on its key's job anyway",
    path: ["idempotencyKey"],
  })
  .refine((b) => b.maxWait === undefined || b.delay === undefined || b.delay <= b.maxWait, { message: "must not be longer than maxWait", path: ["delay"] })
  .openapi("JobRequest");
export type JobBody = z.output<typeof JobBody>;

export const BatchBody = z
  .object({ jobs: z.array(JobBody).min(1).max(MAX_BATCH) })
  .strict()
  .superRefine((b, ctx) => {
    for (const [i, job] of b.jobs.entries()) {
      if (job.jobKey !== undefined) ctx.addIssue({ code: "custom", path: ["jobs", i, "jobKey"], message: "an upsert goes alone: POST /v1/jobs" });
      if (job.idempotencyUntil !== undefined && job.idempotencyKey === undefined) {
        ctx.addIssue({ code: "custom", path: ["jobs", i, "idempotencyUntil"], message: "goes with an idempotencyKey" });
      }
    }
  })
  .openapi("BatchRequest");

export const EnqueueResponse = z
  .object({
    id: JobId,
    topic: TopicName,
    dueAt: z.string().nullable().openapi({
      description: "When the job is due. For a repeat of an idempotency key, the existing job's due time, or null once it is in flight or finished.",
    }),
    deduplicated: z.boolean().openapi({
      description:
        "Whether this names a job stored before the request: a repeat of an idempotency key (or of a job's content, in a topic with contentDedupMs), or an upsert's replaced or ignored job",
    }),
    deduplicatedBy: z
      .enum(["content"])
      .optional()
      .openapi({
        description:
          "content: the request repeated the content of a job enqueued within its topic's contentDedupMs (which the client reports as deduplicated even when it made the idempotency key). " +
          "Absent for a repeat of an idempotency key and for a new job",
      }),
    result: z.enum(["created", "replaced", "ignored"]).optional().openapi({
      description:
        "With jobKey (an upsert): created, a new job (the key was free, or its job in flight); replaced or ignored, the key's pending job, changed or left as it was",
    }),
  })
  .openapi("Enqueued");

export const AttemptView = z
  .object({
    attempt: z.number().int().openapi({ description: "The attempt's number within its run, from 1; 0 on a replay, replacement or drop marker" }),
    run: z.number().int().openapi({
      description:
        "The job's run (life) the entry belongs to: 1, then one more after each dead-letter replay (or upsert that replaced it while it waited for a retry). Attempts count per run",
    }),
    startedAt: z.string().nullable().openapi({
      description:
        "When the handler started (pull consumers: when the job was claimed); for a replay marker, when it was replayed; for a replacement marker, when it was replaced; for a drop marker, when it was dropped; null when unknown",
    }),
    durationMs: z.number().nullable().openapi({ description: "How long the attempt ran until it settled, or until its expired lease was reaped" }),
    outcome: z.enum(["ok", "retry", "dead", "expired", "stale", "replayed", "replaced", "dropped", "edited", "moved"]).openapi({
      description:
        "ok, retry, dead; expired: the lease expired before the attempt settled (it counts as a failure); stale: the attempt settled after its lease had expired and the job had moved on; " +
        "replayed: no attempt but the marker of a dead-letter replay, which opens the next run; " +
        "replaced: no attempt but the marker of an upsert that replaced the job while it waited for a retry, which opens the next run; " +
        "dropped: no attempt but the marker of a pending job dropped for its topic's maxLength or its flow key's maxKeyLength (overflow dropOldest), which ends it; " +
        "with attempt 0, expired is no attempt but the marker of a job that expired before it started (its expiresAt, or its topic's maxLateness), which ends it; " +
        "edited: no attempt but the marker of a replay that changed the dead job (changes) before putting it back; " +
        "moved: no attempt but the marker of a replay into another topic, which ends the dead job: movedTo is the job that took its place",
    }),
    httpStatus: z.number().int().optional().openapi({ description: "The status of the response, for http deliveries that got one" }),
    error: z.string().optional().openapi({ description: "The error text, at most 1 KB" }),
    changes: z.array(z.string()).optional().openapi({ description: "edited, moved: the fields the replay changed (payload, target, webhookHeaders, topic)" }),
    movedTo: JobId.optional().openapi({ description: "moved: the id of the job that took its place in the other topic" }),
  })
  .openapi("Attempt");

/** A job's attempt history as the API shows it. */
export function historyView(history: AttemptRecord[]): Array<z.input<typeof AttemptView>> {
  return history.map((h) => ({ ...h, startedAt: h.startedAt === null ? null : iso(h.startedAt) }));
}

export const History = z.array(AttemptView).openapi({
  description: `The job's attempts, oldest first (the last ${ATTEMPT_HISTORY_LIMIT} entries); a dead-letter replay keeps them, adds a "replayed" marker and opens a new run, whose attempts count from 1 again`,
});

export const JobView = z
  .object({
    id: JobId,
    topic: TopicName,
    state: z.enum(["scheduled", "inflight", "succeeded", "dead", "cancelled", "dropped", "moved", "expired"]).openapi({
      description:
        "dropped: the job was pending when an enqueue into its topic, at its maxLength or its flow key's maxKeyLength with overflow dropOldest, dropped it (it was the topic's oldest, or the key's); " +
        "expired: the job never started and reached its expiresAt, or would have started later than its due time plus its topic's maxLateness (not a failure; a dead letter too when the topic keeps expired jobs); " +
        "moved: the dead job was replayed into another topic, as the job its history's last entry names (movedTo)",
    }),
    dueAt: z.string().nullable(),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    payload: z.unknown(),
    leaseExpiresAt: z.string().optional(),
    finishedAt: z.string().optional(),
    scheduleId: z.string().optional().openapi({ description: "The schedule whose occurrence made this job" }),
    scheduledFor: z.string().optional().openapi({ description: "That occurrence (ISO 8601); also sent as Delayline-Scheduled-For" }),
    webhookHeaders: z
      .record(z.string(), z.string())
      .optional()
      .openapi({ description: "An ingested webhook's provider headers (lower-case names, e.g. x-github-event), kept for its handler" }),
    flowKey: z.string().optional().openapi({ description: "The flow key whose turns and limits the job goes by" }),
    priority: z.number().int().optional().openapi({ description: "Its priority (absent: 0)" }),
    jobKey: z.string().optional().openapi({ description: "The job key an upsert stored it under" }),
    replacements: z.number().int().optional().openapi({ description: "With jobKey: how many upserts replaced it while it was pending" }),
    labels: z.array(z.string()).optional().openapi({ description: "Its labels (absent: none)" }),
    expiresAt: z.string().optional().openapi({ description: "When it expires unless it has started by then (from expiresAt or ttl)" }),
    history: History,
  })
  .openapi("Job");

export const ListQuery = z.object({
  state: z
    .enum(["scheduled", "inflight", "dead"])
    .default("scheduled")
    .openapi({ description: "scheduled (in due order), inflight (in lease-deadline order) or dead (dead letters, newest first)" }),
  from: QueryInstant.optional().openapi({ description: "Earliest due time (scheduled), lease deadline (inflight) or failed time (dead) listed" }),
  to: QueryInstant.optional().openapi({ description: "Latest due time (scheduled), lease deadline (inflight) or failed time (dead) listed" }),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: z.string().max(CURSOR_MAX_LENGTH).optional().openapi({ description: "nextCursor of the previous page" }),
  payload: QueryFlag.openapi({
    description: "Include payloads (a page then, and in a topic with labelled jobs, also ends once the records it read pass about 1 MB)",
  }),
  label: Label.optional().openapi({
    description:
      "Only the jobs carrying this label, in enqueue order (a walk of the label's index, not the set's order; from/to still bound due time, lease deadline or failed time): " +
      "each page looks at a bounded number of the label's jobs, so it may hold fewer jobs than limit, even none, and still have a nextCursor. Not with flowKey",
  }),
  flowKey: FlowKey.optional().openapi({
    description:
      "Only this flow key's jobs. scheduled: the key's jobs in due order, exact (its range of the flow keys' index). inflight and dead: the page of the topic's set filtered by each job's key, so a page may hold fewer jobs than limit, even none, and still have a nextCursor",
  }),
});

export const ListedJobView = z
  .object({
    id: JobId,
    state: z.enum(["scheduled", "inflight", "dead"]),
    dueAt: z.string().nullable().openapi({ description: "null for dead letters" }),
    attempts: z.number().int(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    leaseExpiresAt: z.string().optional().openapi({ description: "Jobs in flight" }),
    failedAt: z.string().optional().openapi({ description: "Dead letters" }),
    payload: z.unknown().optional().openapi({ description: "With payload=true" }),
    scheduleId: z.string().optional().openapi({ description: "With payload=true: the schedule whose occurrence made the job" }),
    scheduledFor: z.string().optional().openapi({ description: "With payload=true: that occurrence" }),
    labels: z.array(z.string()).optional().openapi({ description: "Its labels (absent: none)" }),
    expiresAt: z
      .string()
      .optional()
      .openapi({ description: "Scheduled jobs that never started: when it expires unless it has started by then (a retry never expires)" }),
  })
  .openapi("ListedJob");

export const JobPage = z
  .object({
    jobs: z.array(ListedJobView),
    nextCursor: z.string().nullable().openapi({
      description:
        "Where this page ended (a position, not an offset: jobs enqueued, claimed or cancelled meanwhile never make a page repeat or skip one); null when no more jobs follow",
    }),
  })
  .openapi("JobPage");

export const BulkCancelBody = z
  .object({
    ids: z.array(JobId).min(1).max(1_000).optional(),
    dueFrom: Instant.optional(),
    dueTo: Instant.optional(),
    all: z.literal(true).optional(),
    flowKey: FlowKey.optional().openapi({ description: "Only this flow key's scheduled jobs (in due order), within dueFrom/dueTo when given" }),
    label: Label.optional().openapi({
      description:
        "Only the scheduled jobs carrying this label (in enqueue order: a walk of the label's index), within dueFrom/dueTo when given; inflight then counts the labelled jobs in flight the call passed. Not with flowKey",
    }),
    cursor: z
      .string()
      .max(CURSOR_MAX_LENGTH)
      .optional()
      .openapi({ description: "nextCursor of the previous call (a window, a flow key or all): goes on from there" }),
    dryRun: DryRun,
  })
  .strict()
  .refine(
    (b) =>
      [b.ids !== undefined, b.dueFrom !== undefined || b.dueTo !== undefined || b.flowKey !== undefined || b.label !== undefined, b.all === true].filter(
        Boolean,
      ).length === 1,
    { message: "give ids, or dueFrom/dueTo and/or flowKey or label, or all: true", path: ["ids"] },
  )
  .refine((b) => b.flowKey === undefined || b.label === undefined, { message: "give flowKey or label, not both", path: ["label"] })
  .refine((b) => b.ids === undefined || b.cursor === undefined, { message: "a cursor goes with a window or all, not with ids", path: ["cursor"] })
  .refine((b) => b.dueFrom === undefined || b.dueTo === undefined || b.dueFrom <= b.dueTo, { message: "must not be before dueFrom", path: ["dueTo"] })
  .openapi("BulkCancel");

export const BulkCancelResult = z
  .object({
    cancelled: z.number().int(),
    inflight: z
      .number()
      .int()
      .openapi({ description: "ids: the given jobs that are in flight (left alone); a window or all: the jobs in flight in the topic (left alone)" }),
    notScheduled: z
      .number()
      .int()
      .optional()
      .openapi({ description: "ids: the given ids that are neither scheduled nor in flight (unknown, finished or cancelled)" }),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "A window or all: pass it back as `cursor` to go on; null when the window is done. Always null with ids" }),
    ...DryRunAnswer,
  })
  .openapi("BulkCancelled");

export const RescheduleBody = z
  .object({ delay: Delay.optional(), runAt: Instant.optional() })
  .strict()
  .refine((b) => (b.delay === undefined) !== (b.runAt === undefined), { message: "give exactly one of delay or runAt", path: ["delay"] })
  .openapi("Reschedule");

/** A pull consumer's lease, from now: a claim's, or an extension's. */
const LeaseMs = z.number().int().min(MIN_LEASE_MS).max(MAX_LEASE_MS);

export const ClaimBody = z
  .object({ max: z.number().int().min(1).max(100).default(10), leaseMs: LeaseMs.default(DEFAULT_LEASE_MS) })
  .strict()
  .openapi("Claim");

export const ClaimedView = z
  .object({ id: JobId, attempt: z.number().int(), payload: z.unknown(), dueAt: z.string(), leaseExpiresAt: z.string() })
  .openapi("ClaimedJob");

export const AckBody = z
  .object({ attempt: z.number().int().min(1) })
  .strict()
  .openapi("Ack");

export const ExtendBody = z
  .object({
    attempt: z.number().int().min(1),
    leaseMs: LeaseMs.openapi({
      description: `The lease's new length from now, ${MIN_LEASE_MS}–${MAX_LEASE_MS} ms as a claim's: the new deadline may be later or sooner`,
    }),
  })
  .strict()
  .openapi("Extend");

export const ExtendedView = z
  .object({ id: JobId, attempt: z.number().int(), leaseExpiresAt: z.string().openapi({ description: "The lease's new deadline (ISO 8601)" }) })
  .openapi("Extended");

export const NackBody = z
  .object({
    attempt: z.number().int().min(1),
    error: z.string().max(ATTEMPT_ERROR_BYTES),
    retryAfterMs: z.number().int().min(0).max(MAX_RETRY_AFTER_MS).optional(),
    permanent: z.boolean().optional(),
  })
  .strict()
  .openapi("Nack");
