import { z } from "zod";
import type { QueueContext } from "./context.js";
import { TopicLimitError } from "./errors.js";
import { flowKeyList, idOfIndexMember } from "./keys.js";
import * as lua from "./lua.generated.js";
import { SERIES_MINUTES, snapshotOf } from "./metrics.js";
import { pipeline, pipelineRead, redisCall } from "./redis.js";
import { forgetRegistered } from "./registrations.js";
import { replies } from "./replies.js";
import { decodeTopicConf, encodeTopicPatch, type TopicPatch, type TopicSecrets, type TopicSettings } from "./topics.js";
import { flatHash, intReply, nullableString, vectorText } from "./types.js";
import { MAX_CONTENT_DEDUP_MS, MAX_TOPIC_PAGE_LIMIT } from "../limits.js";
import type { DeleteTopicResult, SeriesPoint, TopicPage, TopicPageOptions, TopicStats } from "./views.js";

// Topics as a whole: their registry, settings, deletion (with every job's
// two keys: scheduled, dead and finished), and the counters and per-minute
// series read from them.

/** Most jobs (scheduled, dead letters, finished) one call of delete-topic drops, each with its two keys. */
const PURGE_BATCH = 1_000;

export async function configureTopic(ctx: QueueContext, topic: string, patch: TopicPatch): Promise<void> {
  const t = ctx.keys.topic(topic);
  const { set, clear } = encodeTopicPatch(patch);
  const result = replies.configureTopic.parse(
    await ctx.run(
      lua.configureTopic,
      [t.conf, ctx.keys.topics, t.bucket, ctx.keys.topicIndex, ctx.keys.parked, t.due, t.lease, t.flow.fsched, t.flow.fcal],
      [topic, ctx.maxTopics, set.length, ...set.flat(), ...clear],
    ),
  );
  if (result === "topic-limit") throw new TopicLimitError(await topicCount(ctx), ctx.maxTopics);
  // This isolate's enqueues take the script again, which reads the cap and content dedup, rather than the pipeline that skips them.
  if (patch.maxLength !== undefined || patch.maxKeyLength !== undefined || patch.overflow !== undefined || patch.contentDedupMs !== undefined) {
    forgetRegistered(ctx.keys.prefix, topic);
  }
}

export async function topicCount(ctx: QueueContext): Promise<number> {
  return intReply.parse(await redisCall({ name: "SCARD", repeatSafe: true }, () => ctx.redis.scard(ctx.keys.topics)));
}

export async function deleteTopic(ctx: QueueContext, topic: string, options: { purge?: boolean } = {}): Promise<DeleteTopicResult> {
  const t = ctx.keys.topic(topic);
  const keys = [
    t.due,
    t.lease,
    t.deadAt,
    t.done,
    t.conf,
    t.bucket,
    t.metrics,
    ctx.keys.topics,
    ctx.keys.topicIndex,
    ctx.keys.parked,
    t.purged,
    ...flowKeyList(t.flow),
    t.exp,
  ];
  const purged = { scheduled: 0, dead: 0 };
  // Two phases a batch: each call names the next batch of ids it found, the next one drops them by their keys.
  let batch: { set: string; ids: string[] } = { set: "", ids: [] };
  for (;;) {
    const r = replies.deleteTopic.parse(
      await ctx.run(
        lua.deleteTopic,
        // The index's batch names its jobs by their members (key, due time, id).
        [...keys, ...ctx.keys.jobPairs(batch.set === "fkidx" ? batch.ids.map(idOfIndexMember) : batch.ids)],
        // The purge mark outlives every key it frees: idempotency keys and content keys alike.
        [topic, options.purge ? "1" : "0", PURGE_BATCH, ctx.now(), Math.max(ctx.idempotencyWindowMs, MAX_CONTENT_DEDUP_MS), batch.set, ...batch.ids],
      ),
    );
    purged.scheduled += r.dropped;
    purged.dead += r.droppedDead;
    if (r.result === "deleted") {
      forgetRegistered(ctx.keys.prefix, topic);
      await dropLabelIndexes(ctx, topic);
      return { result: "deleted", purged };
    }
    if (r.result !== "purging") return { result: r.result, scheduled: r.scheduled, inflight: r.inflight, dead: r.dead };
    batch = r.batch;
  }
}

/**
 * A deleted topic's label indexes (their members' jobs are gone with it), a
 * batch of its label set at a time: SPOP names them, one DEL drops them. An
 * enqueue of the topic between the two (another isolate that still knows it)
 * may lose its job's member: the job stays, not found by that label.
 */
