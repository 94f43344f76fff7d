/**
 * Every setting of the Worker, each declared once: the binding's name (the
 * key), the Settings field it fills, its schema with its default and bounds,
 * and one doc line. src/env.ts derives `Env`, `Settings` and their parsing
 * from this table, and docs/configuration.md's table is generated from it
 * (`npm run docs:settings`; test/node/settings.test.ts fails when they differ).
 * A declarative table: it is exempt from the 60-line rule for functions.
 */
import { z } from "zod";
import { SIGNATURE_SCHEMES } from "../protocol/signature-schemes.js";
import {
  DEFAULT_DEAD_LETTER_CAP,
  DEFAULT_IDEMPOTENCY_WINDOW_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_MAX_TOPICS,
  DEFAULT_METRICS_TOPICS,
  DEFAULT_PREFIX,
  DEFAULT_REDIS_TIMEOUT_MS,
  DEFAULT_RETENTION_MS,
  DEFAULT_SIGNATURE_SCHEME,
  DEFAULT_TICK_CHUNK,
  DEFAULT_TICK_CONCURRENCY,
  DEFAULT_TICK_FANOUT,
  DEFAULT_TICK_IDLE_PEEK_MS,
  DEFAULT_TICK_OVERLAP_MS,
  DEFAULT_TICK_POLL_MS,
  DEFAULT_TICK_SUBREQUEST_BUDGET,
  DEFAULT_TIMEOUT_MS,
  MAX_BATCH,
  MAX_DEFAULT_TICK_LEAD_MS,
  MAX_MAX_ATTEMPTS,
  MAX_TIMEOUT_MS,
  MIN_MAX_ATTEMPTS,
  MIN_SECRET_LENGTH,
  MIN_TIMEOUT_MS,
  REQUEST_BUDGET_PERCENT,
  UPSTASH_REQUEST_BYTES,
} from "../limits.js";
import { code, declare, figure, flag, whole, wholeDerived, wireBytes } from "./rules.js";
import { ShardPinsSetting, ShardsSetting } from "./shards.js";

const DAY_MS = 86_400_000;
const REQUIRED_SECRET = "— (required, secret)";
const tokens = (v: string) =>
  v
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);

