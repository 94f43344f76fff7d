import { z } from "@hono/zod-openapi";
import { SIGNATURE_SCHEMES, whsecProblem } from "../client/signature.js";
import { isConnectionHeader } from "../handlers/headers.js";
import { backoffSchema } from "../queue/policy/backoff.js";
import { TOPIC_NAME_PATTERN } from "../queue/ids.js";
import { parseDuration } from "../queue/policy/duration.js";
import type { AttemptRecord } from "../queue/types.js";
import { PROBLEM_TYPES } from "./problem.js";
import {
  ATTEMPT_ERROR_BYTES,
  ATTEMPT_HISTORY_LIMIT,
  DEFAULT_DEAD_LIST_LIMIT,
  DEFAULT_LIST_LIMIT,
  MAX_BACKOFF_FACTOR,
  MAX_BACKOFF_SCHEDULE_DELAYS,
  MAX_BATCH,
  MAX_BURST,
  MAX_CONCURRENCY,
  MAX_DELAY_DAYS,
  MAX_DELAY_MS,
  MAX_LIST_LIMIT,
  MAX_MAX_ATTEMPTS,
  MAX_RATE_PER_SEC,
  MAX_RETRY_AFTER_MS,
  MAX_TIMEOUT_MS,
  MIN_MAX_ATTEMPTS,
  MIN_SECRET_LENGTH,
  MIN_TIMEOUT_MS,
  TOPIC_NAME_MAX_LENGTH,
} from "../limits.js";

export const TopicName = z
  .string()
  .regex(TOPIC_NAME_PATTERN, `1–${TOPIC_NAME_MAX_LENGTH} characters of A–Z a–z 0–9 . _ -, but not . or ..`)
  .openapi({ example: "emails" });

export const JobId = z.string().max(100).openapi({ example: "emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR", description: "`<topic>.<ULID>`" });

/** A duration: `"90s"`, `"5m"`, `"1h30m"`, `"500ms"`, or milliseconds. Parsed to ms. */
export const Duration = z
  .union([z.string().max(32), z.number().int().nonnegative()])
  .transform((v, ctx) => {
    try {
      return parseDuration(v);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
      return z.NEVER;
    }
  })
  .openapi({ description: 'A duration such as "90s", "5m", "1h30m", "500ms", or a number of ms', example: "90s" });

const Delay = Duration.refine((ms) => ms <= MAX_DELAY_MS, `must be at most ${MAX_DELAY_DAYS} days`);

/** ISO 8601 or epoch ms; parsed to epoch ms. */
export const Instant = z
  // Past the latest instant a Date holds, the job would be stored and then
  // its answer (an ISO due time) could not be written: a 500 for a stored job.
  .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative().max(8_640_000_000_000_000)])
  .transform((v) => (typeof v === "number" ? v : Date.parse(v)))
  .openapi({ description: "ISO 8601 date-time or epoch milliseconds", example: "2026-12-01T09:00:00Z" });

export const BackoffBody = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("fixed"), delay: Duration }).strict(),
    z
      .object({
        type: z.literal("exponential"),
        delay: Duration.optional(),
        factor: z.number().min(1).max(MAX_BACKOFF_FACTOR).optional(),
        maxDelay: Duration.optional(),
        jitter: z.boolean().optional(),
      })
      .strict(),
    z.object({ type: z.literal("schedule"), delays: z.array(Duration).min(1).max(MAX_BACKOFF_SCHEDULE_DELAYS) }).strict(),
  ])
  .openapi("Backoff");

const HeaderName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, "an HTTP header name");
// What every HTTP stack sends as is: anything else (NUL, other controls,
// non-ASCII) makes fetch refuse the request at every attempt, so the job could never be delivered.
const HeaderValue = z
  .string()
  .max(4_096)
  .regex(/^[\t\x20-\x7e]*$/, "visible ASCII, spaces and tabs");

