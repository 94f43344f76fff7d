import { z } from "zod";
import { SIGNATURE_SCHEMES, whsecProblem, type SignatureScheme } from "./client/signature.js";
import {
  DEFAULT_DEAD_LETTER_CAP,
  DEFAULT_IDEMPOTENCY_WINDOW_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_MAX_TOPICS,
  DEFAULT_METRICS_TOPICS,
  DEFAULT_RETENTION_MS,
  DEFAULT_SIGNATURE_SCHEME,
  DEFAULT_TIMEOUT_MS,
  MAX_MAX_ATTEMPTS,
  MAX_TIMEOUT_MS,
  MAX_WIRE_VALUE_BYTES,
  MIN_MAX_ATTEMPTS,
  MIN_SECRET_LENGTH,
  MIN_TIMEOUT_MS,
  REQUEST_OVERHEAD_BYTES,
  UPSTASH_REQUEST_BYTES,
} from "./limits.js";

/** How a chunk's (or a loop's) settled jobs ended: acked, retried, dead, or settled by someone else first. */
export interface Outcomes {
  ack: number;
  retry: number;
  dead: number;
  stale: number;
}

/** No outcomes yet. */
export const noOutcomes = (): Outcomes => ({ ack: 0, retry: 0, dead: 0, stale: 0 });

/** Adds `more` into `into`. */
export function addOutcomes(into: Outcomes, more: Outcomes): void {
  into.ack += more.ack;
  into.retry += more.retry;
  into.dead += more.dead;
  into.stale += more.stale;
}

/** What a TickChunk invocation reports (src/tick/chunk.ts). */
export interface TickChunkReport {
  claimed: number;
  outcomes: Outcomes;
  subrequests: number;
  /** The topic still had a full chunk's worth ready: more work remains. */
  more: boolean;
  /** The topic's earliest due job after the last chunk, or null. */
  nextDueAt?: number | null;
  /** When the topic can next make progress (its next due job, a retry the chunk scheduled, a freed slot, the rate's next token), or null for never. */
  nextLookAt?: number | null;
  /** What held ready jobs back in the last claim (see Queue.claim). */
  heldBy?: "concurrency" | "rate" | "paused" | "mode" | "bytes" | null;
}

/**
 * The Worker's bindings as Cloudflare hands them over: `[vars]` from
 * wrangler.toml and secrets, all strings. Read them through {@link settings},
 * never directly.
 */
export interface Env {
  /** Static files (the API reference at /docs), from `[assets]` in wrangler.toml. */
  ASSETS?: { fetch(request: Request): Promise<Response> };
  /** This Worker's TickChunk entrypoint (service binding), for fanning chunks out to invocations of their own. */
  TICK_RUNNER?: {
    run(topic: string, max: number): Promise<TickChunkReport>;
    drain(topic: string, horizonMs: number, handovers?: number): Promise<TickChunkReport>;
    /** Goes on with a tick loop whose invocation ran out of subrequests: the rest of its window, with a budget of its own. */
    continueTick(scheduledTime: number, windowEnd: number, handovers: number): Promise<{ ended: string }>;
  };
  UPSTASH_REDIS_REST_URL?: string;
  UPSTASH_REDIS_REST_TOKEN?: string;
  DELAYLINE_TOKEN?: string;
  DELAYLINE_PREFIX?: string;
  ALLOW_PRIVATE_TARGETS?: string;
  TICK_POLL_MS?: string;
  REDIS_TIMEOUT_MS?: string;
  REDIS_MAX_REQUEST_BYTES?: string;
  MAX_PAYLOAD_BYTES?: string;
  MAX_BODY_BYTES?: string;
  RETENTION_MS?: string;
  DEAD_LETTER_CAP?: string;
  IDEMPOTENCY_WINDOW_MS?: string;
  DEFAULT_MAX_ATTEMPTS?: string;
  DEFAULT_TIMEOUT_MS?: string;
  SIGNING_SECRET?: string;
  SIGNING_SCHEME?: string;
  TICK_CHUNK?: string;
  TICK_LEAD_MS?: string;
  TICK_CONCURRENCY?: string;
  TICK_SUBREQUEST_BUDGET?: string;
  TICK_OVERLAP_MS?: string;
  TICK_FANOUT?: string;
  TICK_IDLE_PEEK_MS?: string;
  MAX_TOPICS?: string;
  METRICS_TOPICS?: string;
}

const bool = z
  .enum(["true", "false", "1", "0", ""])
  .default("false")
  .transform((v) => v === "true" || v === "1");

