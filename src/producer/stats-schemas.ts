// The schema of /v1/stats: the tick's status, and each topic's counts,
// histograms and minute series.
import { z } from "@hono/zod-openapi";

import { partialFields, TopicRef } from "./schema-parts.js";
import { Counters, FlowKeyCountsView } from "./topic-schemas.js";

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

const TickView = z
  .object({
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
  })
  .openapi("TickView");

const ShardView = z
  .object({ shard: z.string(), tick: TickView })
  .openapi("ShardTick", { description: "One shard's tick: the cron's latest start of it, its loop's status, its Redis's limit errors" });

export const StatsView = z
  .object({
    now: z.string(),
    latenessBoundsMs: z.array(z.number()).openapi({ description: "upper bounds of the lateness buckets in ms; one more bucket holds the rest" }),
    tick: TickView.nullable().openapi({ description: "the main shard's tick (every shard's is in `shards`); null when main did not answer" }),
    shards: z.array(ShardView).openapi({ description: "every shard that answered, in the order DELAYLINE_SHARDS lists them (one, `main`, without it)" }),
    ...partialFields,
    topics: z.array(
      z.object({
        topic: TopicRef,
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
        flowKeys: FlowKeyCountsView.optional(),
      }),
    ),
    total: z.number().int().openapi({ description: "topics registered in all (every page) on the shards that answered: one SCARD per shard" }),
    nextCursor: z.string().nullable().openapi({ description: "pass as `cursor` for the next page of topics; null on the last page" }),
  })
  .openapi("Stats");
