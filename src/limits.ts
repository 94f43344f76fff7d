/**
 * delayline's product limits and defaults, each written once. The settings schema (src/env.ts), the API's zod schemas
 * (src/producer), the queue and the Lua scripts read them from here: scripts/build-lua.mjs puts the values into the
 * scripts where they say `--[[LIMIT:NAME]]<value>` (and refuses a build whose written value differs), so Redis and
 * the Worker cannot disagree.
 *
 * Plain values only: this module is imported by the Worker, the CLI and the build (through tsx), and must stay free
 * of imports.
 */

const DAY_MS = 86_400_000;

// ---- Batches and pages -------------------------------------------------------

/** Largest batch for enqueue, claim and settle (and `POST /v1/jobs/batch`): keeps every Lua unpack() well inside its limits. */
export const MAX_BATCH = 1_000;

/** Most jobs, dead letters or schedules one listing page holds: a page stays one bounded Redis call. */
export const MAX_LIST_LIMIT = 1_000;

/** Jobs on a listing page when the caller asks for no number: a screenful that is cheap to read. */
export const DEFAULT_LIST_LIMIT = 100;

/** Dead letters (and schedules) on a page when the caller asks for no number: their entries carry history and payload, so fewer than jobs. */
export const DEFAULT_DEAD_LIST_LIMIT = 50;

/** With payloads, a listing page ends once its records pass this many bytes (it always holds one job), so neither Redis nor the reply grows with payload size. */
export const LIST_PAGE_BYTES = 1_048_576;

/**
 * A claim (tick, fan-out, drain or pull) stops taking jobs before the records it returns would pass this many bytes
 * (4 MiB; it always takes one): its reply stays well inside Upstash's 10 MB cap on one command's reply, even with a
 * record of the largest payload on top. Jobs left stay due, untouched.
 */
export const CLAIM_REPLY_BUDGET_BYTES = 4 * 1024 * 1024;

/**
 * A claim reads this many times as many due ids as it may take (claim.lua takes the first still due, in due order):
 * claims of one topic that run at once (a tick's chunk beside its fan-out) each find jobs among their candidates that
 * the others did not take. Ids only, a few dozen bytes each; only the records of the jobs taken are read.
 */
export const CLAIM_CANDIDATES = 5;

/**
 * A flow key (a job's `flowKey`: the tenant, customer or host its topic's per-key limits and turns go by) is at most
 * this many UTF-8 bytes, and holds no control character.
 */
export const FLOW_KEY_MAX_BYTES = 200;

/**
 * A job key (an upsert's `jobKey`: a topic holds at most one pending job under it, src/queue/upserts.ts) is at most
 * this many UTF-8 bytes.
 */
export const JOB_KEY_MAX_BYTES = 200;

/** Most labels a job carries; a label is 1 to LABEL_MAX_LENGTH characters of LABEL_PATTERN. */
export const MAX_LABELS = 8;
export const LABEL_MAX_LENGTH = 64;
/** Nothing to escape in a query string, a CLI argument or JSON: Lua reads a record's labels without decoding it (lua/lib/labels.lua). */
export const LABEL_PATTERN = /^[A-Za-z0-9:._/-]+$/;
/** Members of a label's index one call of a walk by label looks at: its work is bounded by it, whatever the topic holds. */
export const LABEL_WALK_BATCH = 250;
/** Members of a label's index a labelled enqueue checks at random per job it adds, dropping those whose job finished. Read by Lua.
 * @public */
export const LABEL_TRIM_PROBES = 2;

/** A job's `priority` is an integer from 0 (the default) to this. */
export const MAX_PRIORITY = 9;

/**
 * The head start one level of priority gives a due job over the jobs of its key (or of the topic's default lane) by
 * default: a job of priority p starts as if it were due p × this earlier, never before its own due time. A topic's
 * `flow.priorityStepMs` overrides it. Read by lua/lib/flow.lua too.
 */
export const DEFAULT_PRIORITY_STEP_MS = 10_000;

/** The longest head start a topic may give one level of priority (one hour). */
export const MAX_PRIORITY_STEP_MS = 3_600_000;

/** How many of a shaped topic's busiest flow keys its view (GET /v1/topics/:topic) shows. */
export const TOPIC_BUSIEST_KEYS = 10;

/** Most weight a flow key (or a topic's flow default) may have: its turn takes up to this many jobs. */
export const MAX_FLOW_WEIGHT = 100;