const wholeNumber = (min: number, max: number) => (v: string, ctx: z.RefinementCtx) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    ctx.addIssue({ code: "custom", message: `must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return n;
};

/**
 * A byte size that reaches Redis inside one request (a payload, a body's
 * jobs): bounded by Upstash's request limit through the rule of
 * MAX_WIRE_VALUE_BYTES (src/limits.ts), which the message names.
 */
const wireBytes = (min: number, fallback: number) =>
  z
    .string()
    .default(String(fallback))
    .transform((v, ctx) => {
      const n = Number(v);
      if (Number.isInteger(n) && n > MAX_WIRE_VALUE_BYTES) {
        ctx.addIssue({
          code: "custom",
          message: `must be at most ${MAX_WIRE_VALUE_BYTES} (2 × value + ${REQUEST_OVERHEAD_BYTES} bytes of record and arguments must fit Upstash's ${UPSTASH_REQUEST_BYTES}-byte request limit: JSON escaping can double a value on the wire), got ${JSON.stringify(v)}`,
        });
        return z.NEVER;
      }
      return wholeNumber(min, MAX_WIRE_VALUE_BYTES)(v, ctx);
    });

const int = (min: number, max: number, fallback: number) => z.string().default(String(fallback)).transform(wholeNumber(min, max));

/** A whole number whose default depends on other settings (undefined when unset). */
const intOrDerived = (min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => (v === undefined ? undefined : wholeNumber(min, max)(v, ctx)));

const SettingsSchema = z
  .object({
    UPSTASH_REDIS_REST_URL: z.url({ protocol: /^https?$/, error: "must be the http(s) URL of Upstash or the local bridge" }),
    UPSTASH_REDIS_REST_TOKEN: z.string({ error: "is required" }).min(1, "is required"),
    DELAYLINE_TOKEN: z
      .string({ error: "is required (one or more comma-separated API tokens)" })
      .transform((v) =>
        v
          .split(",")
          .map((t) => t.trim())
          .filter(Boolean),
      )
      .refine((tokens) => tokens.length > 0 && tokens.every((t) => t.length >= 8), "needs at least one token of 8 or more characters"),
    DELAYLINE_PREFIX: z
      .string()
      .default("dl:{main}")
      .refine((v) => /^[^\s{}]*\{[^\s{}]+\}[^\s{}]*$/.test(v), "must contain exactly one {hash tag}, e.g. dl:{main}, so every key lives in one slot"),
    ALLOW_PRIVATE_TARGETS: bool,
    TICK_POLL_MS: int(50, 60_000, 1_000),
    REDIS_TIMEOUT_MS: int(100, 60_000, 5_000),
    // Lowers only: MAX_PAYLOAD_BYTES and MAX_BODY_BYTES are bounded by Upstash's limit (MAX_WIRE_VALUE_BYTES).
    REDIS_MAX_REQUEST_BYTES: int(65_536, UPSTASH_REQUEST_BYTES, UPSTASH_REQUEST_BYTES),
    MAX_PAYLOAD_BYTES: wireBytes(1, DEFAULT_MAX_PAYLOAD_BYTES),
    MAX_BODY_BYTES: wireBytes(1_024, DEFAULT_MAX_BODY_BYTES),
    RETENTION_MS: int(1_000, 30 * 86_400_000, DEFAULT_RETENTION_MS),
    DEAD_LETTER_CAP: int(1, 1_000_000, DEFAULT_DEAD_LETTER_CAP),
    IDEMPOTENCY_WINDOW_MS: int(1_000, 30 * 86_400_000, DEFAULT_IDEMPOTENCY_WINDOW_MS),
    DEFAULT_MAX_ATTEMPTS: int(MIN_MAX_ATTEMPTS, MAX_MAX_ATTEMPTS, DEFAULT_MAX_ATTEMPTS),
    DEFAULT_TIMEOUT_MS: int(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS, DEFAULT_TIMEOUT_MS),
    SIGNING_SECRET: z.string().min(MIN_SECRET_LENGTH, `must be at least ${MIN_SECRET_LENGTH} characters`).optional(),
    SIGNING_SCHEME: z.enum(SIGNATURE_SCHEMES, { error: 'must be "delayline" or "standard"' }).default(DEFAULT_SIGNATURE_SCHEME),
    TICK_CHUNK: int(1, 1_000, 100),
    // Unset: TICK_POLL_MS, at most 1,000 (see Settings.tickLeadMs).
    TICK_LEAD_MS: intOrDerived(0, 60_000),
    TICK_CONCURRENCY: int(1, 1_000, 50),
    TICK_SUBREQUEST_BUDGET: int(10, 100_000, 10_000),
    TICK_OVERLAP_MS: int(0, 600_000, 15_000),
    TICK_FANOUT: int(0, 30, 4),
    // At most 25 s: a producer covers jobs due within it from its own invocation (waitUntil lasts 30 s).
    TICK_IDLE_PEEK_MS: int(0, 25_000, 20_000),
    MAX_TOPICS: int(1, 1_000_000, DEFAULT_MAX_TOPICS),
    METRICS_TOPICS: int(0, 10_000, DEFAULT_METRICS_TOPICS),
  })
  .superRefine((s, ctx) => {
    const problem = s.SIGNING_SCHEME === "standard" && s.SIGNING_SECRET !== undefined ? whsecProblem(s.SIGNING_SECRET) : null;
    if (problem) ctx.addIssue({ code: "custom", path: ["SIGNING_SECRET"], message: `with SIGNING_SCHEME=standard, must be ${problem}` });
  });

