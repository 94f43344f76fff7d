import { METRICS_READ_BATCH, STATS_PAGE_SERIES_MINUTES } from "../limits.js";
import type { Histogram, MetricsSnapshot } from "../queue/metrics.js";
import type { Queue, SeriesPoint, TickStatus, TopicStats } from "../queue/queue.js";
import type { RedisLimit } from "../queue/errors.js";
import { listTopicsAcrossShards, readPageTopics } from "../queue/shard-listing.js";
import type { Shards } from "../queue/shards.js";

/** One topic as the stats endpoints show it. */
interface TopicReport {
  stats: TopicStats;
  /** Oldest first; empty when no series was asked for. */
  series: SeriesPoint[];
}

/** One shard's tick: heartbeat, status and the limits its Redis refused at. */
export interface ShardHead {
  shard: string;
  /** When the latest cron invocation started this shard's tick. */
  lastScheduledAt: number | null;
  tick: TickStatus | null;
  /** Commands the shard's Redis (Upstash) refused at each of its limits, since the deployment began. */
  limitErrors: Record<RedisLimit, number>;
}

/** What every stats answer carries, whatever its page: each shard's tick, which shards did not answer, how many topics there are. */
interface PipelineHead {
  now: number;
  /** Each shard that answered, in the order the settings list them. */
  shards: ShardHead[];
  /** Shards that did not answer in time (down, at a limit, or slower than the deadline); empty when all did. */
  missingShards: string[];
  /** Topics registered in all (not only on this page) on the shards that answered. */
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
  /** How long each shard may take to answer before the page is given without it (null: its requests' own deadline). */
  deadlineMs: number | null;
}

/** Topics a page of `minutes` of series may hold: `limit`, or fewer so the page's series stay within {@link STATS_PAGE_SERIES_MINUTES}. */
function topicsPerPage(limit: number, minutes: number): number {
  return minutes > 0 ? Math.max(1, Math.min(limit, Math.floor(STATS_PAGE_SERIES_MINUTES / minutes))) : limit;
}

/** A shard's tick, read with three commands sent together. */
async function shardHead(queue: Queue, shard: string): Promise<ShardHead> {
  const [lastScheduledAt, tick, limitErrors] = await Promise.all([queue.health.lastTickAt(), queue.tickStatus(), queue.limitErrorCounts()]);
  return { shard, lastScheduledAt, tick, limitErrors };
}

/**
 * Reads one page of topics (name order, across every shard) with each
 * topic's snapshot and, with `minutes`, its per-minute series, plus each
 * shard's tick. Per shard, one script call lists its part of the page and
 * three commands read its tick, sent together; then two commands per topic
 * of the page, on the topic's shard (the Upstash client pipelines them into
 * one request per shard), so neither the Redis replies nor the answer grow
 * with the number of topics. A shard that does not answer within the
 * deadline is left out and named in `missingShards`.
 */