/**
 * Strings that become part of a Redis key must be well-formed Unicode: a
 * lone surrogate reaches Redis as U+FFFD, so two different keys would be one.
 */
const KeyText = z.string().regex(/^(?:[^\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/, "well-formed Unicode (no lone surrogates)");

export const TargetBody = z
  .object({
    url: z.url({ protocol: /^https?$/, error: "an http(s) URL" }).max(2_048),
    method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).optional(),
    headers: z
      .record(HeaderName, HeaderValue)
      .refine((h) => Object.keys(h).length <= 50, "at most 50 headers")
      .superRefine((h, ctx) => {
        const seen = new Set<string>();
        for (const name of Object.keys(h)) {
          if (isConnectionHeader(name)) {
            ctx.addIssue({
              code: "custom",
              path: [name],
              message: `${name} belongs to the connection, not the request: hop-by-hop, Proxy-*, Host and Content-Length headers cannot be set`,
            });
          }
          // Names are case-insensitive on the wire: two spellings would be sent as one joined value.
          if (seen.has(name.toLowerCase())) ctx.addIssue({ code: "custom", path: [name], message: `${name} is given twice (header names ignore case)` });
          seen.add(name.toLowerCase());
        }
      })
      .optional()
      .openapi({
        description:
          "Request headers for the delivery. Content-Type replaces the default application/json. User-Agent and Delayline-* are delayline's and are replaced by its own; " +
          "hop-by-hop headers (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-*), Host and Content-Length are refused.",
      }),
  })
  .strict()
  .openapi("Target");

export const JobBody = z
  .object({
    topic: TopicName,
    payload: z
      .unknown()
      .optional()
      .openapi({ description: "Any JSON value", example: { to: "ada@example.com" } }),
    delay: Delay.optional(),
    runAt: Instant.optional(),
    maxAttempts: z.number().int().min(MIN_MAX_ATTEMPTS).max(MAX_MAX_ATTEMPTS).optional(),
    backoff: BackoffBody.optional(),
    idempotencyKey: KeyText.min(1).max(200).optional(),
    target: TargetBody.optional(),
    timeoutMs: z.number().int().min(MIN_TIMEOUT_MS).max(MAX_TIMEOUT_MS).optional(),
  })
  .strict()
  .refine((b) => b.delay === undefined || b.runAt === undefined, { message: "give delay or runAt, not both", path: ["runAt"] })
  .openapi("JobRequest");
export type JobBody = z.output<typeof JobBody>;

export const BatchBody = z
  .object({ jobs: z.array(JobBody).min(1).max(MAX_BATCH) })
  .strict()
  .openapi("BatchRequest");

export const EnqueueResponse = z
  .object({
    id: JobId,
    topic: TopicName,
    dueAt: z.string().nullable().openapi({
      description: "When the job is due. For a repeat of an idempotency key, the existing job's due time, or null once it is in flight or finished.",
    }),
    deduplicated: z.boolean(),
  })
  .openapi("Enqueued");

export const AttemptView = z
  .object({
    attempt: z.number().int().openapi({ description: "The attempt's number within its run, from 1; 0 on a replay marker" }),
    run: z.number().int().openapi({
      description: "The job's run (life) the entry belongs to: 1, then one more after each dead-letter replay. Attempts count per run",
    }),
    startedAt: z.string().nullable().openapi({
      description: "When the handler started (pull consumers: when the job was claimed); for a replay marker, when it was replayed; null when unknown",
    }),
    durationMs: z.number().nullable().openapi({ description: "How long the attempt ran until it settled, or until its expired lease was reaped" }),
    outcome: z.enum(["ok", "retry", "dead", "expired", "stale", "replayed"]).openapi({
      description:
        "ok, retry, dead; expired: the lease expired before the attempt settled (it counts as a failure); stale: the attempt settled after its lease had expired and the job had moved on; " +
        "replayed: no attempt but the marker of a dead-letter replay, which opens the next run",
    }),
    httpStatus: z.number().int().optional().openapi({ description: "The status of the response, for http deliveries that got one" }),
    error: z.string().optional().openapi({ description: "The error text, at most 1 KB" }),
  })
  .openapi("Attempt");

/** A job's attempt history as the API shows it. */
export function historyView(history: AttemptRecord[]): Array<z.input<typeof AttemptView>> {
  return history.map((h) => ({ ...h, startedAt: h.startedAt === null ? null : iso(h.startedAt) }));
}

const History = z.array(AttemptView).openapi({
  description: `The job's attempts, oldest first (the last ${ATTEMPT_HISTORY_LIMIT} entries); a dead-letter replay keeps them, adds a "replayed" marker and opens a new run, whose attempts count from 1 again`,
});

export const JobView = z
  .object({
    id: JobId,
    topic: TopicName,
    state: z.enum(["scheduled", "inflight", "succeeded", "dead", "cancelled"]),
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
    history: History,
  })
  .openapi("Job");

/** An instant in a query string: epoch ms digits or ISO 8601; parsed to epoch ms. */
export const QueryInstant = z
  .string()
  .max(40)
  .transform((v, ctx) => {
    const ms = /^\d{1,16}$/.test(v) ? Number(v) : z.iso.datetime({ offset: true }).safeParse(v).success ? Date.parse(v) : NaN;
    if (Number.isNaN(ms) || ms > 8_640_000_000_000_000) {
      ctx.addIssue({ code: "custom", message: "an ISO 8601 date-time or epoch milliseconds" });
      return z.NEVER;
    }
    return ms;
  })
  .openapi({ description: "ISO 8601 date-time or epoch milliseconds", example: "2026-12-01T09:00:00Z" });

export const ListQuery = z.object({
  state: z
    .enum(["scheduled", "inflight", "dead"])
    .default("scheduled")
    .openapi({ description: "scheduled (in due order), inflight (in lease-deadline order) or dead (dead letters, newest first)" }),
  from: QueryInstant.optional().openapi({ description: "Earliest due time (scheduled), lease deadline (inflight) or failed time (dead) listed" }),
  to: QueryInstant.optional().openapi({ description: "Latest due time (scheduled), lease deadline (inflight) or failed time (dead) listed" }),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: z.string().max(200).optional().openapi({ description: "nextCursor of the previous page" }),
  payload: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true")
    .openapi({ description: "Include payloads (a page then also ends once its payloads pass about 1 MB)" }),
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
    cursor: z.string().max(200).optional().openapi({ description: "nextCursor of the previous call (a window or all): goes on from there" }),
  })
  .strict()
  .refine((b) => [b.ids !== undefined, b.dueFrom !== undefined || b.dueTo !== undefined, b.all === true].filter(Boolean).length === 1, {
    message: "give ids, or dueFrom/dueTo, or all: true",
    path: ["ids"],
  })
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
  })
  .openapi("BulkCancelled");

