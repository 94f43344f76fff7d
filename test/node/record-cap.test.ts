/**
 * No key grows with the deployment's jobs (issue 33, item 2): under the
 * bridge's Upstash limits with the record cap lowered to 1 MB, 20,000 jobs
 * of 1 KB over 20 topics (20 MB of payloads: the hash model's `<p>:jobs`
 * held them all in one key, and was refused past the first ~900) are
 * stored, each delivered once and acked, nothing lost, and no key ever
 * passes the cap — measured with `MEMORY USAGE`, as the bridge measures a
 * record, after storing and after delivering.
 */
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRedisBridge, type RedisBridge } from "../../harness/redis-bridge.js";
import { Queue } from "../../src/queue/queue.js";
import { createRedis } from "../../src/queue/redis.js";

const CAP = 1_048_576;
const TOPICS = 20;
const PER_TOPIC = 1_000;
const PREFIX = `dl:{cap-${process.pid}}`;

let stack: RedisBridge;
let direct: IORedis;

beforeAll(async () => {
  stack = await startRedisBridge({ limits: { maxRecordBytes: CAP } });
  direct = new IORedis(stack.redis.url);
}, 60_000);

afterAll(async () => {
  direct?.disconnect();
  await stack?.stop();
});

/** The largest key under the prefix by `MEMORY USAGE`, and how many keys there are. */
async function largestKey(): Promise<{ key: string; bytes: number; keys: number }> {
  let cursor = "0";
  let best = { key: "", bytes: 0, keys: 0 };
  do {
    const [next, keys] = await direct.scan(cursor, "MATCH", `${PREFIX}:*`, "COUNT", 1_000);
    cursor = next;
    const p = direct.pipeline();
    for (const k of keys) p.memory("USAGE", k);
    const sizes = (await p.exec()) ?? [];
    keys.forEach((k, i) => {
      const bytes = Number(sizes[i]?.[1] ?? 0);
      if (bytes > best.bytes) best = { ...best, key: k, bytes };
    });
    best.keys += keys.length;
  } while (cursor !== "0");
  return best;
}

it("20,000 jobs of 1 KB over 20 topics under a 1 MB record cap: stored, each delivered once, nothing lost, no key over the cap", {
  timeout: 240_000,
}, async () => {
  const redis = createRedis({ redisUrl: stack.bridge.url, redisToken: stack.token, redisTimeoutMs: 30_000 });
  const queue = new Queue({ redis, prefix: PREFIX });
  const topics = Array.from({ length: TOPICS }, (_, t) => `cap-${t}`);
  const filler = "x".repeat(1_000);
  const stored = new Set<string>();
  for (const topic of topics) {
    for (let from = 0; from < PER_TOPIC; from += 500) {
      const jobs = await queue.enqueueBatch(Array.from({ length: 500 }, (_, j) => ({ topic, payload: { n: from + j, filler } })));
      for (const j of jobs) stored.add(j.id);
    }
  }
  expect(stored.size).toBe(TOPICS * PER_TOPIC);
  const afterStoring = await largestKey();
  expect(afterStoring.bytes, `largest key after storing: ${afterStoring.key}`).toBeLessThanOrEqual(CAP);

  const delivered = new Map<string, number>();
  for (const topic of topics) {
    for (;;) {
      const { jobs } = await queue.claim(topic, { max: 250, leaseMs: 60_000 });
      if (jobs.length === 0) break;
      for (const j of jobs) delivered.set(j.id, (delivered.get(j.id) ?? 0) + 1);
      const acked = await queue.settle(
        topic,
        jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
      );
      expect(acked.every((a) => a.applied)).toBe(true);
    }
  }
  expect(delivered.size).toBe(stored.size);
  expect([...delivered.values()].every((n) => n === 1)).toBe(true);
  for (const id of stored) expect(delivered.has(id), id).toBe(true);
  // Finished, readable, and still no key over the cap: finishing writes metas and ids, no payload.
  const sample = [...stored].filter((_, i) => i % 997 === 0);
  for (const id of sample) expect((await queue.get(id))?.state, id).toBe("succeeded");
  const afterDelivering = await largestKey();
  expect(afterDelivering.bytes, `largest key after delivering: ${afterDelivering.key}`).toBeLessThanOrEqual(CAP);
  const stats = await Promise.all(topics.map((t) => queue.topicStats(t)));
  expect(stats.reduce((sum, s) => sum + s.counters.succeeded, 0)).toBe(stored.size);
});