/** Every setting's name; `npm start` passes any of them found in its environment to the Worker. */
export const SETTING_NAMES = Object.keys(SettingsSchema.shape) as Array<keyof Env>;

/** Settings parsed from {@link Env}, with defaults applied. */
export interface Settings {
  /** Upstash REST URL (or the local bridge). Required. */
  redisUrl: string;
  /** Upstash REST token. Required. */
  redisToken: string;
  /** API bearer tokens; several allow rotation. From comma-separated `DELAYLINE_TOKEN`. Required. */
  apiTokens: string[];
  /** Key prefix with a hash tag. Default `dl:{main}`. */
  prefix: string;
  /** Deliver to loopback and private addresses. Default false (true under `npm start`). */
  allowPrivateTargets: boolean;
  /** Longest sleep between tick rounds. Default 1,000 ms (50–60,000). */
  tickPollMs: number;
  /** A Redis request slower than this counts as an outage. Default 5,000 ms. */
  redisTimeoutMs: number;
  /**
   * Largest request the Redis REST service takes. Default 10,485,760 (Upstash's
   * 10 MB, as the bridge enforces it); lower for a service (or a bridge,
   * BRIDGE_MAX_REQUEST_BYTES) with a smaller cap. A batch enqueue or schedule
   * write whose request would pass REQUEST_BUDGET_PERCENT (95%) of it is
   * refused with a 413 before anything is sent.
   */
  redisMaxRequestBytes: number;
  /** Largest job payload, serialized. Default 262,144 bytes (256 KiB); at most MAX_WIRE_VALUE_BYTES (4.5 MiB, Upstash's request limit). */
  maxPayloadBytes: number;
  /** Largest request body; checked before parsing. Default 4 MiB; at most MAX_WIRE_VALUE_BYTES (4.5 MiB, Upstash's request limit). */
  maxBodyBytes: number;
  /** Finished jobs stay readable this long. Default 3,600,000 ms (1 h). */
  retentionMs: number;
  /** Dead letters kept per topic; the oldest are trimmed. Default 10,000. */
  deadLetterCap: number;
  /** How long an idempotency key is remembered. Default 86,400,000 ms (24 h). */
  idempotencyWindowMs: number;
  /** Attempts for topics that set none. Default 5. */
  defaultMaxAttempts: number;
  /** Handler timeout for topics that set none. Default 30,000 ms. */
  defaultTimeoutMs: number;
  /** Signs http deliveries of topics without their own signingSecret. Default: unsigned. */
  signingSecret?: string;
  /** How topics that set no signatureScheme sign deliveries. Default `delayline`. */
  signatureScheme: SignatureScheme;
  /** Most jobs one claim takes per topic per round. Default 100. */
  tickChunk: number;
  /**
   * The tick claims jobs of topics without a rate or concurrency limit up to
   * this long before they are due and starts each at its due time, so a
   * steady trickle is carried by a few claims and starts on time. Such a job
   * is in flight from its claim: it can no longer be cancelled or
   * rescheduled. Default TICK_POLL_MS, at most 1,000 ms; 0 claims only due jobs.
   */
  tickLeadMs: number;
  /** Most handlers running at once in one tick, across topics. Default 50. */
  tickConcurrency: number;
  /**
   * Most subrequests (Redis REST calls + outbound fetches) one tick invocation
   * makes. Default 10,000 (Cloudflare's paid plan allows 10,000 per
   * invocation); the free plan allows 50: use 45 there, with TICK_CHUNK 10.
   */
  tickSubrequestBudget: number;
  /** How long a tick runs past its minute, so a late next cron still finds no gap. Default 15,000 ms. */
  tickOverlapMs: number;
  /** Extra invocations (TickChunk via the TICK_RUNNER service binding) a round may start for a topic with a backlog. Default 4; 0 turns fan-out off. */
  tickFanout: number;
  /**
   * When nothing is due within this long, the tick stops polling every
   * TICK_POLL_MS and looks only this often; producers then start jobs due
   * sooner themselves. Default 20,000 ms (at most 25,000); 0 keeps the tick polling.
   */
  tickIdlePeekMs: number;
  /** Most topics that may exist; enqueueing to or configuring one more answers 422. Default 10,000. */
  maxTopics: number;
  /** Topics /metrics gives series of their own (the busiest); the rest are summed under topic="(others)". Default 100; 0 sums all. */
  metricsTopics: number;
}