export const RescheduleBody = z
  .object({ delay: Delay.optional(), runAt: Instant.optional() })
  .strict()
  .refine((b) => (b.delay === undefined) !== (b.runAt === undefined), { message: "give exactly one of delay or runAt", path: ["delay"] })
  .openapi("Reschedule");

const SigningSecret = z.string().min(MIN_SECRET_LENGTH).max(256);

export const TopicSettingsBody = z
  .object({
    ratePerSec: z.number().positive().max(MAX_RATE_PER_SEC).nullable().optional(),
    burst: z.number().int().min(1).max(MAX_BURST).nullable().optional(),
    concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).nullable().optional(),
    maxAttempts: z.number().int().min(MIN_MAX_ATTEMPTS).max(MAX_MAX_ATTEMPTS).nullable().optional(),
    backoff: BackoffBody.nullable().optional(),
    url: z
      .url({ protocol: /^https?$/, error: "an http(s) URL" })
      .max(2_048)
      .nullable()
      .optional(),
    mode: z.enum(["push", "pull"]).nullable().optional(),
    paused: z.boolean().nullable().optional(),
    timeoutMs: z.number().int().min(MIN_TIMEOUT_MS).max(MAX_TIMEOUT_MS).nullable().optional(),
    signatureScheme: z
      .enum(SIGNATURE_SCHEMES)
      .nullable()
      .optional()
      .openapi({
        description:
          "How deliveries are signed: delayline (Delayline-Signature: t=…,v1=…, Stripe's format) or standard (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature). " +
          "null: the deployment's SIGNING_SCHEME",
      }),
    signingSecret: SigningSecret.nullable()
      .optional()
      .openapi({ description: "Write-only. With signatureScheme standard, a whsec_ secret (base64 of 24–64 bytes)" }),
    previousSigningSecrets: z.array(SigningSecret).min(1).max(3).nullable().optional().openapi({
      description:
        "Write-only. Secrets being rotated out: each delivery also carries a signature with each of them, so receivers that still hold one verify. Clear with null once every receiver has the new signingSecret",
    }),
    webhookSecret: z.string().min(MIN_SECRET_LENGTH).max(256).nullable().optional().openapi({ description: "Write-only" }),
  })
  .strict()
  .superRefine((b, ctx) => {
    // A whsec_ secret is checked whatever the scheme, so a mistyped one is refused
    // before it signs anything; with standard, every secret given must be one.
    const given: Array<[Array<string | number>, string]> = [];
    if (typeof b.signingSecret === "string") given.push([["signingSecret"], b.signingSecret]);
    for (const [i, secret] of (b.previousSigningSecrets ?? []).entries()) given.push([["previousSigningSecrets", i], secret]);
    for (const [path, secret] of given) {
      if (b.signatureScheme !== "standard" && !secret.startsWith("whsec_")) continue;
      const problem = whsecProblem(secret);
      if (problem)
        ctx.addIssue({ code: "custom", path, message: `${b.signatureScheme === "standard" ? "with signatureScheme standard, " : ""}must be ${problem}` });
    }
  })
  .openapi("TopicSettingsPatch", { description: "A value sets a field; null clears it back to the default." });

