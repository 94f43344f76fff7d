/**
 * The shards of the shards tests (test/workers/shard-fixtures.ts) and their
 * hash tags, which test/node/shard-masters.test.ts checks on the cluster. On
 * a Redis per shard, each shard's tag is its name. On a Redis Cluster, where
 * the shards share the cluster, the i-th shard's tag is the first
 * `<name>-<n>` whose slot is on the i-th master (`hashTagIn`,
 * dev/bridge/key-slot.ts): the shards really land on different masters, as
 * they would on databases of their own.
 */
import { hashTagIn, type SlotRange } from "../dev/bridge/key-slot.js";

export const SHARDS = ["main", "b", "c"] as const;

/** Each shard's hash tag; `masters` are the cluster's masters' slots (none: not a cluster). */
export function shardTags(masters: ReadonlyArray<{ slots: readonly SlotRange[] }>): Record<(typeof SHARDS)[number], string> {
  if (masters.length > 0 && masters.length < SHARDS.length) throw new Error(`${SHARDS.length} shards need as many masters; the cluster has ${masters.length}`);
  const [main, b, c] = SHARDS.map((s, i) => (masters.length === 0 ? s : hashTagIn(`${s}-`, masters[i]!.slots)));
  return { main: main!, b: b!, c: c! };
}