/**
 * Keyed jobs a claim moves from scheduled to waiting (fsched to fready, by due time) in one call: newly due keyed
 * jobs beyond it wait for the next claim, which the topic's index score asks for at once. A key's turn is stretched
 * to fill a claim only when nothing is left unseen (fewer newly due than this, fewer ready keys than the claim's
 * size), so a flood of one key that falls due at once cannot take whole claims while other keys' jobs, due with it,
 * wait behind it to be moved. Ids and keys only, some 80 bytes a job.
 */
export const FLOW_PROMOTE_BATCH = 2_000;

/**
 * Keys a shaped topic's claim reads in turn order at least, however few jobs it may take (a topic near its
 * concurrency, a drain's free slots): a key first in turn that its rate or limits hold back takes none, and a claim
 * of one job would take nothing while the next key could start one. A key read costs the claim one command. Read by
 * flow-read.lua only, through the build.
 * @public
 */
export const FLOW_KEYS_MIN = 8;

/**
 * Flow keys' rate times (their GCRA theoretical arrival times) one claim forgets once they have passed (a time past
 * says no more than none): the claims that start rate-limited keys' jobs, and those that find no key left to serve,
 * which keep the topic in the index until the last time passes. Without it every key a rate ever limited would keep
 * its time for good. Read by lua/lib/flow.lua, through the build.
 */
export const FLOW_RATE_FORGET_BATCH = 1_000;

/**
 * Finished jobs (and dead letters past the cap) one sweep drops, with their two keys each (sweep.lua): 500 keys in
 * one call, about the Redis time of a claim of the same jobs. A claim hands its caller a batch to sweep once this
 * many finished jobs are past the retention window, or fewer once the oldest of them has waited SWEEP_SLACK_MS. Read
 * by claim.lua only, through the build.
 * @public
 */
export const SWEEP_BATCH = 250;

/**
 * How long a finished job past the retention window may wait for a sweep (1 min): a busy topic sweeps full batches,
 * not each job as it expires, and an idle topic is looked at for it once, this long after its oldest finished job
 * expired. Read by claim.lua and settle.lua (which score the topic for it), through the build.
 * @public
 */
export const SWEEP_SLACK_MS = 60_000;

/**
 * The tick looks at a topic for its jobs' expiresAt (lua/lib/expire.lua) at multiples of this: a paused topic whose
 * jobs expire a few ms apart costs a claim per grain, not one per job, and each still ends within a grain of its
 * expiresAt — well within a poll (TICK_POLL_MS, 1 s by default). Read by claim.lua only, through the build.
 * @public
 */
export const EXPIRY_GRAIN_MS = 250;

/** Most jobs one call of a bulk cancel takes: about 2 ms of Redis time for small payloads (test/workers/queue/bounded-calls.test.ts). */
export const BULK_CANCEL_BATCH = 250;

/** Most dead letters one call of a replay, purge or migration looks at: about 3 ms of Redis time for small payloads (bounded-calls.test.ts). */
export const DEAD_BATCH = 250;

/** A bulk cancel's, replay's or purge's call stops once the records it read pass this many bytes, so a call stays short whatever the payloads. */
export const BULK_CALL_BYTES = 1_048_576;

/** How many of the ids a dry run of a bulk cancel, replay or purge would touch its answer names: the first ones, in the order the call would take them. */
export const DRY_RUN_IDS = 20;

/**
 * Records (jobs or dead letters) a Lua script reads per HMGET while it walks a bulk cancel, replay or purge: small
 * enough that a call stops close to its byte budget, large enough that the reads stay few.
 */
export const LUA_READ_BATCH = 25;

// ---- Request bodies ------------------------------------------------------------

/** Deepest JSON the API parses (bodies and webhook payloads): deeper nesting only serves to exhaust the stack of whoever decodes the payload later. */
export const MAX_JSON_DEPTH = 64;

/** Upstash's cap on one request (and one command's reply): 10 MiB, as the bridge enforces it (dev/bridge/limits.ts). */
export const UPSTASH_REQUEST_BYTES = 10 * 1024 * 1024;

/** Room a request to Redis needs beside its payloads or body: the records' other fields, the script's keys and arguments (1 MiB). */
export const REQUEST_OVERHEAD_BYTES = 1024 * 1024;