// A union of its own over the stored shape's options: zod 4 gives a schema its
// methods as it is made, and the queue's may be made before @hono/zod-openapi
// has added .openapi (whichever module a Worker or test imports first).
const BackoffOut = z.union(backoffSchema.options).openapi("BackoffSettings", { description: "Delays in ms" });

const Counters = z
  .object({ dispatched: z.number(), succeeded: z.number(), retried: z.number(), dead: z.number() })
  .openapi("Counters", { description: "attempts dispatched, attempts that succeeded or were retried, jobs dead-lettered (all time)" });

export const TopicView = z
  .object({
    topic: TopicName,
    settings: z.object({
      ratePerSec: z.number().optional(),
      burst: z.number().optional(),
      concurrency: z.number().optional(),
      maxAttempts: z.number(),
      backoff: BackoffOut,
      paused: z.boolean(),
      mode: z.enum(["push", "pull"]),
      url: z.string().optional(),
      timeoutMs: z.number(),
      signatureScheme: z.enum(SIGNATURE_SCHEMES),
      hasSigningSecret: z.boolean(),
      hasPreviousSigningSecrets: z.boolean(),
      hasWebhookSecret: z.boolean(),
    }),
    scheduled: z.number().int(),
    ready: z.number().int(),
    inflight: z.number().int(),
    dead: z.number().int(),
    oldestReadyDueAt: z.string().nullable(),
    counters: Counters,
  })
  .openapi("Topic");

