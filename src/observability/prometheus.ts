import { DURATION_BOUNDS_MS, LATENESS_BOUNDS_MS, type Histogram } from "../queue/metrics.js";
import type { RankedReport, TopicTotals } from "./collect.js";
import type { TopicStats } from "../queue/queue.js";

/** The content type of the Prometheus text exposition format this module writes. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const seconds = (ms: number) => String(ms / 1_000);

type Sample = { labels?: Record<string, string>; value: number; suffix?: string };

/** Writes one metric family: HELP, TYPE, then its samples. */
function family(lines: string[], name: string, type: "gauge" | "counter" | "histogram", help: string, samples: Sample[]): void {
  lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  for (const s of samples) {
    const labels = Object.entries(s.labels ?? {});
    const text = labels.length === 0 ? "" : `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
    const value = Number.isFinite(s.value) ? String(s.value) : s.value > 0 ? "+Inf" : s.value < 0 ? "-Inf" : "NaN";
    lines.push(`${name}${s.suffix ?? ""}${text} ${value}`);
  }
}

/** A histogram's cumulative buckets, sum and count, in seconds. */
function histogramSamples(topic: string, h: Histogram, bounds: readonly number[]): Sample[] {
  const out: Sample[] = [];
  let cumulative = 0;
  for (let i = 0; i < h.counts.length; i++) {
    cumulative += h.counts[i]!;
    const le = i < bounds.length ? seconds(bounds[i]!) : "+Inf";
    out.push({ suffix: "_bucket", labels: { topic, le }, value: cumulative });
  }
  out.push({ suffix: "_sum", labels: { topic }, value: h.sumMs / 1_000 }, { suffix: "_count", labels: { topic }, value: h.count });
  return out;
}

/** The `topic` label of the series that sums every topic without series of its own: no topic can be named so (TopicName allows no parentheses). */
export const OTHER_TOPICS_LABEL = "(others)";

/** What one `topic` label's samples are read from: a topic, or the sum of the others. */
type Row = Pick<TopicStats, "topic" | "scheduled" | "ready" | "inflight" | "dead" | "oldestReadyDueAt" | "counters"> & {
  paused: number;
  metrics: Pick<TopicStats["metrics"], "lateness" | "duration">;
};

const topicRow = (t: TopicStats): Row => ({ ...t, paused: t.settings.paused ? 1 : 0 });
const othersRow = (o: TopicTotals): Row => ({ ...o, topic: OTHER_TOPICS_LABEL });

/**
 * The report in the Prometheus text exposition format (version 0.0.4):
 * gauges for backlogs and the tick, counters for outcomes, histograms for
 * lateness and handler duration, labelled by topic for the busiest topics
 * and by `topic="(others)"` for the sum of the rest (whose counters drop when
 * a topic moves into the busiest; sum by topic for deployment totals). The
 * text holds at most (top + 1) topics' series: 43 lines, ≤ ~6 KB each.
 */
export function toPrometheus(report: RankedReport): string {
  const lines: string[] = [];
  const topics = [...report.top.map(topicRow), ...(report.others ? [othersRow(report.others)] : [])];
  const perTopic = (value: (t: Row) => number): Sample[] => topics.map((t) => ({ labels: { topic: t.topic }, value: value(t) }));
  family(lines, "delayline_topics", "gauge", `Topics registered; those beyond the busiest are summed under topic="${OTHER_TOPICS_LABEL}".`, [
    { value: report.totalTopics },
  ]);

  family(
    lines,
    "delayline_jobs_scheduled",
    "gauge",
    "Jobs on the schedule, due or not (including those waiting for a retry).",
    perTopic((t) => t.scheduled),
  );
  family(
    lines,
    "delayline_jobs_ready",
    "gauge",
    "Scheduled jobs that are due now and not yet claimed.",
    perTopic((t) => t.ready),
  );
  family(
    lines,
    "delayline_jobs_inflight",
    "gauge",
    "Jobs claimed and not yet settled.",
    perTopic((t) => t.inflight),
  );
  family(
    lines,
    "delayline_dead_letters",
    "gauge",
    "Entries in the dead-letter list.",
    perTopic((t) => t.dead),
  );
  family(
    lines,
    "delayline_oldest_ready_age_seconds",
    "gauge",
    "How long the oldest ready job has been due (lag); 0 when none is ready.",
    perTopic((t) => (t.oldestReadyDueAt === null ? 0 : Math.max(0, report.now - t.oldestReadyDueAt) / 1_000)),
  );
  family(
    lines,
    "delayline_topic_paused",
    "gauge",
    `1 while the topic is paused (topic="${OTHER_TOPICS_LABEL}": how many of those topics are).`,
    perTopic((t) => t.paused),
  );
  family(
    lines,
    "delayline_jobs_dispatched_total",
    "counter",
    "Attempts handed to handlers (claimed).",
    perTopic((t) => t.counters.dispatched),
  );
  family(
    lines,
    "delayline_jobs_succeeded_total",
    "counter",
    "Attempts that succeeded.",
    perTopic((t) => t.counters.succeeded),
  );
  family(
    lines,
    "delayline_jobs_retried_total",
    "counter",
    "Attempts that failed and were scheduled again.",
    perTopic((t) => t.counters.retried),
  );
  family(
    lines,
    "delayline_jobs_dead_total",
    "counter",
    "Jobs moved to the dead-letter list.",
    perTopic((t) => t.counters.dead),
  );
  family(
    lines,
    "delayline_lateness_seconds",
    "histogram",
    "Handler start time less the attempt's due time.",
    topics.flatMap((t) => histogramSamples(t.topic, t.metrics.lateness, LATENESS_BOUNDS_MS)),
  );
  family(
    lines,
    "delayline_handler_duration_seconds",
    "histogram",
    "How long handlers ran.",
    topics.flatMap((t) => histogramSamples(t.topic, t.metrics.duration, DURATION_BOUNDS_MS)),
  );
  family(
    lines,
    "delayline_redis_limit_errors_total",
    "counter",
    "Commands Redis (Upstash) refused at one of its limits: record-size, request-size, requests, capacity, memory (maxmemory).",
    Object.entries(report.limitErrors).map(([limit, value]) => ({ labels: { limit }, value })),
  );
  const tick = report.tick;
  const gauge = (name: string, help: string, value: number | null | undefined) => {
    if (value !== null && value !== undefined) family(lines, name, "gauge", help, [{ value }]);
  };
  gauge(
    "delayline_tick_last_scheduled_timestamp_seconds",
    "When the latest cron invocation started.",
    report.lastScheduledAt === null ? null : report.lastScheduledAt / 1_000,
  );
  gauge("delayline_tick_status_timestamp_seconds", "When the tick loop last reported its status.", tick ? tick.updatedAt / 1_000 : null);
  gauge("delayline_tick_running", "1 while a tick loop runs (its status has no end).", tick ? (tick.ended === null ? 1 : 0) : null);
  gauge("delayline_tick_asleep", "1 while the tick loop only looks every TICK_IDLE_PEEK_MS.", tick ? (tick.asleep ? 1 : 0) : null);
  gauge("delayline_tick_rounds", "Rounds run by the current (or last) tick invocation.", tick?.rounds);
  gauge("delayline_tick_subrequests", "Subrequests spent by the current (or last) tick invocation.", tick?.subrequests);
  gauge("delayline_tick_subrequest_budget", "The tick invocation's subrequest budget.", tick?.budget);
  return `${lines.join("\n")}\n`;
}
