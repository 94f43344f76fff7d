import { METRICS_READ_BATCH, STATS_PAGE_SERIES_MINUTES } from "../limits.js";
import type { Histogram, MetricsSnapshot } from "../queue/metrics.js";
import type { Queue, SeriesPoint, TickStatus, TopicStats } from "../queue/queue.js";
import type { RedisLimit } from "../queue/errors.js";

/** One topic as the stats endpoints show it. */
interface TopicReport {
  stats: TopicStats;
  /** Oldest first; empty when no series was asked for. */
  series: SeriesPoint[];
}

/** The tick's heartbeat and status, and how many topics there are: what every stats answer carries, whatever its page. */
interface PipelineHead {
  now: number;
  /** When the latest scheduled() invocation started. */
  lastScheduledAt: number | null;
  tick: TickStatus | null;
  /** Commands Redis (Upstash) refused at each of its limits, since the deployment began. */
  limitErrors: Record<RedisLimit, number>;
  /** Topics registered in all (not only on this page). */
  totalTopics: number;
}

/** One page of what /v1/stats and the dashboard show, read at one moment. */
export interface PipelinePage extends PipelineHead {
  topics: TopicReport[];
  /** The last topic of the page when more follow (the next page starts after it), else null. */
  next: string | null;
}

/** Options of {@link collectPage}. */
export interface PageOptions {
  /** Minutes of per-minute series per topic (0: none). */
  minutes: number;
  /** Most topics on the page; fewer when the series would pass {@link STATS_PAGE_SERIES_MINUTES}. */
  limit: number;
  /** The page starts after this topic. Default: the first. */
  after?: string;
  now?: number;
}

/** Topics a page of `minutes` of series may hold: `limit`, or fewer so the page's series stay within {@link STATS_PAGE_SERIES_MINUTES}. */
function topicsPerPage(limit: number, minutes: number): number {
  return minutes > 0 ? Math.max(1, Math.min(limit, Math.floor(STATS_PAGE_SERIES_MINUTES / minutes))) : limit;
}

/**
 * Reads one page of topics (name order) with each topic's snapshot and,
 * with `minutes`, its per-minute series, plus the tick's heartbeat and
 * status. One script call lists the page; then two commands per topic of
 * the page and two for the tick, sent together (the Upstash client
 * pipelines them into one request), so neither the Redis replies nor the
 * answer grow with the number of topics.
 */
export async function collectPage(queue: Queue, options: PageOptions): Promise<PipelinePage> {
  const now = options.now ?? Date.now();
  const limit = topicsPerPage(options.limit, options.minutes);
  const [page, lastScheduledAt, tick, limitErrors] = await Promise.all([
    queue.listTopicsPage({ limit, ...(options.after === undefined ? {} : { after: options.after }) }),
    queue.health.lastTickAt(),
    queue.tickStatus(),
    queue.limitErrorCounts(),
  ]);
  const topics = await Promise.all(
    page.names.map(async (name) => {
      const [stats, series] = await Promise.all([
        queue.topicStats(name),
        options.minutes > 0 ? queue.topicSeries(name, { minutes: options.minutes, now }) : Promise.resolve([]),
      ]);
      return { stats, series };
    }),
  );
  return { now, lastScheduledAt, tick, limitErrors, totalTopics: page.total, topics, next: page.next };
}

/** The topics summed into one: gauges and counters added, histograms merged, the oldest ready job the oldest of any. */
export interface TopicTotals {
  /** How many topics were summed. */
  topics: number;
  scheduled: number;
  ready: number;
  inflight: number;
  dead: number;
  /** Topics paused among them. */
  paused: number;
  oldestReadyDueAt: number | null;
  counters: TopicStats["counters"];
  metrics: Pick<MetricsSnapshot, "lateness" | "duration">;
}

/** What /metrics shows: the busiest topics on their own, the rest summed. */
export interface RankedReport extends PipelineHead {
  /** The busiest topics, busiest first (see {@link busier}). */
  top: TopicStats[];
  /** Every other topic summed; null when there is none. */
  others: TopicTotals | null;
}

/** Orders topics busiest first: backlog (scheduled + in flight + dead), then attempts dispatched, then name. */
function busier(a: TopicStats, b: TopicStats): number {
  const backlog = (t: TopicStats) => t.scheduled + t.inflight + t.dead;
  return backlog(b) - backlog(a) || b.counters.dispatched - a.counters.dispatched || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0);
}

const emptyHistogram = (h: Histogram): Histogram => ({ bounds: h.bounds, counts: h.counts.map(() => 0), count: 0, sumMs: 0 });

function addHistogram(into: Histogram, h: Histogram): void {
  for (const [i, c] of h.counts.entries()) into.counts[i] = (into.counts[i] ?? 0) + c;
  into.count += h.count;
  into.sumMs += h.sumMs;
}

function addTopic(into: TopicTotals | null, t: TopicStats): TopicTotals {
  const sum = into ?? {
    topics: 0,
    scheduled: 0,
    ready: 0,
    inflight: 0,
    dead: 0,
    paused: 0,
    oldestReadyDueAt: null,
    counters: { dispatched: 0, succeeded: 0, retried: 0, dead: 0 },
    metrics: { lateness: emptyHistogram(t.metrics.lateness), duration: emptyHistogram(t.metrics.duration) },
  };
  sum.topics += 1;
  sum.scheduled += t.scheduled;
  sum.ready += t.ready;
  sum.inflight += t.inflight;
  sum.dead += t.dead;
  sum.paused += t.settings.paused ? 1 : 0;
  if (t.oldestReadyDueAt !== null) sum.oldestReadyDueAt = Math.min(sum.oldestReadyDueAt ?? Infinity, t.oldestReadyDueAt);
  sum.counters.dispatched += t.counters.dispatched;
  sum.counters.succeeded += t.counters.succeeded;
  sum.counters.retried += t.counters.retried;
  sum.counters.dead += t.counters.dead;
  addHistogram(sum.metrics.lateness, t.metrics.lateness);
  addHistogram(sum.metrics.duration, t.metrics.duration);
  return sum;
}

/**
 * Reads every topic's snapshot, {@link METRICS_READ_BATCH} topics per
 * pipelined request (so no Redis reply passes ~100 KB however many topics
 * there are), keeps the `top` busiest and sums the rest as it goes; memory
 * holds `top` snapshots and one sum, not every topic's.
 */
export async function collectRanked(queue: Queue, options: { top: number; now?: number }): Promise<RankedReport> {
  const now = options.now ?? Date.now();
  const [lastScheduledAt, tick, limitErrors] = await Promise.all([queue.health.lastTickAt(), queue.tickStatus(), queue.limitErrorCounts()]);
  const top: TopicStats[] = [];
  let others: TopicTotals | null = null;
  let totalTopics = 0;
  let after: string | undefined;
  do {
    const page = await queue.listTopicsPage({ limit: METRICS_READ_BATCH, ...(after === undefined ? {} : { after }) });
    totalTopics = page.total;
    for (const stats of await Promise.all(page.names.map((n) => queue.topicStats(n)))) {
      // Insert in order; what falls off the end joins the sum.
      let i = top.length;
      while (i > 0 && busier(stats, top[i - 1]!) < 0) i--;
      top.splice(i, 0, stats);
      if (top.length > options.top) others = addTopic(others, top.pop()!);
    }
    after = page.next ?? undefined;
  } while (after !== undefined);
  return { now, lastScheduledAt, tick, limitErrors, totalTopics, top, others };
}
