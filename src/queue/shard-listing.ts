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
  const byName = new Map<string, string>();
  for (const { shard, value } of read.answers) {
    for (const topic of value.names) if (!byName.has(topic) || shards.shardOf(topic) === shard) byName.set(topic, shard);
  }
  const names = [...byName.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const page = names.slice(0, limit);
  const more = names.length > limit || read.answers.some((a) => a.value.next !== null);
  return {
    topics: page.map((topic) => ({ topic, shard: byName.get(topic)! })),
    total: read.answers.reduce((n, a) => n + a.value.total, 0),
    next: more && page.length > 0 ? page.at(-1)! : null,
    missing: read.missing,
  };
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
