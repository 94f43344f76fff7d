// The parts the API's schemas share: names and ids, durations and instants
// (in a body and in a query string), a delivery target, a backoff, the
// problem+json body. Each resource's schemas are in its own module
// (job-, topic-, dead-, stats-, schedule-schemas.ts); schemas.ts gathers them.
import { z } from "@hono/zod-openapi";
import { isConnectionHeader } from "../handlers/headers.js";
import { TOPIC_NAME_PATTERN, TOPIC_REF_PATTERN } from "../queue/ids.js";
import { parseDuration } from "../queue/policy/duration.js";
import { PROBLEM_TYPES } from "./problem.js";
import {
  FLOW_KEY_MAX_BYTES,
  LABEL_MAX_LENGTH,
  LABEL_PATTERN,
  MAX_LABELS,
  JOB_KEY_MAX_BYTES,
  MAX_BACKOFF_FACTOR,
  MAX_BACKOFF_SCHEDULE_DELAYS,
  MAX_DELAY_DAYS,
  MAX_DELAY_MS,
  TOPIC_NAME_MAX_LENGTH,
  DRY_RUN_IDS,
  JOB_ID_MAX_LENGTH,
} from "../limits.js";

export const TopicName = z
  .string()
  .regex(TOPIC_NAME_PATTERN, `1–${TOPIC_NAME_MAX_LENGTH} characters of A–Z a–z 0–9 . _ -, but not . or ..`)
  .openapi({ example: "emails" });

/** A topic, or a topic derived from one (`<topic>@<subscription>`, `<topic>@_callbacks`): where the API reads or manages a topic. */
export const TopicRef = z.string().regex(TOPIC_REF_PATTERN, "a topic name, or <topic>@<subscription> or <topic>@_callbacks").openapi({ example: "emails" });

/**
 * Longest cursor of a job or dead-letter listing or walk: base64 of a
 * letter, a score and the last job id, at the longest id (a derived
 * topic's on another shard).
 */
export const CURSOR_MAX_LENGTH = 256;

export const JobId = z.string().max(JOB_ID_MAX_LENGTH).openapi({
  example: "emails.01JD8X3Q5T4W9Y7ZC2B6N0M1KR",
  description:
    "`<topic>.<ULID>` on the main shard, `<shard>~<topic>.<ULID>` on another; `<topic>` may be a derived one: `emails@audit.<ULID>` (a subscription's delivery of job `emails.<ULID>`), `emails@_callbacks.<ULID>` (a callback)",
});

/** A flag in a query string: "true" or "false" (the default); parsed to a boolean. */
export const QueryFlag = z
  .enum(["true", "false"])
  .default("false")
  .transform((v) => v === "true");

/** A bulk cancel's, replay's or purge's `dryRun`: answer what the call would touch, and change nothing. */
export const DryRun = z
  .boolean()
  .optional()
  .openapi({
    description:
      "true: change nothing, and answer what this very call would do — its count, the first ids it would take (`ids`) and its nextCursor — by reads alone. " +
      "A walk's dry run goes step by step as the real one does: pass nextCursor back to count on",
  });

/** A dry run's answer beside the count: the first ids the call would take. */
export const DryRunAnswer = {
  dryRun: z.literal(true).optional().openapi({ description: "Present when the call was a dry run: nothing was changed" }),
  ids: z
    .array(JobId)
    .max(DRY_RUN_IDS)
    .optional()
    .openapi({ description: `With dryRun: the first ${DRY_RUN_IDS} ids the call would take, in the order it would take them` }),
};

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

export const Delay = Duration.refine((ms) => ms <= MAX_DELAY_MS, `must be at most ${MAX_DELAY_DAYS} days`);

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
export const KeyText = z.string().regex(/^(?:[^\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/, "well-formed Unicode (no lone surrogates)");

/** Whether `text` holds a control character (U+0000–U+001F, U+007F). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** A flow key: well-formed text of 1 to FLOW_KEY_MAX_BYTES UTF-8 bytes without control characters (they separate its parts in Redis). */
export const FlowKey = KeyText.min(1)
  .refine((k) => !hasControlCharacter(k), "no control characters")
  .refine((k) => new TextEncoder().encode(k).length <= FLOW_KEY_MAX_BYTES, `at most ${FLOW_KEY_MAX_BYTES} UTF-8 bytes`)
  .openapi({ example: "tenant-42", description: "The flow key (a tenant, customer or destination host) whose turns and limits the job goes by" });

/** A label (a job's `labels`, a listing's or bulk call's `label` filter): 1 to LABEL_MAX_LENGTH characters of LABEL_PATTERN. */
export const Label = z
  .string()
  .min(1)
  .max(LABEL_MAX_LENGTH)
  .regex(LABEL_PATTERN, "letters, digits and : . _ / - only")
  .openapi({ example: "tenant:42", description: `A label: 1 to ${LABEL_MAX_LENGTH} characters of letters, digits and : . _ / -` });

/** A job's labels: at most MAX_LABELS (a label given twice counts once, and is stored once). */
export const Labels = z
  .array(Label)
  .max(MAX_LABELS)
  .openapi({
    example: ["tenant:42", "invoice"],
    description: `At most ${MAX_LABELS} labels (a repeat is stored once): listings, bulk cancels and dead-letter walks filter by one`,
  });

/** A job key (an upsert's `jobKey`): well-formed text of 1 to JOB_KEY_MAX_BYTES UTF-8 bytes. */
export const JobKey = KeyText.min(1)
  .refine((k) => new TextEncoder().encode(k).length <= JOB_KEY_MAX_BYTES, `at most ${JOB_KEY_MAX_BYTES} UTF-8 bytes`)
  .openapi({
    example: "user-42:digest",
    description: "Upsert by this key: a topic holds at most one pending job under it, which a later upsert changes (onConflict) rather than adding one",
  });

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
    topic: z.string().optional().openapi({
      description: "With urn:delayline:topic-full: the topic whose maxLength refused the request; with urn:delayline:flow-key-full: the flow key's topic.",
    }),
    pending: z.number().int().optional().openapi({
      description: "With urn:delayline:topic-full: the topic's pending jobs (scheduled and waiting) then; with urn:delayline:flow-key-full: the flow key's.",
    }),
    maxLength: z.number().int().optional().openapi({ description: "With urn:delayline:topic-full: the topic's maxLength." }),
    flowKey: z.string().optional().openapi({ description: "With urn:delayline:flow-key-full: the flow key whose maxKeyLength refused the request." }),
    maxKeyLength: z
      .number()
      .int()
      .optional()
      .openapi({ description: "With urn:delayline:flow-key-full: the flow key's maxKeyLength (its own, else its topic's)." }),
  })
  .openapi("Problem");

export const iso = (ms: number) => new Date(ms).toISOString();

/** What an answer read across shards says of the shards that did not answer (fields of its object). */
export const partialFields = {
  partial: z.boolean().openapi({ description: "true when a shard did not answer in time: what it holds is missing from this answer, and from `total`" }),
  missingShards: z.array(z.string()).openapi({
    description: "the shards that did not answer in time (down, at a limit, or slower than the deadline), in the order DELAYLINE_SHARDS lists them",
  }),
};

/** The {@link partialFields} of an answer that missed `missing`. */
export const partialOf = (missing: string[]) => ({ partial: missing.length > 0, missingShards: missing });
