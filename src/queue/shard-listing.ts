import type { Queue } from "./queue.js";
import type { Shards } from "./shards.js";
import type { TopicPageOptions } from "./views.js";

/** One page of the topics of every shard, in name order, each with the shard it was read from. */
export interface ShardsTopicPage {
  topics: Array<{ topic: string; shard: string }>;
  /** Topics registered on the shards that answered. */
  total: number;
  /** The last topic of the page when more may follow (the next page starts after it), else null. */
  next: string | null;
  /** Shards that did not answer in time; their topics are not on the page. */
  missing: string[];
}

/**
 * Reads a page of topics from every shard at once (one bounded script call
 * each) and merges them in name order, so a page over N shards costs N
 * calls whatever the number of topics, and `after` pages through them all
 * as through one registry. A shard returns at most `limit` names, and the
 * merged page keeps the first `limit` of them: whatever a shard holds past
 * that cut starts a later page. A topic moved by a pin is registered on its
 * old shard too until that one is drained and deleted; the page shows it once,
 * from the shard it is placed on now.
 */
export async function listTopicsAcrossShards(shards: Shards, options: TopicPageOptions, deadlineMs: number | null): Promise<ShardsTopicPage> {
  const limit = Math.max(1, Math.floor(options.limit));
  const read = await shards.readEach((queue) => queue.listTopicsPage({ ...options, limit }), deadlineMs);
  const page = mergeShardPages(
    read.answers.map(({ shard, value }) => ({ shard, items: value.names, more: value.next !== null })),
    limit,
    (topic) => topic,
    (topic, shard) => shards.shardOf(topic) === shard,
  );
  return {
    topics: page.items.map(({ shard, item: topic }) => ({ topic, shard })),
    total: read.answers.reduce((n, a) => n + a.value.total, 0),
    next: page.last,
    missing: read.missing,
  };
}

/**
 * Merges the pages shards gave for one cursor (each holding at most `limit`
 * items after it, and whether it has more) into one page in key order, as
 * a single store would give it: the first `limit` keys of them all, an item
 * two shards hold (one moved meanwhile) once, from the shard `home` says it
 * belongs to. `last` is the page's last key when more may follow (the next
 * page starts after it), else null.
 */
export function mergeShardPages<T>(
  pages: ReadonlyArray<{ shard: string; items: readonly T[]; more: boolean }>,
  limit: number,
  keyOf: (item: T) => string,
  home: (item: T, shard: string) => boolean,
): { items: Array<{ shard: string; item: T }>; last: string | null } {
  const byKey = new Map<string, { shard: string; item: T }>();
  for (const { shard, items } of pages) {
    for (const item of items) if (!byKey.has(keyOf(item)) || home(item, shard)) byKey.set(keyOf(item), { shard, item });
  }
  const keys = [...byKey.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const kept = keys.slice(0, limit);
  const more = keys.length > limit || pages.some((p) => p.more);
  return { items: kept.map((k) => byKey.get(k)!), last: more && kept.length > 0 ? kept.at(-1)! : null };
}

/**
 * Reads something of each topic of a page on the shard it was listed from,
 * every shard at once (a shard's calls share its request), and returns the
 * values in the page's order. A shard that stops answering between the list
 * and this read is named in `missing`, and its topics are left out.
 */
export async function readPageTopics<T>(
  shards: Shards,
  page: ShardsTopicPage,
  read: (queue: Queue, topic: string) => Promise<T>,
  deadlineMs: number | null,
): Promise<{ values: T[]; missing: string[] }> {
  const onShard = [...new Set(page.topics.map((t) => t.shard))];
  const r = await shards.readEach(
    (queue, shard) => Promise.all(page.topics.filter((t) => t.shard === shard).map(async (t) => ({ topic: t.topic, value: await read(queue, t.topic) }))),
    deadlineMs,
    onShard,
  );
  const byTopic = new Map(r.answers.flatMap((a) => a.value.map((v) => [v.topic, v.value] as const)));
  const missing = new Set([...page.missing, ...r.missing]);
  return { values: page.topics.flatMap((t) => (byTopic.has(t.topic) ? [byTopic.get(t.topic)!] : [])), missing: shards.names.filter((n) => missing.has(n)) };
}