/** `cursor` and `limit` of a topic listing (`GET /v1/topics`, `GET /v1/stats`). */
export const topicPageQuery = (defaultLimit: number, maxLimit: number, what: string) => ({
  cursor: z
    .string()
    .max(200)
    .optional()
    .openapi({ description: "the `nextCursor` of the previous page (topics are listed in name order; the cursor is the last name, never an offset)" }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(maxLimit)
    .default(defaultLimit)
    .openapi({ description: `most topics on the page (default ${defaultLimit}, at most ${maxLimit})${what}` }),
});

export const TopicList = z
  .object({
    topics: z.array(TopicView),
    total: z.number().int().openapi({ description: "topics registered in all (every page); one SCARD, not a sum" }),
    nextCursor: z.string().nullable().openapi({ description: "pass as `cursor` for the next page; null on the last page" }),
  })
  .openapi("TopicList");

export const DeadEntryView = z
  .object({ id: JobId, attempts: z.number().int(), lastError: z.string().nullable(), failedAt: z.string(), payload: z.unknown(), history: History })
  .openapi("DeadLetter");

const ErrorText = z.string().min(1).max(200).openapi({ description: "Only letters whose last error holds this text (case-sensitive)" });

export const ReplayBody = z
  .object({
    ids: z.array(JobId).min(1).max(10_000).optional(),
    all: z.boolean().optional(),
    failedFrom: Instant.optional(),
    failedTo: Instant.optional(),
    error: ErrorText.optional(),
    delay: Delay.optional(),
    spread: Delay.optional().openapi({
      description:
        'Spread the replayed jobs at random over this long after their due time (e.g. "10m"), so a large replay does not reach a recovering endpoint at once',
    }),
    cursor: z.string().max(200).optional().openapi({ description: "nextCursor of the previous call (all or a filter): goes on from there" }),
  })
  .strict()
  .refine(
    (b) => [b.ids !== undefined, b.all === true, b.failedFrom !== undefined || b.failedTo !== undefined || b.error !== undefined].filter(Boolean).length === 1,
    {
      message: "give ids, or all: true, or a filter (failedFrom, failedTo, error)",
      path: ["ids"],
    },
  )
  .refine((b) => b.ids === undefined || b.cursor === undefined, { message: "a cursor goes with all or a filter, not with ids", path: ["cursor"] })
  .refine((b) => b.failedFrom === undefined || b.failedTo === undefined || b.failedFrom <= b.failedTo, {
    message: "must not be before failedFrom",
    path: ["failedTo"],
  })
  .openapi("Replay");

export const ReplayResult = z
  .object({
    replayed: z.number().int(),
    notFound: z.array(JobId).openapi({
      description:
        "Given ids that are not among the topic's dead letters (unknown, never dead, already replayed or trimmed), each once; empty with all or a filter",
    }),
    nextCursor: z.string().nullable().openapi({
      description:
        "All or a filter: a call replays a bounded batch; pass it back as `cursor` with the same body to go on; null when done. Always null with ids",
    }),
  })
  .openapi("Replayed");

export const DeadQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_DEAD_LIST_LIMIT),
  cursor: z.string().max(200).optional().openapi({ description: "nextCursor of the previous page" }),
  failedFrom: QueryInstant.optional(),
  failedTo: QueryInstant.optional(),
});

export const PurgeQuery = z.object({
  failedFrom: QueryInstant.optional(),
  failedTo: QueryInstant.optional(),
  error: ErrorText.optional(),
  cursor: z.string().max(200).optional().openapi({ description: "nextCursor of the previous call: goes on from there" }),
});

export const ClaimBody = z
  .object({ max: z.number().int().min(1).max(100).default(10), leaseMs: z.number().int().min(1_000).max(3_600_000).default(60_000) })
  .strict()
  .openapi("Claim");

export const ClaimedView = z
  .object({ id: JobId, attempt: z.number().int(), payload: z.unknown(), dueAt: z.string(), leaseExpiresAt: z.string() })
  .openapi("ClaimedJob");

export const AckBody = z
  .object({ attempt: z.number().int().min(1) })
  .strict()
  .openapi("Ack");

