import { z } from "zod";
import { SIGNATURE_SCHEMES, type SignatureScheme } from "../protocol/signature-schemes.js";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY_STEP_MS, DEFAULT_SIGNATURE_SCHEME, DEFAULT_TIMEOUT_MS, DEFAULT_WEIGHT } from "../limits.js";
import { DEFAULT_BACKOFF, type Backoff } from "./policy/backoff.js";

/**
 * A topic's flow settings: the limits and weight each of its flow keys gets
 * unless the key has its own (lua/lib/flow.lua). Every field is optional.
 */
export interface FlowSettings {
  /** Jobs per second one key may start (GCRA); unset: no per-key rate. */
  ratePerSec?: number;
  /** Jobs one key may start at once after idling; default max(1, floor(ratePerSec)). */
  burst?: number;
  /** Most jobs of one key in flight at once; unset: no per-key limit. */
  parallelism?: number;
  /** Jobs a key starts per turn when keys compete; default 1. The default lane takes the topic's. */
  weight?: number;
  /** The head start of one level of priority, ms; default {@link DEFAULT_PRIORITY_STEP_MS} (10 s). */
  priorityStepMs?: number;
}

/** What an enqueue does at a topic's maxLength or a flow key's maxKeyLength: refuse the jobs (`reject`), or store them and drop the oldest pending jobs (`dropOldest`: the topic's, or the key's). */
export const OVERFLOW_POLICIES = ["reject", "dropOldest"] as const;
export type OverflowPolicy = (typeof OVERFLOW_POLICIES)[number];

/** Settings of one topic after defaults are applied. */
export interface TopicSettings {
  /** Jobs per second the tick may start; unset means no limit. */
  ratePerSec?: number;
  /** Token bucket size; default max(1, ratePerSec). */
  burst?: number;
  /** Most jobs in flight at once; unset means no limit. */
  concurrency?: number;
  /** Most pending jobs (scheduled and waiting; not those in flight) the topic holds; unset means no cap. */
  maxLength?: number;
  /** Most pending jobs (scheduled and waiting) each flow key of the topic holds, unless the key sets its own; unset means no cap. */
  maxKeyLength?: number;
  /** What an enqueue past maxLength or a key's maxKeyLength does. Default `reject`. */
  overflow: OverflowPolicy;
  /** Content dedup: a job without an idempotency key that delivers what one enqueued within this many ms does (content-keys.ts) is that job; unset: off. */
  contentDedupMs?: number;
  /** A job that would start more than this many ms after its due time expires instead (lua/lib/expire.lua); unset means no bound. */
  maxLateness?: number;
  /** Expired jobs go to the dead-letter set (listed, replayable) instead of the finished ones. Default false. */
  keepExpired: boolean;
  /** The topic's share of the tick under contention, against other topics' weights (1–100). Default 1. */
  weight: number;
  /** Attempts before a job is dead. Default 5 (1–100). */
  maxAttempts: number;
  /** Retry policy. Default exponential from 1 s, ×2, capped at 1 h, full jitter. */
  backoff: Backoff;
  /** Paused topics are not dispatched and claim nothing. Default false. */
  paused: boolean;
  /** `push`: the tick delivers; `pull`: consumers claim over HTTP. Default push. */
  mode: "push" | "pull";
  /** Default delivery URL of the http handler. */
  url?: string;
  /** Per-job handler timeout. Default 30,000 ms. */
  timeoutMs: number;
  /** How deliveries are signed. Default the deployment's SIGNING_SCHEME (`delayline`). */
  signatureScheme: SignatureScheme;
  /** Whether a signing secret (for deliveries) is set; the secret itself is write-only. */
  hasSigningSecret: boolean;
  /** Whether secrets being rotated out still sign deliveries too; write-only like the secret. */
  hasPreviousSigningSecrets: boolean;
  /** Whether a webhook secret (for ingest) is set; the secret itself is write-only. */
  hasWebhookSecret: boolean;
  /** Per-key limits, weight and priority step for its flow keys; unset: the defaults (no per-key limits, weight 1, 10 s). */
  flow?: FlowSettings;
}

/** Secrets of a topic, for the code that signs and verifies; never returned by the API. */
export interface TopicSecrets {
  signingSecret?: string;
  /** Secrets being rotated out: deliveries carry a signature with each of them after the current one's. */
  previousSigningSecrets?: string[];
  webhookSecret?: string;
}

/** Deployment-wide defaults for what a topic does not set. */
export interface TopicDefaults {
  /** Default 5. */
  maxAttempts: number;
  /** Default {@link DEFAULT_BACKOFF}. */
  backoff: Backoff;
  /** Default 30,000 ms. */
  timeoutMs: number;
  /** Default `delayline`. */
  signatureScheme: SignatureScheme;
}

/** What a queue built without deployment settings uses: the settings' own defaults. */
export const DEFAULT_TOPIC_DEFAULTS: TopicDefaults = {
  maxAttempts: DEFAULT_MAX_ATTEMPTS,
  backoff: DEFAULT_BACKOFF,
  timeoutMs: DEFAULT_TIMEOUT_MS,
  signatureScheme: DEFAULT_SIGNATURE_SCHEME,
};