export async function collectPage(shards: Shards, options: PageOptions): Promise<PipelinePage> {
  const now = options.now ?? Date.now();
  const limit = topicsPerPage(options.limit, options.minutes);
  const [page, heads] = await Promise.all([
    listTopicsAcrossShards(shards, { limit, ...(options.after === undefined ? {} : { after: options.after }) }, options.deadlineMs),
    shards.readEach(shardHead, options.deadlineMs),
  ]);
  const topics = await readPageTopics(
    shards,
    page,
    async (queue, topic) => {
      const [stats, series] = await Promise.all([
        queue.topicStats(topic),
        options.minutes > 0 ? queue.topicSeries(topic, { minutes: options.minutes, now }) : Promise.resolve([]),
      ]);
      return { stats, series };
    },
    options.deadlineMs,
  );
  const missing = new Set([...topics.missing, ...heads.missing]);
  return {
    now,
    shards: heads.answers.map((a) => a.value),
    missingShards: shards.names.filter((n) => missing.has(n)),
    totalTopics: page.total,
    topics: topics.values,
    next: page.next,
  };
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

const emptyTotals = (h: Pick<MetricsSnapshot, "lateness" | "duration">): TopicTotals => ({
  topics: 0,
  scheduled: 0,
  ready: 0,
  inflight: 0,
  dead: 0,
  paused: 0,
  oldestReadyDueAt: null,
  counters: { dispatched: 0, succeeded: 0, retried: 0, dead: 0, dropped: 0, expired: 0 },
  metrics: { lateness: emptyHistogram(h.lateness), duration: emptyHistogram(h.duration) },
});

/** Adds `t` (one topic, or topics already summed) into `into`. */
function addTotals(into: TopicTotals | null, t: TopicTotals): TopicTotals {
  const sum = into ?? emptyTotals(t.metrics);
  sum.topics += t.topics;
  sum.scheduled += t.scheduled;
  sum.ready += t.ready;
  sum.inflight += t.inflight;
  sum.dead += t.dead;
  sum.paused += t.paused;
  if (t.oldestReadyDueAt !== null) sum.oldestReadyDueAt = Math.min(sum.oldestReadyDueAt ?? Infinity, t.oldestReadyDueAt);
  for (const k of ["dispatched", "succeeded", "retried", "dead", "dropped", "expired"] as const) sum.counters[k] += t.counters[k];
  addHistogram(sum.metrics.lateness, t.metrics.lateness);
  addHistogram(sum.metrics.duration, t.metrics.duration);
  return sum;
}

/** One topic as a sum of one. */
const totalsOf = (t: TopicStats): TopicTotals => ({
  topics: 1,
  scheduled: t.scheduled,
  ready: t.ready,
  inflight: t.inflight,
  dead: t.dead,
  paused: t.settings.paused ? 1 : 0,
  oldestReadyDueAt: t.oldestReadyDueAt,
  counters: t.counters,
  metrics: t.metrics,
});

/** The busiest topics and the sum of the rest, as one shard (or all of them) reads. */
interface Ranked {
  top: TopicStats[];
  others: TopicTotals | null;
}

/** Puts `stats` among `r.top` in order; what falls off past `keep` joins the sum. */
function rank(r: Ranked, stats: TopicStats, keep: number): void {
  let i = r.top.length;
  while (i > 0 && busier(stats, r.top[i - 1]!) < 0) i--;
  r.top.splice(i, 0, stats);
  if (r.top.length > keep) r.others = addTotals(r.others, totalsOf(r.top.pop()!));
}

/**
 * Reads every topic of one shard, {@link METRICS_READ_BATCH} topics per
 * pipelined request (so no Redis reply passes ~100 KB however many topics
 * there are), keeps the `keep` busiest and sums the rest as it goes.
 */
async function rankShard(queue: Queue, shard: string, shards: Shards, keep: number): Promise<Ranked & { total: number }> {
  const r: Ranked = { top: [], others: null };
  let total = 0;
  let after: string | undefined;
  do {
    const page = await queue.listTopicsPage({ limit: METRICS_READ_BATCH, ...(after === undefined ? {} : { after }) });
    total = page.total;
    // A topic moved by a pin is counted on the shard it is placed on now (as the topic listing shows it).
    const own = shards.names.length === 1 ? page.names : page.names.filter((n) => shards.shardOf(n) === shard);
    for (const stats of await Promise.all(own.map((n) => queue.topicStats(n)))) rank(r, stats, keep);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return { ...r, total };
}

/**
 * Reads every topic of every shard (the shards at once, each as
 * {@link rankShard} does), keeps the `top` busiest of them all and sums the
 * rest; memory holds `top` snapshots and one sum per shard, not every
 * topic's. First each shard's tick, within the deadline: a shard that does
 * not answer it is left out and named in `missingShards`; the walk that
 * follows has no deadline of its own (its requests' own), as its length
 * grows with the shard's topics, and a shard that fails it is left out too.
 */
export async function collectRanked(shards: Shards, options: { top: number; now?: number; deadlineMs: number | null }): Promise<RankedReport> {
  const now = options.now ?? Date.now();
  const heads = await shards.readEach(shardHead, options.deadlineMs);
  const walked = await shards.readEach(
    (queue, shard) => rankShard(queue, shard, shards, options.top),
    null,
    heads.answers.map((a) => a.shard),
  );
  const all: Ranked = { top: [], others: null };
  for (const { value } of walked.answers) {
    if (value.others) all.others = addTotals(all.others, value.others);
    for (const stats of value.top) rank(all, stats, options.top);
  }
  const answered = new Set(walked.answers.map((a) => a.shard));
  return {
    now,
    shards: heads.answers.filter((a) => answered.has(a.shard)).map((a) => a.value),
    missingShards: shards.names.filter((n) => !answered.has(n)),
    totalTopics: walked.answers.reduce((n, a) => n + a.value.total, 0),
    ...all,
  };
}
