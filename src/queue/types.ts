import { z } from "zod";
import { createdAtOfJobId } from "./ids.js";
import { backoffSchema, type Backoff } from "./policy/backoff.js";

/** Where the built-in http handler delivers a job. */
export interface Target {
  url: string;
  method?: string;
  headers?: Record<string, string>;
}

/**
 * What is stored for a job, in its record key; unchanged after enqueue but
 * by an upsert while the job is pending (lua/upsert.lua) or a replay with
 * edits while it is a dead letter (lua/edit-dead.lua). Its
 * id and topic are not in it: the key is made of them. Leaving them out saves
 * some 60 bytes a job, a fifth of a scheduled job's memory. So is its
 * createdAt since the records moved to a key per job (another ~27 bytes): it
 * is the time in the id's ULID, filled in when a record is read (parseRecord);
 * records written before carry it, and it reads the same.
 */
export interface JobRecord {
  /** Its labels (at most MAX_LABELS): the record's first field, so Lua finds them without decoding the payload (lua/lib/labels.lua). */
  labels?: string[];
  payload: unknown;
  createdAt: number;
  maxAttempts?: number;
  backoff?: Backoff;
  target?: Target;
  timeoutMs?: number;
  idempotencyKey?: string;
  /** The schedule whose occurrence made this job. */
  scheduleId?: string;
  /** That occurrence, epoch ms. */
  scheduledFor?: number;
  /** An ingested webhook's provider headers (lower-case names), for its handler: see src/producer/webhook-headers.ts. */
  webhookHeaders?: Record<string, string>;
  /** The flow key whose turns and limits the job goes by (lua/lib/flow.lua). */
  flowKey?: string;
  /** 1–9: a head start over the jobs of its key; absent is 0. */
  priority?: number;
  /** The job key an upsert stored it under (lua/upsert.lua): its record's last field as enqueued. */
  jobKey?: string;
  /** How many upserts replaced the record while the job was pending: written after jobKey by lua/upsert.lua. */
  replacements?: number;
  /** When the job ends as expired unless it started by then, epoch ms (lua/lib/expire.lua). */
  expiresAt?: number;
}

export type JobState = "scheduled" | "inflight" | "succeeded" | "dead" | "cancelled" | "dropped" | "moved" | "expired";

// Unknown keys are dropped, so records written with an id and topic (before they were left out) still read.
export const jobRecordSchema = z.object({
  labels: z.array(z.string()).optional(),
  payload: z.unknown(),
  createdAt: z.number(),
  maxAttempts: z.number().int().optional(),
  backoff: backoffSchema.optional(),
  target: z.object({ url: z.string(), method: z.string().optional(), headers: z.record(z.string(), z.string()).optional() }).optional(),
  timeoutMs: z.number().optional(),
  idempotencyKey: z.string().optional(),
  scheduleId: z.string().optional(),
  scheduledFor: z.number().optional(),
  webhookHeaders: z.record(z.string(), z.string()).optional(),
  flowKey: z.string().optional(),
  priority: z.number().int().optional(),
  jobKey: z.string().optional(),
  replacements: z.number().int().optional(),
  expiresAt: z.number().optional(),
}) satisfies z.ZodType<JobRecord>;

/** A record as stored: since records have a key of their own, without createdAt (the id's ULID time). */
const storedRecordSchema = jobRecordSchema.extend({ createdAt: z.number().optional() });

/**
 * Parses the JSON text of a job record; invalid data is a bug, so it throws.
 * A claim carries a record per job, up to a thousand at a time, so the
 * record as enqueue writes it — an object of known fields of the right
 * types — is checked by hand: in workerd zod cannot generate code for a
 * schema (no eval) and walks it instead, which was a tenth of a busy tick's
 * CPU. Anything else (a field to drop, a wrong type) goes through the
 * schema, for its result or its error; the two agree (replies.test.ts).
 */
