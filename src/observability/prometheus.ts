import { DURATION_BOUNDS_MS, LATENESS_BOUNDS_MS, type Histogram } from "../queue/metrics.js";
import type { RankedReport, ShardHead, TopicTotals } from "./collect.js";
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
const OTHER_TOPICS_LABEL = "(others)";

/** What one `topic` label's samples are read from: a topic, or the sum of the others. */
type Row = Pick<TopicStats, "topic" | "scheduled" | "ready" | "inflight" | "dead" | "oldestReadyDueAt" | "counters" | "flowKeys"> & {
  paused: number;
  metrics: Pick<TopicStats["metrics"], "lateness" | "duration">;
};

const topicRow = (t: TopicStats): Row => ({ ...t, paused: t.settings.paused ? 1 : 0 });
const othersRow = (o: TopicTotals): Row => ({ ...o, topic: OTHER_TOPICS_LABEL });

/** A gauge or counter with one sample per `topic` label. */
interface TopicFamily {
  name: string;
  type: "gauge" | "counter";
  help: string;
  value: (t: Row, now: number) => number;
}

/** The per-topic gauges and counters, in the order they are written. */
const TOPIC_FAMILIES: readonly TopicFamily[] = [
  {
    name: "delayline_jobs_scheduled",
    type: "gauge",
    help: "Jobs on the schedule, due or not (including those waiting for a retry).",
    value: (t) => t.scheduled,
  },
  { name: "delayline_jobs_ready", type: "gauge", help: "Scheduled jobs that are due now and not yet claimed.", value: (t) => t.ready },
  { name: "delayline_jobs_inflight", type: "gauge", help: "Jobs claimed and not yet settled.", value: (t) => t.inflight },
  { name: "delayline_dead_letters", type: "gauge", help: "Entries in the dead-letter list.", value: (t) => t.dead },
  {
    name: "delayline_oldest_ready_age_seconds",
    type: "gauge",
    help: "How long the oldest ready job has been due (lag); 0 when none is ready.",
    value: (t, now) => (t.oldestReadyDueAt === null ? 0 : Math.max(0, now - t.oldestReadyDueAt) / 1_000),
  },
  {
    name: "delayline_topic_paused",
    type: "gauge",
    help: `1 while the topic is paused (topic="${OTHER_TOPICS_LABEL}": how many of those topics are).`,
    value: (t) => t.paused,
  },
  { name: "delayline_jobs_dispatched_total", type: "counter", help: "Attempts handed to handlers (claimed).", value: (t) => t.counters.dispatched },
  { name: "delayline_jobs_succeeded_total", type: "counter", help: "Attempts that succeeded.", value: (t) => t.counters.succeeded },
  { name: "delayline_jobs_retried_total", type: "counter", help: "Attempts that failed and were scheduled again.", value: (t) => t.counters.retried },
  { name: "delayline_jobs_dead_total", type: "counter", help: "Jobs moved to the dead-letter list.", value: (t) => t.counters.dead },
  {
    name: "delayline_jobs_dropped_total",
    type: "counter",
    help: "Pending jobs dropped for the topic's maxLength or a flow key's maxKeyLength (overflow dropOldest).",
    value: (t) => t.counters.dropped,
  },
  {
    name: "delayline_jobs_expired_total",
    type: "counter",
    help: "Jobs that expired before they started (their expiresAt, or the topic's maxLateness); not failures.",
    value: (t) => t.counters.expired,
  },
];

/** The per-topic histograms, in seconds. */
const HISTOGRAMS: ReadonlyArray<{ name: string; help: string; of: (t: Row) => Histogram; bounds: readonly number[] }> = [
  { name: "delayline_lateness_seconds", help: "Handler start time less the attempt's due time.", of: (t) => t.metrics.lateness, bounds: LATENESS_BOUNDS_MS },
  { name: "delayline_handler_duration_seconds", help: "How long handlers ran.", of: (t) => t.metrics.duration, bounds: DURATION_BOUNDS_MS },
];

