import { createRoute, z } from "@hono/zod-openapi";
import { SHARD_READ_DEADLINE_MS, DEFAULT_STATS_PAGE_LIMIT, MAX_STATS_PAGE_LIMIT, STATS_PAGE_SERIES_MINUTES } from "../../limits.js";
import { collectPage, collectRanked, type PipelinePage, type ShardHead } from "../../observability/collect.js";
import { MAIN_SHARD } from "../../queue/ids.js";
import { PROMETHEUS_CONTENT_TYPE, toPrometheus } from "../../observability/prometheus.js";
import { LATENESS_BOUNDS_MS, quantile, SERIES_MINUTES, type Histogram } from "../../queue/metrics.js";
import { json, problemResponses, router, shardReadDeadline } from "../context.js";
import { invalid } from "../problem.js";
import { iso, partialOf } from "../schema-parts.js";
import { StatsView } from "../stats-schemas.js";
import { topicPageQuery } from "../topic-schemas.js";
import { decodeTopicCursor, encodeTopicCursor } from "../topic-cursor.js";

/** Minutes over which `ratePerMinute` is averaged. */
const RATE_WINDOW_MINUTES = 5;

const histogramView = (h: Histogram) => ({
  count: h.count,
  sumMs: h.sumMs,
  p50: quantile(h, 0.5),
  p95: quantile(h, 0.95),
  p99: quantile(h, 0.99),
  buckets: h.counts.map((count, i) => ({ leMs: Number.isFinite(h.bounds[i]) ? h.bounds[i]! : null, count })),
});

const tickView = (h: ShardHead) => ({
  lastScheduledAt: h.lastScheduledAt === null ? null : iso(h.lastScheduledAt),
  status: h.tick ? { ...h.tick, startedAt: iso(h.tick.startedAt), updatedAt: iso(h.tick.updatedAt) } : null,
  redisLimitErrors: h.limitErrors,
});

function statsView(r: PipelinePage) {
  const main = r.shards.find((h) => h.shard === MAIN_SHARD);
  return {
    now: iso(r.now),
    latenessBoundsMs: [...LATENESS_BOUNDS_MS],
    tick: main ? tickView(main) : null,
    shards: r.shards.map((h) => ({ shard: h.shard, tick: tickView(h) })),
    ...partialOf(r.missingShards),
    topics: r.topics.map(({ stats: t, series }) => {
      const recent = series.slice(-RATE_WINDOW_MINUTES);
      const settled = recent.reduce((n, p) => n + (p.metrics ? p.metrics.succeeded + p.metrics.retried + p.metrics.dead : 0), 0);
      return {
        topic: t.topic,
        mode: t.settings.mode,
        paused: t.settings.paused,
        scheduled: t.scheduled,
        ready: t.ready,
        inflight: t.inflight,
        dead: t.dead,
        lagMs: t.oldestReadyDueAt === null ? 0 : Math.max(0, r.now - t.oldestReadyDueAt),
        ratePerMinute: recent.length === 0 ? 0 : settled / recent.length,
        counters: t.counters,
        lateness: histogramView(t.metrics.lateness),
        duration: histogramView(t.metrics.duration),
        series: series.map((p) => ({
          at: iso(p.at),
          succeeded: p.metrics?.succeeded ?? 0,
          retried: p.metrics?.retried ?? 0,
          dead: p.metrics?.dead ?? 0,
          latenessP50: p.metrics ? quantile(p.metrics.lateness, 0.5) : null,
          latenessP99: p.metrics ? quantile(p.metrics.lateness, 0.99) : null,
          latenessBuckets: p.metrics?.lateness.counts ?? [],
          scheduled: p.backlog?.scheduled ?? null,
          ready: p.backlog?.ready ?? null,
          inflight: p.backlog?.inflight ?? null,
        })),
        ...(t.flowKeys ? { flowKeys: t.flowKeys } : {}),
      };
    }),
    total: r.totalTopics,
    nextCursor: r.next === null ? null : encodeTopicCursor(r.next),
  };
}

