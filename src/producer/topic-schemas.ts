// The schemas of topics: a topic's settings as set and as shown, its
// counters, and the topic listing's page.
import { z } from "@hono/zod-openapi";
import { SIGNATURE_SCHEMES } from "../protocol/signature-schemes.js";
import { whsecProblem } from "../protocol/whsec.js";
import { backoffSchema } from "../queue/policy/backoff.js";
import { OVERFLOW_POLICIES } from "../queue/topics.js";
import {
  TOPIC_BUSIEST_KEYS,
  MAX_BURST,
  MAX_CONTENT_DEDUP_MS,
  MAX_CONCURRENCY,
  MAX_FLOW_WEIGHT,
  MAX_PRIORITY_STEP_MS,
  MAX_MAX_ATTEMPTS,
  MAX_MAX_LENGTH,
  MAX_RATE_PER_SEC,
  MAX_TIMEOUT_MS,
  MAX_WEIGHT,
  MIN_MAX_ATTEMPTS,
  MIN_SECRET_LENGTH,
  MIN_TIMEOUT_MS,
} from "../limits.js";

import { BackoffBody, Delay, FlowKey, partialFields, TopicName, TopicRef } from "./schema-parts.js";

const SigningSecret = z.string().min(MIN_SECRET_LENGTH).max(256);

/** The limits and weight a flow key has: a topic's defaults for its keys, or one key's own. */
const flowLimits = {
  ratePerSec: z
    .number()
    .positive()
    .max(MAX_RATE_PER_SEC)
    .optional()
    .openapi({ description: "Jobs per second one key may start (GCRA); unset: no per-key rate" }),
  burst: z
    .number()
    .int()
    .min(1)
    .max(MAX_BURST)
    .optional()
    .openapi({ description: "Jobs a key may start at once after idling; default max(1, ratePerSec rounded down)" }),
  parallelism: z
    .number()
    .int()
    .min(1)
    .max(MAX_CONCURRENCY)
    .optional()
    .openapi({ description: "Most jobs of one key in flight at once; unset: no per-key limit" }),
  weight: z
    .number()
    .int()
    .min(1)
    .max(MAX_FLOW_WEIGHT)
    .optional()
    .openapi({ description: "Jobs a key starts per turn when keys compete (default 1): weights 3 and 1 start jobs 3:1" }),
};

export const FlowSettingsBody = z
  .object({
    ...flowLimits,
    priorityStepMs: z
      .number()
      .int()
      .min(0)
      .max(MAX_PRIORITY_STEP_MS)
      .optional()
      .openapi({ description: "The head start one level of a job's priority gives it over its key's other due jobs; default 10,000 ms" }),
  })
  .strict()
  .openapi("FlowSettings", { description: "What each flow key of the topic gets unless it has settings of its own" });

export const FlowKeyBody = z
  .object({
    ...flowLimits,
    paused: z.boolean().optional().openapi({ description: "A paused key starts no job; its jobs wait" }),
    maxKeyLength: z.number().int().min(1).max(MAX_MAX_LENGTH).optional().openapi({
      description:
        "Most pending jobs (scheduled and waiting) this key holds, over the topic's maxKeyLength; an enqueue past it does what the topic's overflow says. Unset: the topic's",
    }),
  })
  .strict()
  .openapi("FlowKeySettings", { description: "One flow key's own settings, over its topic's flow settings (a PUT replaces them all)" });

export const FlowKeyView = z
  .object({
    topic: TopicName,
    key: FlowKey,
    settings: FlowKeyBody.openapi({ description: "the key's own settings ({} when it has none: it takes the topic's)" }),
    length: z.number().int().openapi({ description: "the key's pending jobs, scheduled and waiting (not those in flight): what maxKeyLength caps; exact" }),
  })
  .openapi("FlowKey");

export const FlowKeyList = z
  .object({
    keys: z.array(FlowKeyView).openapi({ description: "keys with settings of their own, in no particular order" }),
    nextCursor: z.string().nullable().openapi({ description: "pass as `cursor` for the next page; null on the last page" }),
  })
  .openapi("FlowKeyList");