/** The tick's gauges: one sample per shard, left out while the value is unknown (no tick status yet, no cron invocation yet). */
const TICK_GAUGES: ReadonlyArray<{ name: string; help: string; value: (r: ShardHead) => number | null | undefined }> = [
  {
    name: "delayline_tick_last_scheduled_timestamp_seconds",
    help: "When the latest cron invocation started.",
    value: (r) => (r.lastScheduledAt === null ? null : r.lastScheduledAt / 1_000),
  },
  {
    name: "delayline_tick_status_timestamp_seconds",
    help: "When the tick loop last reported its status.",
    value: (r) => (r.tick ? r.tick.updatedAt / 1_000 : null),
  },
  {
    name: "delayline_tick_running",
    help: "1 while a tick loop runs (its status has no end).",
    value: (r) => (r.tick ? (r.tick.ended === null ? 1 : 0) : null),
  },
  { name: "delayline_tick_asleep", help: "1 while the tick loop only looks every TICK_IDLE_PEEK_MS.", value: (r) => (r.tick ? (r.tick.asleep ? 1 : 0) : null) },
  { name: "delayline_tick_rounds", help: "Rounds run by the current (or last) tick invocation.", value: (r) => r.tick?.rounds },
  { name: "delayline_tick_subrequests", help: "Subrequests spent by the current (or last) tick invocation.", value: (r) => r.tick?.subrequests },
  { name: "delayline_tick_subrequest_budget", help: "The tick invocation's subrequest budget.", value: (r) => r.tick?.budget },
];

/**
 * The report in the Prometheus text exposition format (version 0.0.4):
 * gauges for backlogs and the tick, counters for outcomes, histograms for
 * lateness and handler duration, labelled by topic for the busiest topics
 * and by `topic="(others)"` for the sum of the rest (whose counters drop when
 * a topic moves into the busiest; sum by topic for deployment totals). The
 * text holds at most (top + 1) topics' series: 44 lines, ≤ ~6 KB each.
 */
export function toPrometheus(report: RankedReport): string {
  const lines: string[] = [];
  const topics = [...report.top.map(topicRow), ...(report.others ? [othersRow(report.others)] : [])];
  family(lines, "delayline_topics", "gauge", `Topics registered; those beyond the busiest are summed under topic="${OTHER_TOPICS_LABEL}".`, [
    { value: report.totalTopics },
  ]);
  for (const f of TOPIC_FAMILIES) {
    family(
      lines,
      f.name,
      f.type,
      f.help,
      topics.map((t) => ({ labels: { topic: t.topic }, value: f.value(t, report.now) })),
    );
  }
  // Per topic, never per key: a shaped topic's keys by where they stand (the busiest topics' own; the others' are not summed).
  const shaped = topics.filter((t) => t.flowKeys);
  if (shaped.length > 0) {
    family(
      lines,
      "delayline_flow_keys",
      "gauge",
      "A shaped topic's flow keys by state: in_turn (due jobs, served in turn), waiting_for_rate, at_parallelism (parked), paused.",
      shaped.flatMap((t) => {
        const k = t.flowKeys!;
        return [
          { labels: { topic: t.topic, state: "in_turn" }, value: k.inTurn },
          { labels: { topic: t.topic, state: "waiting_for_rate" }, value: k.waitingForRate },
          { labels: { topic: t.topic, state: "at_parallelism" }, value: k.atParallelism },
          { labels: { topic: t.topic, state: "paused" }, value: k.paused },
        ];
      }),
    );
  }
  for (const h of HISTOGRAMS) {
    family(
      lines,
      h.name,
      "histogram",
      h.help,
      topics.flatMap((t) => histogramSamples(t.topic, h.of(t), h.bounds)),
    );
  }
  family(
    lines,
    "delayline_shard_up",
    "gauge",
    "1 when the shard answered this scrape in time, 0 when it did not (its topics and series are missing from it).",
    [...report.shards.map((h) => ({ labels: { shard: h.shard }, value: 1 })), ...report.missingShards.map((shard) => ({ labels: { shard }, value: 0 }))],
  );
  family(
    lines,
    "delayline_redis_limit_errors_total",
    "counter",
    "Commands a shard's Redis (Upstash) refused at one of its limits: record-size, request-size, requests, capacity, memory (maxmemory).",
    report.shards.flatMap((h) => Object.entries(h.limitErrors).map(([limit, value]) => ({ labels: { shard: h.shard, limit }, value }))),
  );
  for (const g of TICK_GAUGES) {
    const samples = report.shards.flatMap((h) => {
      const value = g.value(h);
      return value === null || value === undefined ? [] : [{ labels: { shard: h.shard }, value }];
    });
    if (samples.length > 0) family(lines, g.name, "gauge", g.help, samples);
  }
  return `${lines.join("\n")}\n`;
}