/** A change to a topic's settings: a value sets the field, null clears it back to its default. */
export interface TopicPatch {
  ratePerSec?: number | null;
  burst?: number | null;
  concurrency?: number | null;
  maxLength?: number | null;
  maxKeyLength?: number | null;
  overflow?: OverflowPolicy | null;
  contentDedupMs?: number | null;
  maxLateness?: number | null;
  keepExpired?: boolean | null;
  weight?: number | null;
  maxAttempts?: number | null;
  backoff?: Backoff | null;
  paused?: boolean | null;
  mode?: "push" | "pull" | null;
  url?: string | null;
  timeoutMs?: number | null;
  signatureScheme?: SignatureScheme | null;
  signingSecret?: string | null;
  previousSigningSecrets?: string[] | null;
  webhookSecret?: string | null;
  flow?: FlowSettings | null;
}

const num = z.string().transform(Number).pipe(z.number().finite());
const stored = z.object({
  ratePerSec: num.optional(),
  burst: num.optional(),
  concurrency: num.optional(),
  maxLength: num.optional(),
  maxKeyLength: num.optional(),
  overflow: z.enum(OVERFLOW_POLICIES).optional(),
  contentDedupMs: num.optional(),
  maxLateness: num.optional(),
  keepExpired: z.enum(["true", "false"]).optional(),
  weight: num.optional(),
  maxAttempts: num.optional(),
  backoff: z
    .string()
    .transform((s) => JSON.parse(s) as Backoff)
    .optional(),
  paused: z.enum(["true", "false"]).optional(),
  mode: z.enum(["push", "pull"]).optional(),
  url: z.string().optional(),
  timeoutMs: num.optional(),
  signatureScheme: z.enum(SIGNATURE_SCHEMES).optional(),
  signingSecret: z.string().optional(),
  previousSigningSecrets: z
    .string()
    .transform((s) => z.array(z.string()).parse(JSON.parse(s)))
    .optional(),
  webhookSecret: z.string().optional(),
  flow: z
    .string()
    .transform((s) => JSON.parse(s) as FlowSettings)
    .optional(),
  shaped: z.literal("1").optional(),
  /** Set by the first job with a priority (enqueue.lua), never cleared; read by flow-read.lua. */
  prioritized: z.enum(["0", "1"]).optional(),
  /** Set by the first job stored by an upsert (upsert.lua), never cleared: the tick claims none of its jobs ahead. */
  jobKeys: z.literal("1").optional(),
  /** Set by the first job with an expiresAt (enqueue.lua, upsert.lua), never cleared: its claims look for jobs to expire. */
  expiring: z.literal("1").optional(),
});

/** Reads a topic's conf hash, filling in defaults. */
export function decodeTopicConf(hash: Record<string, string>, defaults: TopicDefaults): { settings: TopicSettings; secrets: TopicSecrets } {
  const c = stored.parse(hash);
  const settings: TopicSettings = {
    weight: c.weight ?? DEFAULT_WEIGHT,
    maxAttempts: c.maxAttempts ?? defaults.maxAttempts,
    backoff: c.backoff ?? defaults.backoff,
    overflow: c.overflow ?? "reject",
    keepExpired: c.keepExpired === "true",
    paused: c.paused === "true",
    mode: c.mode ?? "push",
    timeoutMs: c.timeoutMs ?? defaults.timeoutMs,
    signatureScheme: c.signatureScheme ?? defaults.signatureScheme,
    hasSigningSecret: c.signingSecret !== undefined,
    hasPreviousSigningSecrets: c.previousSigningSecrets !== undefined,
    hasWebhookSecret: c.webhookSecret !== undefined,
  };
  if (c.flow !== undefined) settings.flow = c.flow;
  if (c.ratePerSec !== undefined) settings.ratePerSec = c.ratePerSec;
  if (c.burst !== undefined) settings.burst = c.burst;
  if (c.concurrency !== undefined) settings.concurrency = c.concurrency;
  if (c.maxLength !== undefined) settings.maxLength = c.maxLength;
  if (c.maxKeyLength !== undefined) settings.maxKeyLength = c.maxKeyLength;
  if (c.contentDedupMs !== undefined) settings.contentDedupMs = c.contentDedupMs;
  if (c.maxLateness !== undefined) settings.maxLateness = c.maxLateness;
  if (c.url !== undefined) settings.url = c.url;
  const secrets: TopicSecrets = {};
  if (c.signingSecret !== undefined) secrets.signingSecret = c.signingSecret;
  if (c.previousSigningSecrets !== undefined) secrets.previousSigningSecrets = c.previousSigningSecrets;
  if (c.webhookSecret !== undefined) secrets.webhookSecret = c.webhookSecret;
  return { settings, secrets };
}

/** Turns a patch into the fields to set and the fields to clear. */
export function encodeTopicPatch(patch: TopicPatch): { set: Array<[string, string]>; clear: string[] } {
  const set: Array<[string, string]> = [];
  const clear: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (value === null) clear.push(field);
    else set.push([field, typeof value === "object" ? JSON.stringify(value) : String(value)]);
  }
  // Flow settings make a topic shaped for good: its keyed jobs are served by their keys (lua/lib/flow.lua).
  if (patch.flow) set.push(["shaped", "1"]);
  return { set, clear };
}
