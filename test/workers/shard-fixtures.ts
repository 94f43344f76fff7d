/**
 * A deployment on three shards for tests: main (the test stack's Redis), b
 * and c (two more, from test/global-setup.ts), each on a fresh prefix. On a
 * Redis Cluster the three share it, each prefix's hash tag on a master of
 * its own (test/shard-tags.ts).
 */
import { inject } from "vitest";
import type { Env } from "../../src/env.js";
import { placeTopic } from "../../src/queue/placement.js";
import { SHARDS, shardTags } from "../shard-tags.js";
import { freshPrefix } from "./fixtures.js";

const [b, c] = inject("shardBridges") as [{ url: string; token: string }, { url: string; token: string }];

/** A closed loopback port: a shard there is down. */
export const DOWN = "http://127.0.0.1:9";
export { SHARDS };
const tags = shardTags(inject("clusterMasters"));

/** The bindings of shards main, b and c (main's prefix too: DELAYLINE_PREFIX); `cUrl` moves shard c, `bUrl` shard b. */
export function threeShardBindings(cUrl = c.url, bUrl = b.url): Partial<Env> {
  return {
    DELAYLINE_PREFIX: freshPrefix(tags.main),
    DELAYLINE_SHARDS: JSON.stringify([
      { name: "main" },
      { name: "b", url: bUrl, tokenBinding: "SHARD_B_TOKEN", prefix: freshPrefix(tags.b) },
      { name: "c", url: cUrl, tokenBinding: "SHARD_C_TOKEN", prefix: freshPrefix(tags.c) },
    ]),
    SHARD_B_TOKEN: b.token,
    SHARD_C_TOKEN: c.token,
    REDIS_TIMEOUT_MS: "500",
  } as Partial<Env>;
}

/** A topic whose name begins with `tag` that rendezvous hashing places on `shard`. */
export const topicOn = (shard: string, tag = "t") => Array.from({ length: 200 }, (_, i) => `${tag}-${i}`).find((t) => placeTopic(t, SHARDS) === shard)!;
