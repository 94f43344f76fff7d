import { RedisUnavailableError } from "./errors.js";
import type { Queue } from "./queue.js";
import type { StoredSchedule } from "./schedules.js";
import { mergeShardPages } from "./shard-listing.js";
import type { Shards } from "./shards.js";

/** A schedule as one shard holds it. */
export interface ShardSchedule {
  shard: string;
  queue: Queue;
  schedule: StoredSchedule;
}

// A schedule lives on the shard of its template's topic, so its occurrences'
// jobs are stored by the same script that advances it, on that topic's shard,
// and that shard's tick fires it. Its id is the caller's and names no shard:
// a call by id asks every shard.

/**
 * Every copy of schedule `id`, its home first (the copy on its topic's
 * shard; more than one only while a move was cut short, see docs/ARCHITECTURE.md).
 * Every shard is asked at once; one that does not answer could hold it, so
 * that is an outage (503 naming the shard), not "no such schedule".
 */
export async function findSchedule(shards: Shards, id: string, deadlineMs: number | null): Promise<ShardSchedule[]> {
  const read = await shards.readEach((queue) => queue.schedules.get(id), deadlineMs);
  if (read.missing.length > 0) throw new RedisUnavailableError(`shard "${read.missing[0]}" did not answer, and it may hold schedule ${id}`);
  const copies = read.answers.flatMap(({ shard, value }) => (value ? [{ shard, queue: shards.queue(shard)!, schedule: value }] : []));
  return copies.sort((a, b) => Number(isHome(shards, b.schedule, b.shard)) - Number(isHome(shards, a.schedule, a.shard)));
}

/** Whether `shard` is the one the schedule's topic is placed on. */
const isHome = (shards: Shards, schedule: StoredSchedule, shard: string) => shards.shardOf(schedule.definition.job.topic) === shard;

/** A page of schedules across shards, in id order, and the shards that did not answer in time (their schedules are not on it). */
export interface ShardsSchedulePage {
  schedules: ShardSchedule[];
  /** The last id of the page when more may follow, else null. */
  cursor: string | null;
  missing: string[];
}

/**
 * Reads a page of schedules (id order) from every shard at once and merges
 * them: each shard returns at most `limit` after the cursor, and the page
 * keeps the first `limit` of them all. A schedule on two shards (a move cut
 * short) is shown once, from its home.
 */
export async function listSchedulesAcrossShards(
  shards: Shards,
  options: { limit: number; cursor?: string },
  deadlineMs: number | null,
): Promise<ShardsSchedulePage> {
  const read = await shards.readEach((queue) => queue.schedules.list(options), deadlineMs);
  const page = mergeShardPages(
    read.answers.map(({ shard, value }) => ({ shard, items: value.schedules, more: value.cursor !== null })),
    options.limit,
    (schedule) => schedule.id,
    (schedule, shard) => isHome(shards, schedule, shard),
  );
  return {
    schedules: page.items.map(({ shard, item: schedule }) => ({ shard, queue: shards.queue(shard)!, schedule })),
    cursor: page.last,
    missing: read.missing,
  };
}
