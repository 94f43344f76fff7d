// The schemas of dead letters: a letter, a replay and its result, and the
// listing's and the purge's filters.
import { z } from "@hono/zod-openapi";
import { DEFAULT_DEAD_LIST_LIMIT, MAX_LIST_LIMIT } from "../limits.js";

import { History, JobBody } from "./job-schemas.js";
import { Delay, DryRun, DryRunAnswer, Instant, JobId, Label, QueryFlag, QueryInstant, TopicName, CURSOR_MAX_LENGTH } from "./schema-parts.js";
import { WebhookHeadersBody } from "./webhook-headers.js";

export const DeadEntryView = z
  .object({
    id: JobId,
    attempts: z.number().int(),
    lastError: z.string().nullable(),
    failedAt: z.string(),
    payload: z.unknown(),
    labels: z.array(z.string()).optional().openapi({ description: "Its job's labels (absent: none)" }),
    history: History,
  })
  .openapi("DeadLetter");

/** A dead-letter walk's label filter: its letters in enqueue order, a bounded number of the label's jobs looked at per call. */
const LabelFilter = Label.optional().openapi({
  description:
    "Only letters carrying this label, in enqueue order (a walk of the label's index; failedFrom/failedTo still apply): a call looks at a bounded number of the label's jobs, so it may take fewer than it could, even none, and still give a nextCursor",
});

const ErrorText = z.string().min(1).max(200).openapi({ description: "Only letters whose last error holds this text (case-sensitive)" });

export const ReplayBody = z
  .object({
    ids: z.array(JobId).min(1).max(10_000).optional(),
    all: z.boolean().optional(),
    failedFrom: Instant.optional(),
    failedTo: Instant.optional(),
    error: ErrorText.optional(),
    label: LabelFilter,
    delay: Delay.optional(),
    spread: Delay.optional().openapi({
      description:
        'Spread the replayed jobs at random over this long after their due time (e.g. "10m"), so a large replay does not reach a recovering endpoint at once',
    }),
    cursor: z.string().max(CURSOR_MAX_LENGTH).optional().openapi({ description: "nextCursor of the previous call (all or a filter): goes on from there" }),
    dryRun: DryRun,
    // The edits: each replayed job gets the same. Checked as an enqueue checks its fields.
    payload: JobBody.shape.payload.openapi({ description: "Replace each replayed job's payload (any JSON value, null included)" }),
    target: JobBody.shape.target.openapi({ description: "Replace each replayed job's delivery target (url, method, headers), as an enqueue's" }),
    webhookHeaders: WebhookHeadersBody.optional(),
    topic: TopicName.optional().openapi({
      description:
        "Replay into this topic: each letter becomes a new job there (a new id: ids name their topic; `movedTo` maps them) and leaves this topic's dead letters as a moved job",
    }),
  })
  .strict()
  .refine(
    (b) =>
      [b.ids !== undefined, b.all === true, b.failedFrom !== undefined || b.failedTo !== undefined || b.error !== undefined || b.label !== undefined].filter(
        Boolean,
      ).length === 1,
    {
      message: "give ids, or all: true, or a filter (failedFrom, failedTo, error, label)",
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
    movedTo: z
      .record(JobId, JobId)
      .optional()
      .openapi({ description: "With topic: each replayed letter's id, and the id of the job that took its place in the new topic" }),
    ...DryRunAnswer,
  })
  .openapi("Replayed");

export const DeadQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_DEAD_LIST_LIMIT),
  cursor: z.string().max(CURSOR_MAX_LENGTH).optional().openapi({ description: "nextCursor of the previous page" }),
  failedFrom: QueryInstant.optional(),
  failedTo: QueryInstant.optional(),
  label: LabelFilter,
});

export const PurgeQuery = z.object({
  failedFrom: QueryInstant.optional(),
  failedTo: QueryInstant.optional(),
  error: ErrorText.optional(),
  label: LabelFilter,
  cursor: z.string().max(CURSOR_MAX_LENGTH).optional().openapi({ description: "nextCursor of the previous call: goes on from there" }),
  dryRun: QueryFlag.openapi({
    description: "true: change nothing, and answer what this very call would purge (its count, first ids and nextCursor), by reads alone",
  }),
});

export const PurgeResult = z
  .object({
    purged: z.number().int(),
    nextCursor: z.string().nullable().openapi({ description: "Where to go on (pass it back as `cursor`); null when done" }),
    ...DryRunAnswer,
  })
  .openapi("Purged");
