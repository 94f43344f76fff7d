/**
 * On a Redis Cluster (project node-cluster: test/global-setup.ts starts one),
 * the shards tests' three shards land on three different masters: a key
 * under each shard's prefix (its hash tag from test/shard-tags.ts, as
 * test/workers/shard-fixtures.ts gives it), written through the bridge, is
 * held by one master alone, and each shard's by another.
 */
import IORedis from "ioredis";
import { expect, inject, it } from "vitest";
import { SHARDS, shardTags } from "../shard-tags.js";

/** One command through the test stack's bridge, as the Worker sends it. */
async function bridge(command: string[]): Promise<unknown> {
  const res = await fetch(inject("bridgeUrl"), {
    method: "POST",
    headers: { authorization: `Bearer ${inject("bridgeToken")}` },
    body: JSON.stringify(command),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { result: unknown }).result;
}

it("puts each of the shards tests' shards on a master of its own", async () => {
  expect(inject("redisCluster")).toBe(true);
  const masters = inject("clusterMasters");
  expect(masters).toHaveLength(3);
  const tags = shardTags(masters);
  const run = crypto.randomUUID().slice(0, 8);
  const keys = SHARDS.map((shard) => `t${run}:{${tags[shard]}}:probe`);
  for (const key of keys) expect(await bridge(["SET", key, "1"])).toBe("OK");
  // KEYS on a cluster node lists that node's own keys only.
  const holders = await Promise.all(
    keys.map(async (key) => {
      const found = await Promise.all(
        masters.map(async (m) => {
          const node = new IORedis(m.url, { maxRetriesPerRequest: 0 });
          try {
            return ((await node.keys(key)) as string[]).length > 0 ? m.url : null;
          } finally {
            node.disconnect();
          }
        }),
      );
      return found.filter((url) => url !== null);
    }),
  );
  expect(holders.map((h) => h.length)).toEqual([1, 1, 1]);
  expect(new Set(holders.flat()).size).toBe(3);
  for (const key of keys) await bridge(["DEL", key]);
});