export const NackBody = z
  .object({
    attempt: z.number().int().min(1),
    error: z.string().max(ATTEMPT_ERROR_BYTES),
    retryAfterMs: z.number().int().min(0).max(MAX_RETRY_AFTER_MS).optional(),
    permanent: z.boolean().optional(),
  })
  .strict()
  .openapi("Nack");

export const Problem = z
  .object({
    type: z.string().openapi({
      description: `What went wrong, as a URN a program can switch on: ${Object.values(PROBLEM_TYPES).join(", ")}. The client adds urn:delayline:client:* for answers it never got or could not read.`,
      examples: [PROBLEM_TYPES.validation],
    }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    limit: z
      .enum(["record-size", "request-size", "requests", "capacity", "memory"])
      .optional()
      .openapi({ description: "With urn:delayline:redis-limit: the Redis (Upstash) limit that refused the request." }),
  })
  .openapi("Problem");

export const iso = (ms: number) => new Date(ms).toISOString();

const HistogramView = z
  .object({
    count: z.number().int(),
    sumMs: z.number(),
    p50: z.number().nullable(),
    p95: z.number().nullable(),
    p99: z.number().nullable(),
    buckets: z.array(z.object({ leMs: z.number().nullable().openapi({ description: "upper bound in ms; null for +Inf" }), count: z.number().int() })),
  })
  .openapi("Histogram", { description: "Per-bucket counts (not cumulative); quantiles in ms, interpolated within buckets" });

const SeriesPointView = z
  .object({
    at: z.string(),
    succeeded: z.number().int(),
    retried: z.number().int(),
    dead: z.number().int(),
    latenessP50: z.number().nullable(),
    latenessP99: z.number().nullable(),
    latenessBuckets: z.array(z.number().int()).openapi({ description: "per-bucket counts of the minute's lateness, bounds as in latenessBoundsMs then +Inf" }),
    scheduled: z.number().int().nullable(),
    ready: z.number().int().nullable(),
    inflight: z.number().int().nullable(),
  })
  .openapi("SeriesPoint", { description: "One minute: attempts settled in it, their lateness, and the backlog the tick sampled (null: not sampled)" });

export const StatsView = z
  .object({
    now: z.string(),
    latenessBoundsMs: z.array(z.number()).openapi({ description: "upper bounds of the lateness buckets in ms; one more bucket holds the rest" }),
    tick: z.object({
      lastScheduledAt: z.string().nullable(),
      status: z
        .object({
          startedAt: z.string(),
          updatedAt: z.string(),
          rounds: z.number().int(),
          claimed: z.number().int(),
          subrequests: z.number().int(),
          budget: z.number().int(),
          asleep: z.boolean(),
          ended: z.string().nullable(),
        })
        .nullable(),
      redisLimitErrors: z
        .object({
          "record-size": z.number().int(),
          "request-size": z.number().int(),
          requests: z.number().int(),
          capacity: z.number().int(),
          memory: z.number().int(),
        })
        .openapi({
          description:
            "commands Redis (Upstash) refused at each of its limits since the deployment began (also delayline_redis_limit_errors_total{limit} in /metrics); counted in memory while Redis refuses writes, stored once it takes them again",
        }),
    }),
    topics: z.array(
      z.object({
        topic: TopicName,
        mode: z.enum(["push", "pull"]),
        paused: z.boolean(),
        scheduled: z.number().int(),
        ready: z.number().int(),
        inflight: z.number().int(),
        dead: z.number().int(),
        lagMs: z.number().openapi({ description: "how long the oldest ready job has been due; 0 when none is ready" }),
        ratePerMinute: z.number().openapi({ description: "attempts settled per minute over the last 5 minutes" }),
        counters: Counters,
        lateness: HistogramView,
        duration: HistogramView,
        series: z.array(SeriesPointView),
      }),
    ),
    total: z.number().int().openapi({ description: "topics registered in all (every page); one SCARD, not a sum" }),
    nextCursor: z.string().nullable().openapi({ description: "pass as `cursor` for the next page of topics; null on the last page" }),
  })
  .openapi("Stats");