/** GET /v1/stats: the pipeline at a glance, as JSON, a page of topics at a time. */
export const stats = router().openapi(
  createRoute({
    method: "get",
    path: "/",
    operationId: "getStats",
    summary:
      "The tick's heartbeat, and one page of topics (name order) with backlogs, counters, lateness and duration histograms, per-minute series and a shaped topic's flow keys by state",
    description: `Pages with \`cursor\` and \`limit\` (default ${DEFAULT_STATS_PAGE_LIMIT}, at most ${MAX_STATS_PAGE_LIMIT} topics); a page also holds at most ${STATS_PAGE_SERIES_MINUTES.toLocaleString("en")} topic-minutes of series, so it ends after floor(${STATS_PAGE_SERIES_MINUTES} / minutes) topics (${Math.floor(STATS_PAGE_SERIES_MINUTES / 60)} at minutes=60, ${Math.floor(STATS_PAGE_SERIES_MINUTES / SERIES_MINUTES)} at 1,440) and follows on with \`nextCursor\`. A page answers at most ~1 MB (≤ ~2.5 KB per topic plus ≤ ~250 bytes per topic-minute; ~0.57 MB measured for 50 topics × 60 minutes) whatever the number of topics; \`total\` counts every topic registered. With several shards (DELAYLINE_SHARDS) every shard is read at once and the page merges them in name order; a shard that does not answer within ${SHARD_READ_DEADLINE_MS.toLocaleString("en")} ms (or REDIS_TIMEOUT_MS, when lower) is left out and the answer says \`partial: true\` with its name in \`missingShards\` (503 only when no shard answers). Deployment totals of backlogs and counters are on /metrics (the busiest topics plus topic="(others)").`,
    request: {
      query: z.object({
        minutes: z.coerce
          .number()
          .int()
          .min(0)
          .max(SERIES_MINUTES)
          .default(60)
          .openapi({ description: "minutes of per-minute series per topic (0: none; up to 24 h)" }),
        ...topicPageQuery(DEFAULT_STATS_PAGE_LIMIT, MAX_STATS_PAGE_LIMIT, `; fewer when minutes × topics would pass ${STATS_PAGE_SERIES_MINUTES}`),
      }),
    },
    responses: { 200: { description: "Stats", ...json(StatsView) }, ...problemResponses([401, 422, 503]) },
  }),
  async (c) => {
    const { minutes, cursor, limit } = c.req.valid("query");
    const after = cursor === undefined ? undefined : decodeTopicCursor(cursor);
    if (after && "refused" in after) throw invalid("query", [{ path: "cursor", message: after.refused }]);
    const page = await collectPage(c.get("shards"), {
      minutes,
      limit,
      deadlineMs: shardReadDeadline(c.get("settings"), c.get("shards")),
      ...(after ? { after: after.after } : {}),
    });
    return c.json(statsView(page), 200);
  },
);

/** GET /metrics: the same numbers for Prometheus (a token is required, as for the API). */
export const metrics = router().openapi(
  createRoute({
    method: "get",
    path: "/",
    operationId: "getMetrics",
    summary: "Prometheus metrics (text exposition format 0.0.4)",
    description:
      "Series labelled by topic for the METRICS_TOPICS busiest topics (default 100; by backlog, then attempts dispatched), and one labelled topic=\"(others)\" summing the rest, so the text stays ≤ (METRICS_TOPICS + 1) × 44 lines, ≤ ~6 KB a topic with 64-character names (~2.6 KB with short ones), however many topics there are. The Worker reads every topic for it, 250 per pipelined request, every shard at once: delayline_shard_up{shard} is 0 for a shard whose tick did not answer within the deadline /v1/stats uses, or whose topics could not be read (its topics and its tick's series are then missing), 1 for the others; the tick's gauges and delayline_redis_limit_errors_total are labelled by shard.",
    responses: {
      200: { description: "Metrics", content: { [PROMETHEUS_CONTENT_TYPE]: { schema: z.string() } } },
      ...problemResponses([401, 503]),
    },
  }),
  async (c) => {
    const s = c.get("settings");
    const report = await collectRanked(c.get("shards"), { top: s.metricsTopics, deadlineMs: shardReadDeadline(s, c.get("shards")) });
    return c.text(toPrometheus(report), 200, { "content-type": PROMETHEUS_CONTENT_TYPE });
  },
);