/**
 * Largest MAX_PAYLOAD_BYTES or MAX_BODY_BYTES: JSON escaping can double a value on the wire to Redis, so the rule is
 * 2 × value + REQUEST_OVERHEAD_BYTES ≤ UPSTASH_REQUEST_BYTES, i.e. 4.5 MiB. It also keeps a claim of one such job
 * inside the reply cap.
 */
export const MAX_WIRE_VALUE_BYTES = (UPSTASH_REQUEST_BYTES - REQUEST_OVERHEAD_BYTES) / 2;

/**
 * Share of the Redis request limit (REDIS_MAX_REQUEST_BYTES, Upstash's 10 MB) a call that carries caller-sized data
 * may use, in percent: a batch enqueue or a schedule write whose request (its JSON as the client sends it, escapes
 * included, counted in UTF-8 bytes) would pass it is refused with a 413 before anything is sent
 * (src/queue/request-size.ts). The 5% margin keeps the default budget under 10 MB even read as 10,000,000 bytes, not
 * 10 MiB as the bridge enforces it.
 */
export const REQUEST_BUDGET_PERCENT = 95;

/**
 * The request budget at Upstash's limit: {@link REQUEST_BUDGET_PERCENT} of {@link UPSTASH_REQUEST_BYTES}, 9,961,472
 * bytes (9.5 MiB).
 */
export const REQUEST_BUDGET_BYTES = (UPSTASH_REQUEST_BYTES * REQUEST_BUDGET_PERCENT) / 100;

/** Default MAX_PAYLOAD_BYTES: 256 KiB, the largest job payload (serialized), so a job record stays a small Redis value. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;

/** Default MAX_BODY_BYTES: 4 MiB, the largest request body, checked before parsing; room for a full batch of small jobs, and within {@link MAX_WIRE_VALUE_BYTES}. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

// ---- Jobs and topics ---------------------------------------------------------------

/** Days a delay may reach (jobs, reschedules, replays, webhook ingest): a year covers every reminder use, and bounds what a typo can park. */
export const MAX_DELAY_DAYS = 365;

/** {@link MAX_DELAY_DAYS} in ms. */
export const MAX_DELAY_MS = MAX_DELAY_DAYS * DAY_MS;

/** Longest topic name: it is part of every job id and several Redis keys, and must fit a URL path segment comfortably. */
export const TOPIC_NAME_MAX_LENGTH = 64;

/** Longest subscription name: with its topic's, the name of the topic its deliveries are jobs of (`<topic>@<name>`). */
export const SUBSCRIPTION_NAME_MAX_LENGTH = 32;

/** Longest job id: `<shard>~<topic>@<derived name>.<ULID>` at the longest of each part. */
export const JOB_ID_MAX_LENGTH = 32 + 1 + TOPIC_NAME_MAX_LENGTH + 1 + SUBSCRIPTION_NAME_MAX_LENGTH + 1 + 26;

/** Highest `ratePerSec` (jobs a second) a topic may set; a topic that needs more sets no rate. */
export const MAX_RATE_PER_SEC = 10_000;

/** Largest token bucket (`burst`) a topic may set: ten seconds of the highest rate. */
export const MAX_BURST = 100_000;

/** Most jobs in flight a topic's `concurrency` may allow; a topic that needs more sets no limit. */
export const MAX_CONCURRENCY = 10_000;

/**
 * Largest `maxLength` (pending jobs: scheduled and waiting) a topic may set: a topic's due set holds some 770,000
 * jobs under Upstash's 100 MB record cap (bench/results/scale-1m.md), so a cap past a million could never be reached.
 */
export const MAX_MAX_LENGTH = 1_000_000;

/** A topic's `weight` when it sets none: topics of one weight share the tick as they always have. */
export const DEFAULT_WEIGHT = 1;

/** Highest `weight` a topic may set: its share of the tick under contention against a weight-1 topic's. */
export const MAX_WEIGHT = 100;

/** Fewest attempts a job or topic may set (one attempt: no retries). */
export const MIN_MAX_ATTEMPTS = 1;

/** Most attempts a job or topic (or DEFAULT_MAX_ATTEMPTS) may set: past 100, retries are a schedule, not a policy. */
export const MAX_MAX_ATTEMPTS = 100;

/** Default DEFAULT_MAX_ATTEMPTS: attempts for topics that set none: with the default backoff, four retries within at most 15 s ride out a short outage. */
export const DEFAULT_MAX_ATTEMPTS = 5;

