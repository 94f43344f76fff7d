import { z } from "@hono/zod-openapi";
import {
  LATEST_SCHEDULE_TIME_MS,
  MAX_MAX_ATTEMPTS,
  MAX_SCHEDULE_EVERY_DAYS,
  MAX_SCHEDULE_EVERY_MS,
  MAX_TIMEOUT_MS,
  MIN_MAX_ATTEMPTS,
  MIN_TIMEOUT_MS,
} from "../limits.js";
import { cronProblem, isTimeZone } from "../schedules/occurrences.js";
import { BackoffBody, Duration, Instant, partialFields, TargetBody, TopicName } from "./schema-parts.js";

/** A schedule's id, chosen by its owner (PUT is an upsert). */
export const ScheduleId = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,128}$/, "1–128 characters of A–Z a–z 0–9 . _ -")
  .openapi({ example: "weekday-digest" });

const DEFAULT_GRACE_MS = 60_000;

const LATEST = new Date(LATEST_SCHEDULE_TIME_MS).toISOString();
// A later instant would make dates no client reads (ISO 8601 with a 6-digit year), or none at all past 8.64e15.
const ScheduleInstant = Instant.refine((ms) => ms <= LATEST_SCHEDULE_TIME_MS, `must be no later than ${LATEST}`);

export const ScheduleBody = z
  .object({
    cron: z
      .string()
      .max(200)
      .optional()
      .openapi({ description: "5 fields (minute hour day-of-month month day-of-week), or 6 with leading seconds", example: "0 9 * * 1-5" }),
    every: Duration.refine((ms) => ms >= 1_000, "must be at least 1 s")
      .refine((ms) => ms <= MAX_SCHEDULE_EVERY_MS, `must be at most ${MAX_SCHEDULE_EVERY_DAYS} days`)
      .optional()
      .openapi({ description: `An interval such as "30s" (at least 1 s, at most ${MAX_SCHEDULE_EVERY_DAYS} days)` }),
    timezone: z.string().max(64).default("UTC").openapi({ description: "IANA time zone the cron expression is read in", example: "Europe/Berlin" }),
    startAt: ScheduleInstant.optional().openapi({
      description: `No occurrence before this; for \`every\`, the first occurrence (default one interval after creation). At most ${LATEST}`,
    }),
    endAt: ScheduleInstant.optional().openapi({ description: `No occurrence after this (inclusive). At most ${LATEST}; no occurrence falls later anyway` }),
    limit: z.number().int().min(1).max(1_000_000_000).optional().openapi({ description: "Most occurrences in all" }),
    grace: Duration.optional().openapi({
      description: 'Occurrences missed by more than this (e.g. after an outage) collapse into one job for the latest of them. Default "1m".',
    }),
    // The job template: the fields and rules of POST /v1/jobs.
    topic: TopicName,
    payload: z.unknown().optional().openapi({ description: "Any JSON value" }),
    target: TargetBody.optional(),
    maxAttempts: z.number().int().min(MIN_MAX_ATTEMPTS).max(MAX_MAX_ATTEMPTS).optional(),
    backoff: BackoffBody.optional(),
    timeoutMs: z.number().int().min(MIN_TIMEOUT_MS).max(MAX_TIMEOUT_MS).optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if ((b.cron === undefined) === (b.every === undefined)) ctx.addIssue({ code: "custom", path: ["cron"], message: "give exactly one of cron or every" });
    if (!isTimeZone(b.timezone)) ctx.addIssue({ code: "custom", path: ["timezone"], message: `${JSON.stringify(b.timezone)} is not an IANA time zone` });
    if (b.cron !== undefined) {
      const why = cronProblem(b.cron);
      if (why) ctx.addIssue({ code: "custom", path: ["cron"], message: `${JSON.stringify(b.cron)}: ${why}` });
    }
    if (b.startAt !== undefined && b.endAt !== undefined && b.endAt < b.startAt)
      ctx.addIssue({ code: "custom", path: ["endAt"], message: "is before startAt" });
  })
  .transform((b) => ({ ...b, grace: b.grace ?? DEFAULT_GRACE_MS }))
  .openapi("ScheduleRequest");
export type ScheduleBody = z.output<typeof ScheduleBody>;

export const ScheduleView = z
  .object({
    id: ScheduleId,
    cron: z.string().nullable(),
    every: z.number().nullable().openapi({ description: "Interval in ms" }),
    timezone: z.string(),
    startAt: z.string().nullable(),
    endAt: z.string().nullable(),
    limit: z.number().nullable(),
    grace: z.number().openapi({ description: "ms" }),
    topic: TopicName,
    payload: z.unknown(),
    target: z.object({ url: z.string(), method: z.string().optional(), headers: z.record(z.string(), z.string()).optional() }).optional(),
    maxAttempts: z.number().optional(),
    backoff: z.unknown().optional(),
    timeoutMs: z.number().optional(),
    paused: z.boolean(),
    nextRunAt: z.string().nullable().openapi({ description: "ISO 8601 with the time zone's offset; null when the schedule has ended or is paused" }),
    nextRuns: z.array(z.string()).openapi({ description: "The next 5 occurrences (fewer near endAt or limit; none while paused)" }),
    runs: z.number().int().openapi({ description: "Occurrences fired (a collapsed catch-up counts once)" }),
    lastRunAt: z.string().nullable().openapi({ description: "The occurrence the last job was for" }),
    lastJobId: z.string().nullable(),
    lastJobState: z
      .enum(["scheduled", "inflight", "succeeded", "dead", "cancelled", "dropped", "moved", "expired"])
      .nullable()
      .openapi({ description: "null when there is none or it is past retention" }),
    createdAt: z.string().nullable(),
    updatedAt: z.string().nullable(),
    unreadable: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .openapi({
        description:
          "Fields of the stored schedule that cannot be shown (they read null or []), e.g. a time past the largest date written before the API refused one. " +
          "Absent when every field could be shown; PUT the schedule again (or DELETE it) to mend it.",
      }),
  })
  .openapi("Schedule");

export const ScheduleList = z
  .object({
    schedules: z.array(ScheduleView),
    nextCursor: z.string().nullable().openapi({ description: "Pass as ?cursor= for the next page; null on the last" }),
    ...partialFields,
  })
  .openapi("ScheduleList");