/** Bad deployment settings; the message names each offending setting. */
export class SettingsError extends Error {
  override name = "SettingsError";
}

const cache = new WeakMap<object, Settings>();

/** A setting that breaks its rule, e.g. `{ setting: "SIGNING_SECRET", message: "must be at least 16 characters" }`. */
export interface SettingProblem {
  setting: string;
  message: string;
}

// Empty strings mean "unset" so `[vars]` can list a setting without a value.
const present = (env: Env) => Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string" && v !== ""));

/**
 * Checks `env` against the Worker's settings schema without building
 * anything: every bad setting with its rule, or an empty list. `npm start`
 * calls it before it starts a process, so a bad value fails there at once.
 */
export function validateSettings(env: Env): SettingProblem[] {
  const parsed = SettingsSchema.safeParse(present(env));
  return parsed.success ? [] : problemsOf(parsed.error);
}

const problemsOf = (error: z.ZodError): SettingProblem[] => error.issues.map((i) => ({ setting: i.path.join("."), message: i.message }));

/**
 * Parses and caches the settings of one `env`. Throws {@link SettingsError}
 * naming every bad setting, so a misconfigured deployment fails loudly on its
 * first request instead of misbehaving later.
 */
export function settings(env: Env): Settings {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = SettingsSchema.safeParse(present(env));
  if (!parsed.success) {
    const problems = problemsOf(parsed.error).map((p) => `${p.setting} ${p.message}`);
    throw new SettingsError(`invalid delayline settings: ${problems.join("; ")}`);
  }
  const d = parsed.data;
  const result: Settings = {
    redisUrl: d.UPSTASH_REDIS_REST_URL,
    redisToken: d.UPSTASH_REDIS_REST_TOKEN,
    apiTokens: d.DELAYLINE_TOKEN,
    prefix: d.DELAYLINE_PREFIX,
    allowPrivateTargets: d.ALLOW_PRIVATE_TARGETS,
    tickPollMs: d.TICK_POLL_MS,
    redisTimeoutMs: d.REDIS_TIMEOUT_MS,
    redisMaxRequestBytes: d.REDIS_MAX_REQUEST_BYTES,
    maxPayloadBytes: d.MAX_PAYLOAD_BYTES,
    maxBodyBytes: d.MAX_BODY_BYTES,
    retentionMs: d.RETENTION_MS,
    deadLetterCap: d.DEAD_LETTER_CAP,
    idempotencyWindowMs: d.IDEMPOTENCY_WINDOW_MS,
    defaultMaxAttempts: d.DEFAULT_MAX_ATTEMPTS,
    defaultTimeoutMs: d.DEFAULT_TIMEOUT_MS,
    tickChunk: d.TICK_CHUNK,
    tickLeadMs: d.TICK_LEAD_MS ?? Math.min(d.TICK_POLL_MS, 1_000),
    tickConcurrency: d.TICK_CONCURRENCY,
    tickSubrequestBudget: d.TICK_SUBREQUEST_BUDGET,
    tickOverlapMs: d.TICK_OVERLAP_MS,
    tickFanout: d.TICK_FANOUT,
    tickIdlePeekMs: d.TICK_IDLE_PEEK_MS,
    maxTopics: d.MAX_TOPICS,
    metricsTopics: d.METRICS_TOPICS,
    signatureScheme: d.SIGNING_SCHEME,
  };
  if (d.SIGNING_SECRET !== undefined) result.signingSecret = d.SIGNING_SECRET;
  cache.set(env, result);
  return result;
}