/** Shortest handler timeout a job, topic or DEFAULT_TIMEOUT_MS may set: below it, a normal network round trip would already time out. */
export const MIN_TIMEOUT_MS = 100;

/** Longest handler timeout: 10 minutes; a handler slower than that belongs to a pull consumer, which sets its own lease. */
export const MAX_TIMEOUT_MS = 600_000;

/** Default DEFAULT_TIMEOUT_MS: handler timeout for topics that set none, as most webhook senders allow. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Shortest lease a pull consumer's claim or lease extension may ask for: shorter, a lease would lapse within a round trip or two. */
export const MIN_LEASE_MS = 1_000;

/** Longest lease a pull consumer's claim or lease extension may ask for (1 h): longer work extends its lease as it goes. */
export const MAX_LEASE_MS = 3_600_000;

/** A pull consumer's lease when its claim asks for none (1 min). */
export const DEFAULT_LEASE_MS = 60_000;

/** How topics that set no signatureScheme (and a deployment without SIGNING_SCHEME) sign deliveries: delayline's own, Stripe-like format. */
export const DEFAULT_SIGNATURE_SCHEME = "delayline";

/** Shortest signing or webhook secret (SIGNING_SECRET, a topic's secrets): 16 characters keep an HMAC key out of guessing range. */
export const MIN_SECRET_LENGTH = 16;

/** Default RETENTION_MS: finished jobs stay readable for 1 h. */
export const DEFAULT_RETENTION_MS = 3_600_000;

/** Default DEAD_LETTER_CAP: dead letters kept per topic before the oldest are trimmed. */
export const DEFAULT_DEAD_LETTER_CAP = 10_000;

/** Default IDEMPOTENCY_WINDOW_MS: an idempotency key is remembered for 24 h, longer than any sender's retry schedule. */
export const DEFAULT_IDEMPOTENCY_WINDOW_MS = DAY_MS;

/** Longest content dedup window of a topic (contentDedupMs): a day. A topic's purge mark is kept at least this long (delete-topic.lua), so a purge frees its content keys too. */
export const MAX_CONTENT_DEDUP_MS = DAY_MS;

/** Default MAX_TOPICS: most topics that may exist, so a flood of names cannot grow the topic index without bound. */
export const DEFAULT_MAX_TOPICS = 10_000;

/** Default DELAYLINE_PREFIX: every key starts with it; its `{hash tag}` puts them all in one cluster slot. */
export const DEFAULT_PREFIX = "dl:{main}";

/** Default REDIS_TIMEOUT_MS: a Redis request slower than 5 s counts as an outage. */
export const DEFAULT_REDIS_TIMEOUT_MS = 5_000;

/**
 * Longest a read across several shards (`/v1/stats`, `/v1/topics`, `/healthz`) waits for one of them before it
 * answers without it, with `partial: true`; below REDIS_TIMEOUT_MS when that is set lower. `/metrics` waits this long
 * for each shard's tick, then walks its topics with no deadline but its requests' own.
 */
export const SHARD_READ_DEADLINE_MS = 1_500;

// ---- The tick ----------------------------------------------------------------------

/** Default TICK_POLL_MS: the tick's longest sleep between rounds, 1 s. */
export const DEFAULT_TICK_POLL_MS = 1_000;

/** TICK_LEAD_MS, unset, is TICK_POLL_MS up to this: a claim made longer ahead would hold jobs in flight that could still be cancelled. */
export const MAX_DEFAULT_TICK_LEAD_MS = 1_000;

/** Default TICK_CHUNK: most jobs one claim takes per topic per round. */
export const DEFAULT_TICK_CHUNK = 100;

/** Default TICK_CONCURRENCY: most handlers running at once in one tick, across topics. */
export const DEFAULT_TICK_CONCURRENCY = 50;

/** Default TICK_SUBREQUEST_BUDGET: Cloudflare's paid plan allows 10,000 subrequests per invocation. */
export const DEFAULT_TICK_SUBREQUEST_BUDGET = 10_000;

/** Default TICK_OVERLAP_MS: a tick runs 15 s past its minute, so a late next cron still finds no gap. */
export const DEFAULT_TICK_OVERLAP_MS = 15_000;

/** Default TICK_FANOUT: extra invocations a round may start for a topic with a backlog. */
export const DEFAULT_TICK_FANOUT = 4;

/** Default TICK_IDLE_PEEK_MS: with nothing due within 20 s, the tick looks only this often. */
export const DEFAULT_TICK_IDLE_PEEK_MS = 20_000;