export function parseRecord(text: string, id: string): JobRecord {
  const value: unknown = JSON.parse(text);
  const record = (isStoredRecord(value) ? value : storedRecordSchema.parse(value)) as Omit<JobRecord, "createdAt"> & { createdAt?: number };
  // Written without it: the time in the id's ULID, which enqueue mints from the same clock reading.
  if (record.createdAt === undefined) record.createdAt = createdAtOfJobId(id) ?? 0;
  return record as JobRecord;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** `v` is a record {@link jobRecordSchema} would return unchanged: known fields only, each of its type. */
function isStoredRecord(v: unknown): v is JobRecord {
  if (!isObject(v) || !("payload" in v) || ("createdAt" in v && !isNumber(v.createdAt))) return false;
  for (const key in v) {
    const field = v[key];
    switch (key) {
      case "payload":
      case "createdAt":
        break;
      case "maxAttempts":
        if (!Number.isSafeInteger(field)) return false;
        break;
      case "timeoutMs":
      case "scheduledFor":
      case "expiresAt":
        if (!isNumber(field)) return false;
        break;
      case "idempotencyKey":
      case "scheduleId":
      case "flowKey":
      case "jobKey":
        if (typeof field !== "string") return false;
        break;
      case "priority":
      case "replacements":
        if (!Number.isSafeInteger(field)) return false;
        break;
      case "labels":
        if (!Array.isArray(field) || !field.every((l) => typeof l === "string")) return false;
        break;
      case "target":
        if (!isStoredTarget(field)) return false;
        break;
      case "webhookHeaders":
        if (!isStringRecord(field)) return false;
        break;
      // A job's own backoff is rare: the schema checks it, and may reshape it.
      default:
        return false;
    }
  }
  return true;
}

function isStringRecord(v: unknown): boolean {
  if (!isObject(v)) return false;
  for (const name in v) if (typeof v[name] !== "string") return false;
  return true;
}

function isStoredTarget(v: unknown): boolean {
  if (!isObject(v) || typeof v.url !== "string") return false;
  for (const key in v) {
    const field = v[key];
    if (key === "method") {
      if (typeof field !== "string") return false;
    } else if (key === "headers") {
      if (!isObject(field)) return false;
      for (const name in field) if (typeof field[name] !== "string") return false;
    } else if (key !== "url") return false;
  }
  return true;
}

/** How an attempt ended, as its job's attempt history records it. */
type AttemptOutcome = "ok" | "retry" | "dead" | "expired" | "stale" | "replayed" | "replaced" | "dropped" | "edited" | "moved";

/** One entry of a job's attempt history: an attempt, or the marker of a dead-letter replay. */
export interface AttemptRecord {
  /** The attempt's number within its run (1 first); 0 on a replay, replacement or drop marker. */
  attempt: number;
  /** The job's run the entry belongs to: 1 until a dead-letter replay, one more after each (a replay marker opens its run). */
  run: number;
  /** When the handler started (for a pull consumer: when the job was claimed), epoch ms; null when unknown. */
  startedAt: number | null;
  /** How long the attempt ran until it settled (or until its lease was reaped), ms; null when unknown. */
  durationMs: number | null;
  /**
   * ok, retry, dead; "expired": the lease expired before the attempt settled;
   * "stale": the attempt settled after its lease had expired and the job had moved on;
   * "replayed": not an attempt but the replay of the dead job (startedAt: when), which opens the next run;
   * "replaced": not an attempt but an upsert that replaced the job while it waited for a retry (startedAt: when), which opens the next run;
   * "dropped": not an attempt but the end of a pending job its topic's maxLength dropped (startedAt: when);
   * "edited": not an attempt but a replay's change of the dead job's record (`changes`), before it was replayed;
   * "moved": not an attempt but the end of a dead job replayed into another topic as the job `movedTo`.
   */
  outcome: AttemptOutcome;
  /** "edited", "moved": the fields the replay changed (payload, target, webhookHeaders, topic). */
  changes?: string[];
  /** "moved": the id of the job that took its place in the other topic. */
  movedTo?: string;
  /** The HTTP status of the delivery's response (http deliveries that got one). */
  httpStatus?: number;
  /** The error text, at most 1 KB. */
  error?: string;
}

// As lua/lib/records.lua stores an entry: short names, since every live job carries its history.
const storedAttempt = z
  .object({
    n: z.number().int(),
    t: z.number().optional(),
    ms: z.number().optional(),
    o: z.enum(["ok", "retry", "dead", "expired", "stale", "replayed", "replaced", "dropped", "edited", "moved"]),
    r: z.number().int().optional(),
    st: z.number().int().optional(),
    e: z.string().optional(),
    c: z.array(z.string()).optional(),
    to: z.string().optional(),
  })
  .transform((s): AttemptRecord => {
    const r: AttemptRecord = { attempt: s.n, run: s.r ?? 1, startedAt: s.t ?? null, durationMs: s.ms ?? null, outcome: s.o };
    if (s.st !== undefined) r.httpStatus = s.st;
    if (s.e !== undefined) r.error = s.e;
    if (s.c !== undefined) r.changes = s.c;
    if (s.to !== undefined) r.movedTo = s.to;
    return r;
  });
// Scripts never store an empty history (cjson would encode it as {}): lua/lib/records.lua historyJson.
const storedHistory = z.array(storedAttempt);

export const metaSchema = z.object({
  a: z.number().int(),
  d: z.number().optional(),
  e: z.string().nullish(),
  /** When the current attempt was claimed. */
  s: z.number().optional(),
  h: storedHistory.optional(),
  /** A finished job's state (lua/lib/records.lua finishedMeta); absent while the job lives. */
  st: z.enum(["succeeded", "dead", "cancelled", "dropped", "moved", "expired"]).optional(),
  /** When a finished job finished, epoch ms. */
  f: z.number().optional(),
  /** A keyed job's flow key ("" the default lane) and priority, from its first claim (lua/lib/flow.lua). */
  k: z.string().optional(),
  p: z.number().optional(),
});
/** A job's meta as stored (lua/lib/records.lua): live, or finished ("st"). */
export type JobMeta = z.infer<typeof metaSchema>;

/** A dead-letter entry. */
const deadEntrySchema = z.object({
  id: z.string(),
  attempts: z.number().int(),
  lastError: z.string().nullable(),
  failedAt: z.number(),
  history: storedHistory.default([]),
  job: jobRecordSchema,
});
export type DeadEntry = z.infer<typeof deadEntrySchema>;

/** Redis replies arrive as strings, integers or null; Lua numbers as integers. */
export const intReply = z.number().int();
/** A number as Redis stores it in a string (a score, a hash field). */
export const NUMERIC_TEXT = /^-?\d+(\.\d+)?$/;
export const numericReply = z.union([z.number(), z.string().regex(NUMERIC_TEXT)]).transform(Number);
export const nullableString = z.string().nullable();
export const flatHash = z.array(z.string()).transform((flat) => {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
});
/** A metrics vector as stored (JSON text of numbers, src/queue/metrics.ts). */
export const vectorText = z.string().transform((text, ctx) => {
  const parsed = z.array(z.number()).safeParse(JSON.parse(text));
  if (!parsed.success) ctx.addIssue({ code: "custom", message: "not a metrics vector" });
  return parsed.data ?? [];
});

/** The job each occurrence of a schedule stores: the fields of POST /v1/jobs that describe a job. */
export interface JobTemplate {
  topic: string;
  payload: unknown;
  target?: Target;
  maxAttempts?: number;
  backoff?: Backoff;
  timeoutMs?: number;
}

/** What a schedule is, as its owner set it (PUT /v1/schedules/:id), normalized. */
export interface ScheduleDefinition {
  cron?: string;
  /** Interval, ms. */
  every?: number;
  timezone: string;
  startAt?: number;
  endAt?: number;
  limit?: number;
  /** Occurrences missed by more than this collapse into one job for the latest of them, ms. */
  grace: number;
  /** For `every`: its first occurrence, epoch ms (startAt, else one interval after creation). */
  anchor: number;
  job: JobTemplate;
  createdAt: number;
  updatedAt: number;
}

/** Where a schedule stands. Every write but a fire bumps `rev`; a fire moves `next`. */
export interface ScheduleState {
  rev: number;
  /** The next occurrence to fire, epoch ms; null when paused or ended. */
  next: number | null;
  runs: number;
  lastRunAt: number | null;
  lastJobId: string | null;
  paused: boolean;
}

export interface StoredSchedule {
  id: string;
  definition: ScheduleDefinition;
  state: ScheduleState;
}

const targetSchema = z.object({ url: z.string(), method: z.string().optional(), headers: z.record(z.string(), z.string()).optional() });
// A stored time or interval: any number JSON gives, ±Infinity included (a literal past a double's range, such as
// 1e400, parses to it). A schedule stored with one still parses, so its listing shows the field as unreadable
// (src/schedules/shown-times.ts) instead of failing.
const storedNumber = z.union([z.number(), z.literal(Number.POSITIVE_INFINITY), z.literal(Number.NEGATIVE_INFINITY)]);
const definitionSchema = z.object({
  cron: z.string().optional(),
  every: storedNumber.optional(),
  timezone: z.string(),
  startAt: storedNumber.optional(),
  endAt: storedNumber.optional(),
  limit: z.number().optional(),
  grace: storedNumber,
  anchor: storedNumber,
  job: z.object({
    topic: z.string(),
    payload: z.unknown(),
    target: targetSchema.optional(),
    maxAttempts: z.number().optional(),
    backoff: z.custom<Backoff>().optional(),
    timeoutMs: z.number().optional(),
  }),
  createdAt: storedNumber,
  updatedAt: storedNumber,
});
const stateSchema = z.object({
  rev: z.number().int(),
  next: storedNumber.nullable(),
  runs: z.number().int(),
  lastRunAt: storedNumber.nullable(),
  lastJobId: z.string().nullable(),
  paused: z.boolean(),
});

/** Parses the JSON text of a stored schedule definition; invalid data is a bug, so it throws. */
export const parseDefinition = (text: string) => definitionSchema.parse(JSON.parse(text)) as ScheduleDefinition;
/** Parses the JSON text of a stored schedule state. */
export const parseState = (text: string): ScheduleState => stateSchema.parse(JSON.parse(text));
