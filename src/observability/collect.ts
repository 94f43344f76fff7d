import type { Queue, SeriesPoint, TickStatus, TopicStats } from "../queue/queue.js";

/** One topic as the stats endpoints show it. */
export interface TopicReport {
  stats: TopicStats;
  /** Oldest first; empty when no series was asked for. */
  series: SeriesPoint[];
}

/** Everything /v1/stats, /metrics and the dashboard show, read at one moment. */
export interface PipelineReport {
  now: number;
  /** When the latest scheduled() invocation started. */
  lastScheduledAt: number | null;
  tick: TickStatus | null;
  topics: TopicReport[];
}

/**
 * Reads every topic's snapshot (and, with `minutes`, its per-minute series)
 * plus the tick's heartbeat and status. Two commands per topic and three in
 * all, sent together (the Upstash client pipelines them into one request or few).
 */
export async function collectReport(queue: Queue, options: { minutes: number; now?: number }): Promise<PipelineReport> {
  const now = options.now ?? Date.now();
  const [names, lastScheduledAt, tick] = await Promise.all([queue.listTopics(), queue.health.lastTickAt(), queue.tickStatus()]);
  const topics = await Promise.all(
    names.map(async (name) => {
      const [stats, series] = await Promise.all([
        queue.topicStats(name),
        options.minutes > 0 ? queue.topicSeries(name, { minutes: options.minutes, now }) : Promise.resolve([]),
      ]);
      return { stats, series };
    }),
  );
  return { now, lastScheduledAt, tick, topics };
}