// ---- Schedules -----------------------------------------------------------------------

/**
 * The latest instant a schedule may name or reach (9999-12-31T23:59:59.999Z): the last one ISO 8601 writes with four
 * year digits. A schedule's startAt and endAt must be no later; occurrences past it do not exist, so every time a
 * schedule shows (next run, next runs, last run) is a date every client can read.
 */
export const LATEST_SCHEDULE_TIME_MS = 253_402_300_799_999;

/** Days a schedule's `every` may reach: a decade, past any interval a calendar (cron) does not express better. */
export const MAX_SCHEDULE_EVERY_DAYS = 3_650;

/** {@link MAX_SCHEDULE_EVERY_DAYS} in ms. */
export const MAX_SCHEDULE_EVERY_MS = MAX_SCHEDULE_EVERY_DAYS * DAY_MS;

// ---- Retries -------------------------------------------------------------------------

/** Default backoff's first delay: 1 s. */
export const DEFAULT_BACKOFF_DELAY_MS = 1_000;

/** Default backoff's factor: each retry waits twice as long as the one before (also claim.lua's, for leases that expire). */
export const DEFAULT_BACKOFF_FACTOR = 2;

/** Default backoff's cap: no retry waits more than 1 h (also claim.lua's). */
export const DEFAULT_BACKOFF_MAX_DELAY_MS = 3_600_000;

/** Largest exponential factor a backoff may set: beyond it the second retry is already past any cap. */
export const MAX_BACKOFF_FACTOR = 100;

/**
 * Most delays a schedule backoff lists (the last one repeats): as many as attempts. A bound of its own that equals
 * MAX_MAX_ATTEMPTS by design, not a second name for it.
 * @alias
 */
export const MAX_BACKOFF_SCHEDULE_DELAYS = MAX_MAX_ATTEMPTS;

/** Most a handler's (or pull consumer's) retry-after may push a retry out: 1 day. */
export const MAX_RETRY_AFTER_MS = DAY_MS;

/** How many attempts a job's history keeps, the latest (records.lua's HISTORY_LIMIT): bounds the record whatever maxAttempts says. */
export const ATTEMPT_HISTORY_LIMIT = 25;

/** The error text kept with an attempt: at most this many bytes of UTF-8, cut between characters (src/error-text.ts cutErrorText), enough for a status line and a reason; a nack's `error` is refused past this many characters. */
export const ATTEMPT_ERROR_BYTES = 1_024;

// ---- Metrics ---------------------------------------------------------------------------

/** Minutes a topic's per-minute series keeps (24 h): the ring's slot is minute mod this (metrics.lua, peek.lua), so its memory stays bounded. */
export const SERIES_MINUTES = 1_440;

// ---- Topic listings, stats pages and /metrics at many topics ----------------------------

/** Topics on a `GET /v1/topics` page when the caller asks for no number. */
export const DEFAULT_TOPIC_PAGE_LIMIT = 100;

/** Most topics on a `GET /v1/topics` page: ~0.5 KB of JSON and one ~0.4 KB script reply each, so a page stays under ~250 KB. */
export const MAX_TOPIC_PAGE_LIMIT = 500;

/** Topics on a `GET /v1/stats` page when the caller asks for no number. */
export const DEFAULT_STATS_PAGE_LIMIT = 50;

/** Most topics on a `GET /v1/stats` page: each carries two histograms (~2 KB of JSON) besides its series. */
export const MAX_STATS_PAGE_LIMIT = 100;

/**
 * Most topic-minutes of per-minute series one `GET /v1/stats` page holds: a page ends after floor(this / minutes)
 * topics (50 at minutes=60, 2 at 1,440), so the HMGET replies it pipelines (≤ ~180 bytes a minute with full
 * histograms) stay under ~0.6 MB and its JSON (~175 bytes a minute idle, ≤ ~250 busy) under ~1 MB.
 */
export const STATS_PAGE_SERIES_MINUTES = 3_000;

/** Default METRICS_TOPICS: topics `/metrics` gives series of their own (the busiest by backlog, then traffic); the rest are summed into one `topic="(others)"` series. */
export const DEFAULT_METRICS_TOPICS = 100;

/** Topics `/metrics` reads per pipelined batch while it ranks them: ~0.4 KB of script reply each, so a batch's reply stays ~100 KB. */
export const METRICS_READ_BATCH = 250;