export const TopicSettingsBody = z
  .object({
    ratePerSec: z.number().positive().max(MAX_RATE_PER_SEC).nullable().optional(),
    burst: z.number().int().min(1).max(MAX_BURST).nullable().optional(),
    concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).nullable().optional(),
    maxLength: z.number().int().min(1).max(MAX_MAX_LENGTH).nullable().optional().openapi({
      description:
        "Most pending jobs (scheduled and waiting; jobs in flight do not count) the topic holds; an enqueue past it does what overflow says. null: no cap",
    }),
    maxKeyLength: z.number().int().min(1).max(MAX_MAX_LENGTH).nullable().optional().openapi({
      description:
        "Most pending jobs (scheduled and waiting) each flow key of the topic holds, unless the key sets its own (PUT /v1/topics/{topic}/flow-keys/{key}); an enqueue past it does what overflow says. Jobs without a flow key are not counted. null: no cap",
    }),
    maxLateness: Delay.nullable().optional().openapi({
      description:
        'A job that would start more than this long after its due time (ms, or a duration such as "2s") is not started: it ends in state expired. Only jobs that never started; a retry never expires. null: no bound',
    }),
    keepExpired: z.boolean().nullable().optional().openapi({
      description: "Expired jobs go to the dead letters (listed, replayable) instead of the finished jobs. null: false",
    }),
    overflow: z.enum(OVERFLOW_POLICIES).nullable().optional().openapi({
      description:
        "At maxLength or a flow key's maxKeyLength: reject (the request gets 429 and nothing of it is stored) or dropOldest (the jobs are stored and the oldest pending jobs, earliest due first — the topic's, or the key's — end in state dropped). null: reject",
    }),
    contentDedupMs: z
      .number()
      .int()
      .min(1)
      .max(MAX_CONTENT_DEDUP_MS)
      .nullable()
      .optional()
      .openapi({
        description:
          "Content dedup: a job enqueued without an idempotency key that delivers what a job enqueued within this many ms does — the same topic, target (url, method, headers) " +
          "and webhook headers, and the same payload as stored — is that job (200, deduplicated, its id). null: off",
      }),
    weight: z
      .number()
      .int()
      .min(1)
      .max(MAX_WEIGHT)
      .nullable()
      .optional()
      .openapi({
        description:
          "The topic's share of the tick when topics contend for it (TICK_CONCURRENCY's slots, chunk sizes, the subrequest budget, the round's order): " +
          "a topic of weight 3 gets three times what a weight-1 topic gets. Without contention, or among topics of one weight, it changes nothing. null: 1",
      }),
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
    flow: FlowSettingsBody.nullable().optional(),
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

export const Counters = z
  .object({ dispatched: z.number(), succeeded: z.number(), retried: z.number(), dead: z.number(), dropped: z.number(), expired: z.number() })
  .openapi("Counters", {
    description:
      "attempts dispatched, attempts that succeeded or were retried, jobs dead-lettered, jobs dropped for the topic's maxLength or a flow key's maxKeyLength, jobs that expired before they started (all time)",
  });

const flowKeyCounts = {
  inTurn: z.number().int().openapi({ description: "Keys with due jobs whose turn it is, or comes as other keys are served" }),
  waitingForRate: z.number().int().openapi({ description: "Keys with due jobs that their rate holds until a later start" }),
  atParallelism: z.number().int().openapi({ description: "Keys with as many jobs in flight as their parallelism allows" }),
  paused: z.number().int().openapi({ description: "Keys paused" }),
};

/** A shaped topic's keys counted by where they stand, as `GET /v1/stats` shows them. */
export const FlowKeyCountsView = z
  .object(flowKeyCounts)
  .openapi("FlowKeyCounts", { description: "A shaped topic's flow keys by where they stand (absent for a topic without flow keys)" });

const FlowKeysView = z
  .object({
    ...flowKeyCounts,
    busiest: z
      .array(
        z.object({
          key: z.string(),
          inFlight: z.number().int(),
          waiting: z.number().int().openapi({ description: "Due jobs waiting for the key's turn" }),
          state: z.enum(["turn", "rate", "parallelism", "paused", "running"]),
        }),
      )
      .optional()
      .openapi({ description: `GET /v1/topics/{topic} only: the ${TOPIC_BUSIEST_KEYS} keys with the most jobs in flight and waiting` }),
  })
  .openapi("TopicFlowKeys", { description: "A shaped topic's flow keys by where they stand (absent for a topic without flow keys)" });

export const TopicView = z
  .object({
    topic: TopicRef,
    kind: z.enum(["topic", "subscription", "callbacks"]).openapi({
      description:
        "topic: jobs are enqueued to it; subscription: `<parent>@<name>`, the deliveries of the parent's subscription `name`; callbacks: `<parent>@_callbacks`, the callbacks of the parent's jobs",
    }),
    parent: TopicName.nullable().openapi({ description: "the topic a subscription's or callbacks' topic was derived from; null for a topic" }),
    settings: z.object({
      ratePerSec: z.number().optional(),
      burst: z.number().optional(),
      concurrency: z.number().optional(),
      maxLength: z.number().optional(),
      maxKeyLength: z.number().optional(),
      overflow: z.enum(OVERFLOW_POLICIES),
      contentDedupMs: z.number().optional(),
      maxLateness: z.number().optional(),
      keepExpired: z.boolean(),
      weight: z.number(),
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
      flow: FlowSettingsBody.optional(),
    }),
    scheduled: z.number().int(),
    ready: z.number().int(),
    inflight: z.number().int(),
    dead: z.number().int(),
    oldestReadyDueAt: z.string().nullable(),
    counters: Counters,
    flowKeys: FlowKeysView.optional(),
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
    total: z.number().int().openapi({ description: "topics registered in all (every page) on the shards that answered: one SCARD per shard" }),
    nextCursor: z.string().nullable().openapi({ description: "pass as `cursor` for the next page; null on the last page" }),
    ...partialFields,
  })
  .openapi("TopicList");