export const SETTING_DECLARATIONS = {
  UPSTASH_REDIS_REST_URL: declare("redisUrl", {
    schema: z.url({ protocol: /^https?$/, error: "must be the http(s) URL of Upstash or the local bridge" }),
    shownDefault: REQUIRED_SECRET,
    accepts: "an http(s) URL",
    doc: "Upstash's REST URL; locally the bridge's URL",
  }),
  UPSTASH_REDIS_REST_TOKEN: declare("redisToken", {
    schema: z.string({ error: "is required" }).min(1, "is required"),
    shownDefault: REQUIRED_SECRET,
    accepts: "not empty",
    doc: "Upstash's REST token",
  }),
  DELAYLINE_TOKEN: declare("apiTokens", {
    schema: z
      .string({ error: "is required (one or more comma-separated API tokens)" })
      .transform(tokens)
      .refine((all) => all.length > 0 && all.every((t) => t.length >= 8), "needs at least one token of 8 or more characters"),
    shownDefault: REQUIRED_SECRET,
    accepts: "comma-separated tokens, each ≥ 8 characters",
    doc: "the API's bearer tokens; several allow rotation",
  }),
  DELAYLINE_PREFIX: declare("prefix", {
    schema: z
      .string()
      .default(DEFAULT_PREFIX)
      .refine((v) => /^[^\s{}]*\{[^\s{}]+\}[^\s{}]*$/.test(v), "must contain exactly one {hash tag}, e.g. dl:{main}, so every key lives in one slot"),
    shownDefault: code(DEFAULT_PREFIX),
    accepts: "exactly one `{hash tag}`, no spaces or other braces",
    doc: "the prefix of every Redis key; its hash tag puts all keys in one cluster slot",
  }),
  DELAYLINE_SHARDS: declare("shards", {
    schema: ShardsSetting,
    shownDefault: "— (one shard, `main`: `UPSTASH_REDIS_REST_URL`, `UPSTASH_REDIS_REST_TOKEN`, `DELAYLINE_PREFIX`)",
    accepts:
      'JSON array of `{ "name", "url", "tokenBinding", "prefix"? }`: names of 1–32 `a–z 0–9 -`, one of them `main`; `tokenBinding` names the Worker secret holding the REST token; `prefix` (default `dl:{<name>}`) with a hash tag no other shard has; `main` may leave out `url` and `tokenBinding` (then the two above) and `prefix` (then `DELAYLINE_PREFIX`)',
    doc: "the Redis databases the deployment spreads its topics over, each topic on one (see docs/operations.md, Shards)",
  }),
  DELAYLINE_SHARD_PINS: declare("shardPins", {
    schema: ShardPinsSetting,
    shownDefault: "`{}`",
    accepts: 'JSON object `{ "<topic>": "<shard>" }` of shards `DELAYLINE_SHARDS` lists',
    doc: "places each topic named on its shard, whatever rendezvous hashing would choose; adding a shard moves no pinned topic",
  }),
  ALLOW_PRIVATE_TARGETS: flag("allowPrivateTargets", {
    shownDefault: "`false` (`true` under `npm start`)",
    doc: "allow http delivery to loopback and private addresses",
  }),
  TICK_POLL_MS: whole("tickPollMs", { min: 50, max: 60_000, fallback: DEFAULT_TICK_POLL_MS, doc: "longest sleep between tick rounds" }),
  REDIS_TIMEOUT_MS: whole("redisTimeoutMs", {
    min: 100,
    max: 60_000,
    fallback: DEFAULT_REDIS_TIMEOUT_MS,
    doc: "a Redis request slower than this counts as an outage, answered 503 whose detail says Redis did not answer in time (not that it is unreachable)",
  }),
  // Lowers only: MAX_PAYLOAD_BYTES and MAX_BODY_BYTES are bounded by Upstash's limit (MAX_WIRE_VALUE_BYTES).
  REDIS_MAX_REQUEST_BYTES: whole("redisMaxRequestBytes", {
    min: 65_536,
    max: UPSTASH_REQUEST_BYTES,
    fallback: UPSTASH_REQUEST_BYTES,
    doc: `largest request the Redis REST service takes (Upstash's 10 MiB; lower it for a smaller cap, e.g. with \`BRIDGE_MAX_REQUEST_BYTES\`): a batch enqueue or schedule write whose Redis request (its JSON as sent, escapes included) would pass \`REQUEST_BUDGET_PERCENT\` (${REQUEST_BUDGET_PERCENT}%) of it answers 413 \`request-too-large\` before anything is written`,
  }),
  MAX_PAYLOAD_BYTES: wireBytes("maxPayloadBytes", {
    min: 1,
    fallback: DEFAULT_MAX_PAYLOAD_BYTES,
    doc: "largest job payload, serialized; 413 beyond",
    note: "JSON escaping can double it on the wire, and 2 × it + 1 MiB must fit Upstash's 10 MiB request limit",
  }),
  MAX_BODY_BYTES: wireBytes("maxBodyBytes", {
    min: 1_024,
    fallback: DEFAULT_MAX_BODY_BYTES,
    doc: "largest request body, checked before parsing; 413 beyond",
    note: "by the same rule as `MAX_PAYLOAD_BYTES`",
  }),
  RETENTION_MS: whole("retentionMs", {
    min: 1_000,
    max: 30 * DAY_MS,
    note: "30 days",
    fallback: DEFAULT_RETENTION_MS,
    doc: "finished jobs stay readable this long",
  }),
  DEAD_LETTER_CAP: whole("deadLetterCap", {
    min: 1,
    max: 1_000_000,
    fallback: DEFAULT_DEAD_LETTER_CAP,
    doc: "dead letters kept per topic; the oldest are trimmed",
  }),
  IDEMPOTENCY_WINDOW_MS: whole("idempotencyWindowMs", {
    min: 1_000,
    max: 30 * DAY_MS,
    note: "30 days",
    fallback: DEFAULT_IDEMPOTENCY_WINDOW_MS,
    doc: "how long an idempotency key is remembered",
  }),
  DEFAULT_MAX_ATTEMPTS: whole("defaultMaxAttempts", {
    min: MIN_MAX_ATTEMPTS,
    max: MAX_MAX_ATTEMPTS,
    fallback: DEFAULT_MAX_ATTEMPTS,
    doc: "attempts for topics that set none",
  }),
  DEFAULT_TIMEOUT_MS: whole("defaultTimeoutMs", {
    min: MIN_TIMEOUT_MS,
    max: MAX_TIMEOUT_MS,
    fallback: DEFAULT_TIMEOUT_MS,
    doc: "handler timeout for topics that set none",
  }),
  SIGNING_SECRET: declare("signingSecret", {
    // The whsec_ rule of SIGNING_SCHEME=standard is checked across settings (src/env.ts).
    schema: z.string().min(MIN_SECRET_LENGTH, `must be at least ${MIN_SECRET_LENGTH} characters`).optional(),
    shownDefault: "— (secret, optional: unsigned)",
    accepts: `≥ ${MIN_SECRET_LENGTH} characters; with \`SIGNING_SCHEME=standard\`, a \`whsec_\` secret (base64 of 24–64 bytes)`,
    doc: "signs http deliveries of topics without their own `signingSecret`",
  }),
  SIGNING_SCHEME: declare("signatureScheme", {
    schema: z.enum(SIGNATURE_SCHEMES, { error: 'must be "delayline" or "standard"' }).default(DEFAULT_SIGNATURE_SCHEME),
    shownDefault: code(DEFAULT_SIGNATURE_SCHEME),
    accepts: "`delayline` or `standard`",
    doc: "how topics that set no `signatureScheme` sign deliveries",
  }),
  TICK_CHUNK: whole("tickChunk", {
    min: 1,
    max: 1_000,
    fallback: DEFAULT_TICK_CHUNK,
    doc: `most jobs one claim takes per topic per round; when topics of different weights contend for \`TICK_CONCURRENCY\`, the lightest's, a heavier topic's larger by its share (at most ${figure(MAX_BATCH)})`,
  }),
  TICK_LEAD_MS: wholeDerived("tickLeadMs", {
    min: 0,
    max: 60_000,
    note: "0: only due jobs",
    shownDefault: `\`TICK_POLL_MS\`, at most ${code(MAX_DEFAULT_TICK_LEAD_MS)}`,
    derive: (parsed: { TICK_POLL_MS: number }) => Math.min(parsed.TICK_POLL_MS, MAX_DEFAULT_TICK_LEAD_MS),
    doc: "the tick claims jobs of topics without a rate or concurrency limit up to this long before they are due (plus what its last round took from poll to claim, at most this again) and starts each at its due time; such a job is in flight from its claim and can no longer be cancelled or rescheduled; a topic with job keys (upserts) is never claimed ahead",
  }),
  TICK_CONCURRENCY: whole("tickConcurrency", {
    min: 1,
    max: 1_000,
    fallback: DEFAULT_TICK_CONCURRENCY,
    doc: "most handlers running at once in one tick, across topics; topics that contend for them share them by their `weight`",
  }),
  TICK_SUBREQUEST_BUDGET: whole("tickSubrequestBudget", {
    min: 10,
    max: 100_000,
    fallback: DEFAULT_TICK_SUBREQUEST_BUDGET,
    doc: `most subrequests (Redis REST calls + outbound fetches) one tick invocation makes; Cloudflare's paid plan allows ${figure(DEFAULT_TICK_SUBREQUEST_BUDGET)}, the free plan 50: use \`45\` there, with \`TICK_CHUNK\` 10`,
  }),
  TICK_OVERLAP_MS: whole("tickOverlapMs", {
    min: 0,
    max: 600_000,
    fallback: DEFAULT_TICK_OVERLAP_MS,
    doc: "how long a tick runs past its minute, so a late next cron still finds no gap",
  }),
  TICK_FANOUT: whole("tickFanout", {
    min: 0,
    max: 30,
    note: "0: off",
    fallback: DEFAULT_TICK_FANOUT,
    doc: "extra invocations (TickChunk, through the `TICK_RUNNER` service binding) a round may start for a topic with a backlog",
  }),
  // At most 25 s: a producer covers jobs due within it from its own invocation (waitUntil lasts 30 s).
  TICK_IDLE_PEEK_MS: whole("tickIdlePeekMs", {
    min: 0,
    max: 25_000,
    note: "0: always poll",
    fallback: DEFAULT_TICK_IDLE_PEEK_MS,
    doc: "when nothing is due within this long, the tick stops polling every `TICK_POLL_MS` and looks only this often; producers then start jobs due sooner themselves. With the wake alarm (`TICK_ALARM`), a loop with nothing due before the next cron ends instead and the cron only looks",
  }),
  MAX_TOPICS: whole("maxTopics", {
    min: 1,
    max: 1_000_000,
    fallback: DEFAULT_MAX_TOPICS,
    doc: "most topics that may exist; enqueueing to or configuring one more answers 422",
  }),
  METRICS_TOPICS: whole("metricsTopics", {
    min: 0,
    max: 10_000,
    note: "0: sums all",
    fallback: DEFAULT_METRICS_TOPICS,
    doc: '`/metrics` gives series of their own to this many topics, the busiest by backlog then attempts dispatched; the rest are summed under `topic="(others)"`',
  }),
};
