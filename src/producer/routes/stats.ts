import { createRoute, z } from "@hono/zod-openapi";
import { collectReport, type PipelineReport } from "../../observability/collect.js";
import { PROMETHEUS_CONTENT_TYPE, toPrometheus } from "../../observability/prometheus.js";
import { LATENESS_BOUNDS_MS, quantile, SERIES_MINUTES, type Histogram } from "../../queue/metrics.js";
import { json, problemResponses, router, type AppEnv } from "../context.js";
import { iso, StatsView } from "../schemas.js";
import type { Context } from "hono";

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

function statsView(r: PipelineReport) {
  return {
    now: iso(r.now),
    latenessBoundsMs: [...LATENESS_BOUNDS_MS],
    tick: {
      lastScheduledAt: r.lastScheduledAt === null ? null : iso(r.lastScheduledAt),
      status: r.tick ? { ...r.tick, startedAt: iso(r.tick.startedAt), updatedAt: iso(r.tick.updatedAt) } : null,
    },
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
      };
    }),
  };
}

const report = (c: Context<AppEnv>, minutes: number) => collectReport(c.get("queue"), { minutes });

/** GET /v1/stats: the pipeline at a glance, as JSON. */
export const stats = router().openapi(
  createRoute({
    method: "get",
    path: "/",
    operationId: "getStats",
    summary: "Backlogs, counters, lateness and duration histograms and per-minute series of every topic, and the tick's heartbeat",
    request: {
      query: z.object({
        minutes: z.coerce
          .number()
          .int()
          .min(0)
          .max(SERIES_MINUTES)
          .default(60)
          .openapi({ description: "minutes of per-minute series per topic (0: none; up to 24 h)" }),
      }),
    },
    responses: { 200: { description: "Stats", ...json(StatsView) }, ...problemResponses([401, 422, 503]) },
  }),
  async (c) => c.json(statsView(await report(c, c.req.valid("query").minutes)), 200),
);

/** GET /metrics: the same numbers for Prometheus (a token is required, as for the API). */
export const metrics = router().openapi(
  createRoute({
    method: "get",
    path: "/",
    operationId: "getMetrics",
    summary: "Prometheus metrics (text exposition format 0.0.4)",
    responses: {
      200: { description: "Metrics", content: { [PROMETHEUS_CONTENT_TYPE]: { schema: z.string() } } },
      ...problemResponses([401, 503]),
    },
  }),
  async (c) => c.text(toPrometheus(await report(c, 0)), 200, { "content-type": PROMETHEUS_CONTENT_TYPE }),
);