async function dropLabelIndexes(ctx: QueueContext, topic: string): Promise<void> {
  for (;;) {
    const [popped] = await redisCall({ name: "SPOP", repeatSafe: false }, () => pipelineRead(ctx.redis, [["spop", ctx.keys.labelSet(topic), PURGE_BATCH]]));
    const labels = z.array(z.string()).parse(popped ?? []);
    if (labels.length === 0) return;
    await redisCall({ name: "DEL", repeatSafe: true }, () => pipeline(ctx.redis, [["del", ...labels.map((l) => ctx.keys.labelIndex(topic, l))]]));
  }
}

export async function topicSettings(ctx: QueueContext, topic: string): Promise<{ settings: TopicSettings; secrets: TopicSecrets }> {
  // Without automatic deserialization HGETALL arrives as Redis sends it: a flat field/value array.
  const raw: unknown = await redisCall({ name: "HGETALL", repeatSafe: true }, () => ctx.redis.hgetall(ctx.keys.topic(topic).conf));
  return decodeTopicConf(flatHash.parse(raw ?? []), ctx.defaults);
}

export async function topicStats(ctx: QueueContext, topic: string): Promise<TopicStats> {
  const t = ctx.keys.topic(topic);
  const now = ctx.now();
  const raw = await ctx.run(lua.topicStats, [t.due, t.lease, t.deadAt, t.conf, t.metrics, t.flow.fdue, t.flow.fcal, t.flow.fpark], [now]);
  const { scheduled, ready, inflight, dead, conf, dispatched, dropped, expired, total, oldest, flowKeys } = replies.topicStats.parse(raw);
  const metrics = snapshotOf(total);
  return {
    ...(flowKeys ? { flowKeys } : {}),
    topic,
    settings: decodeTopicConf(conf, ctx.defaults).settings,
    scheduled,
    ready,
    inflight,
    dead,
    oldestReadyDueAt: ready > 0 && oldest !== null ? Number(oldest) : null,
    counters: {
      dispatched: Number(dispatched ?? 0),
      succeeded: metrics.succeeded,
      retried: metrics.retried,
      dead: metrics.dead,
      dropped: Number(dropped ?? 0),
      expired: Number(expired ?? 0),
    },
    metrics,
  };
}

export async function topicSeries(ctx: QueueContext, topic: string, options: { minutes: number; now?: number }): Promise<SeriesPoint[]> {
  const minutes = Math.min(Math.max(1, Math.floor(options.minutes)), SERIES_MINUTES);
  const last = Math.floor((options.now ?? ctx.now()) / 60_000);
  const wanted = Array.from({ length: minutes }, (_, i) => last - minutes + 1 + i);
  const fields = wanted.flatMap((m) => [`m${m % SERIES_MINUTES}`, `g${m % SERIES_MINUTES}`]);
  const raw = await redisCall({ name: "HMGET", repeatSafe: true }, () => ctx.redis.hmget(ctx.keys.topic(topic).metrics, ...fields));
  // Without automatic deserialization HMGET arrives as an array of values (or null when no field exists).
  const values = z.array(nullableString).nullable().parse(raw) ?? [];
  // A slot holding another minute is from an earlier day: read it as empty.
  const ofMinute = (text: string | null | undefined, minute: number) => {
    if (!text) return null;
    const v = vectorText.parse(text);
    return v[0] === minute ? v.slice(1) : null;
  };
  return wanted.map((minute, i) => {
    const m = ofMinute(values[2 * i], minute);
    const g = ofMinute(values[2 * i + 1], minute);
    return {
      at: minute * 60_000,
      metrics: m ? snapshotOf(m) : null,
      backlog: g ? { scheduled: g[0] ?? 0, ready: g[1] ?? 0, inflight: g[2] ?? 0 } : null,
    };
  });
}

/** One page of the registry in name order, starting after `after` (see list-topics.lua). */
export async function listTopicsPage(ctx: QueueContext, options: TopicPageOptions): Promise<TopicPage> {
  const limit = Math.max(1, Math.floor(options.limit));
  const r = replies.listTopics.parse(await ctx.run(lua.listTopics, [ctx.keys.topics], [options.after ?? "", limit]));
  return { total: r.total, names: r.names, next: r.more ? (r.names.at(-1) ?? null) : null };
}

/** Every registered topic in name order, read page by page so no reply holds the whole registry. */
export async function listTopics(ctx: QueueContext): Promise<string[]> {
  const names: string[] = [];
  let after: string | undefined;
  do {
    const page = await listTopicsPage(ctx, { limit: MAX_TOPIC_PAGE_LIMIT, ...(after === undefined ? {} : { after }) });
    names.push(...page.names);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return names;
}
