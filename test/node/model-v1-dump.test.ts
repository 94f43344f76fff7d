/**
 * The data-model v1 dump (test/fixtures/model-v1.json, written by
 * scripts/make-model-v1-dump.ts with the code of that model) loads into a
 * prefix of its own key for key: same names under the new prefix, same
 * types and values, times to live counted from the load. What the model's
 * reads make of it is the migration test's business, not this one's.
 */
import { readFile } from "node:fs/promises";
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { type Dump, dumpKeys, loadDump, renamedKey } from "../fixtures/load-dump.js";

const PREFIX = `dl:{v1-load-${process.pid}}`;
let redis: IORedis;
let dump: Dump;

beforeAll(async () => {
  redis = new IORedis(inject("redisUrl"));
  dump = JSON.parse(await readFile(new URL("../fixtures/model-v1.json", import.meta.url), "utf8")) as Dump;
});
afterAll(async () => {
  const left = (await dumpKeys(redis, PREFIX)).map((k) => k.key);
  if (left.length > 0) await redis.del(...left);
  redis.disconnect();
});

it("the dump holds every key type the v1 model writes, and no value names its prefix", () => {
  expect(dump.prefix).toBe("dl:{v1}");
  expect(new Set(dump.keys.map((k) => k.type))).toEqual(new Set(["string", "hash", "zset", "set"]));
  for (const name of [":jobs", ":meta", ":t:push-a:dead:entries", ":t:pull-b:dead:entries"]) {
    expect(dump.keys.map((k) => k.key)).toContain(dump.prefix + name);
  }
  expect(dump.keys.some((k) => /^dl:\{v1\}:done:\d+$/.test(k.key))).toBe(true);
  for (const k of dump.keys) expect(JSON.stringify(k.value), k.key).not.toContain("dl:{v1");
});

// Skipped on a Redis Cluster (TEST_REDIS=cluster): it reads the dump through a connection to one redis-server, and on a cluster its keys' master may be another.
it.skipIf(inject("redisCluster"))("loadDump writes every key under the new prefix with its type, value and time to live", async () => {
  const loadedAt = Date.now();
  const written = await loadDump(redis, dump, PREFIX);
  expect(written).toHaveLength(dump.keys.length);

  const loaded = await dumpKeys(redis, PREFIX);
  expect(loaded.map((k) => k.key)).toEqual(dump.keys.map((k) => renamedKey(dump, k.key, PREFIX)).sort());
  const dumped = new Map(dump.keys.map((k) => [renamedKey(dump, k.key, PREFIX), k]));
  for (const k of loaded) {
    const original = dumped.get(k.key)!;
    expect({ key: k.key, type: k.type, value: k.value }).toEqual({ key: k.key, type: original.type, value: original.value });
    if (original.pttl === -1) {
      expect(k.pttl, k.key).toBe(-1);
    } else {
      // Counted from the load: no more than dumped, less only by the time the load and this read took.
      expect(k.pttl, k.key).toBeLessThanOrEqual(original.pttl);
      expect(k.pttl, k.key).toBeGreaterThan(original.pttl - (Date.now() - loadedAt) - 1_000);
    }
  }
  // The ~100 KB payload came through byte for byte.
  const jobs = loaded.find((k) => k.key === `${PREFIX}:jobs`);
  expect(jobs?.type).toBe("hash");
  const sizes = Object.values(jobs?.value as Record<string, string>).map((v) => v.length);
  expect(Math.max(...sizes)).toBeGreaterThan(100_000);
});
