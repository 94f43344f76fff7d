/**
 * A million scheduled jobs over 10 topics (issue 33), side by side with
 * BullMQ on the same redis-server: memory per job, the largest key, claim +
 * ack throughput with 1,000,000 vs 10,000 future jobs present, and Redis
 * commands per job on the success path with the million present.
 *
 * Measured through public surfaces only (the Queue's methods, BullMQ's API)
 * and generic Redis introspection (SCAN, TYPE, MEMORY USAGE): nothing here
 * knows delayline's key names, so the figures hold for any data model.
 */
import IORedis from "ioredis";
import type { Queue } from "../../src/queue/queue.js";
import { pool } from "../../harness/util.js";
import { claimAll, scalePair, type ScaleRun } from "../suites.js";
import { bull, type BullSystem } from "./bull.js";
import { startBridge } from "../../dev/bridge/server.js";
import { directQueue, nodeQueue } from "./delayline.js";
import { payload, type Infra } from "./infra.js";

/** Upstash's cap on one record (dev/bridge/limits.ts, UPSTASH_LIMITS.maxRecordBytes): 100 MB. */
export const RECORD_CAP_BYTES = 100 * 1024 * 1024;

/** Sizes of one run. */
export interface Scale1mSizes {
  /** Future jobs stored, spread evenly over `topics` (default 1,000,000). */
  jobs: number;
  /** Topics (default 10). */
  topics: number;
  /** Future jobs of the small deployment the throughput is compared with (default 10,000). */
  small: number;
  /** Due jobs claimed and acked per measured throughput run, in 5 alternating slices per side (default 20,000, as the scale row). */
  due: number;
  /** Measured throughput runs after a warm-up of due / 4 (default 3). */
  runs: number;
  /** Jobs of the commands-per-job run, enqueued one per call with 50 in flight (default 5,000, as the cost row). */
  costJobs: number;
}

export const SCALE_1M_SIZES: Scale1mSizes = { jobs: 1_000_000, topics: 10, small: 10_000, due: 20_000, runs: 3, costJobs: 5_000 };

/** Keys of one name pattern and type. */
interface KeyGroup {
  /** The key name with topics as `<topic>`, job ids / ULIDs / UUIDs as `<id>`, numbers (a whole segment, or 4+ digits) as `<n>`. */
  pattern: string;
  type: string;
  keys: number;
  /** Sum of MEMORY USAGE (Redis' default sampling, as the bridge's record check measures). */
  bytes: number;
  largestBytes: number;
}

/** One key measured whole: `MEMORY USAGE key SAMPLES 0` (every element, as Upstash sizes a collection). */
interface MeasuredKey {
  pattern: string;
  type: string;
  bytes: number;
  /** Elements: members (zset, set), fields (hash), items (list), entries (stream), bytes (string). */
  elements: number;
}

interface KeyCensus {
  keys: number;
  /** Every group, largest key first. */
  groups: KeyGroup[];
  /** The largest key, measured whole. */
  largest: MeasuredKey;
  /** The largest sorted set, measured whole (delayline: a topic's due set). */
  largestZset?: MeasuredKey;
}

export interface Scale1mResult {
  sizes: Scale1mSizes;
  /** used_memory after − before storing, ÷ jobs. */
  bytesPerJob: { delayline: number; bullmq: number };
  /** Seconds each took to store its jobs. */
  storeS: { delayline: number; bullmq: number };
  census: { delayline: KeyCensus; bullmq: KeyCensus };
  /** Per measured run, the 10,000 side and the 1,000,000 side (each the median of its five slices). */
  throughput: { small: ScaleRun[]; large: ScaleRun[] };
  /** Success path with the million present: enqueue (one per call) + claim + ack, commands per job (scripts' inner commands included). */
  commands: { enqueue: number; consume: number; success: number; mix: Record<string, number> };
  durationS: number;
}

const DAY_MS = 86_400_000;
/** The bridge with every Upstash limit off (dev/bridge/limits.ts: 0 turns one off). */
const NO_LIMITS = { maxRequestBytes: 0, maxReplyBytes: 0, maxRecordBytes: 0, commandsPerSecond: 0, maxRequests: 0 };
const topicName = (prefix: string, t: number) => `${prefix}-${t}`;

/** `jobs` future jobs in batches of 1,000, batch k in topic k mod `topics` (4 calls in flight, as the drain row stores them). */
async function fill(queue: Queue, topic: string, jobs: number, topics: number): Promise<void> {
  const due = Date.now() + DAY_MS;
  await pool(Math.ceil(jobs / 1_000), 4, (k) =>
    queue.enqueueBatch(
      Array.from({ length: Math.min(1_000, jobs - k * 1_000) }, (_, j) => ({
        topic: topicName(topic, k % topics),
        runAt: due,
        payload: payload(k * 1_000 + j),
      })),
    ),
  );
}

/** A key's name as a pattern: the run's topics, ids and long numbers replaced. */
function keyPattern(key: string, topics: string[]): string {
  let p = key;
  // Longest first, so no topic name replaces part of another.
  for (const t of [...topics].sort((a, b) => b.length - a.length)) p = p.split(t).join("<topic>");
  return p
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "<id>")
    .replace(/[0-9A-HJKMNP-TV-Z]{26}/gi, "<id>")
    .replace(/[0-9a-f]{16,}/gi, "<id>")
    .replace(/(?<=^|[:.])\d+(?=$|[:.])/g, "<n>")
    .replace(/\d{4,}/g, "<n>");
}

const LENGTH: Record<string, string> = { zset: "ZCARD", hash: "HLEN", set: "SCARD", list: "LLEN", stream: "XLEN", string: "STRLEN" };

async function measureWhole(meter: IORedis, key: string, type: string, topics: string[]): Promise<MeasuredKey> {
  const length = LENGTH[type];
  const [bytes, elements] = await Promise.all([
    meter.call("MEMORY", "USAGE", key, "SAMPLES", "0") as Promise<number | null>,
    length ? (meter.call(length, key) as Promise<number>) : Promise.resolve(0),
  ]);
  return { pattern: keyPattern(key, topics), type, bytes: Number(bytes ?? 0), elements: Number(elements) };
}

/**
 * Every key of the database (which holds one deployment when this runs):
 * SCAN, then TYPE and MEMORY USAGE (the bridge's record-size measure) of each,
 * pipelined, grouped by name pattern. The ten largest keys, and the largest
 * sorted sets, are measured again whole (SAMPLES 0), so a collection's
 * sampled estimate cannot hide a key over the cap.
 */
async function keyCensus(meter: IORedis, topics: string[]): Promise<KeyCensus> {
  const groups = new Map<string, KeyGroup>();
  const top: Array<{ key: string; type: string; bytes: number }> = [];
  const topZsets: typeof top = [];
  const keep = (list: typeof top, entry: (typeof top)[number]) => {
    if (list.length < 10 || entry.bytes > list[list.length - 1]!.bytes) {
      list.push(entry);
      list.sort((a, b) => b.bytes - a.bytes);
      if (list.length > 10) list.pop();
    }
  };
  let keys = 0;
  let cursor = "0";
  do {
    const [next, batch] = (await meter.scan(cursor, "COUNT", 1_000)) as [string, string[]];
    cursor = next;
    if (batch.length === 0) continue;
    const p = meter.pipeline();
    for (const key of batch) p.type(key).call("MEMORY", "USAGE", key);
    const replies = (await p.exec()) ?? [];
    for (const [i, key] of batch.entries()) {
      const type = String(replies[2 * i]?.[1] ?? "none");
      const bytes = Number(replies[2 * i + 1]?.[1] ?? 0);
      if (type === "none") continue;
      keys++;
      const pattern = keyPattern(key, topics);
      const id = `${type} ${pattern}`;
      const g = groups.get(id) ?? { pattern, type, keys: 0, bytes: 0, largestBytes: 0 };
      g.keys++;
      g.bytes += bytes;
      g.largestBytes = Math.max(g.largestBytes, bytes);
      groups.set(id, g);
      keep(top, { key, type, bytes });
      if (type === "zset") keep(topZsets, { key, type, bytes });
    }
  } while (cursor !== "0");
  if (top.length === 0) throw new Error("key census: the database holds no keys");
  const whole = async (list: typeof top) => {
    const measured = await Promise.all(list.map((k) => measureWhole(meter, k.key, k.type, topics)));
    return measured.sort((a, b) => b.bytes - a.bytes)[0]!;
  };
  return {
    keys,
    groups: [...groups.values()].sort((a, b) => b.largestBytes - a.largestBytes),
    largest: await whole(top),
    ...(topZsets.length > 0 ? { largestZset: await whole(topZsets) } : {}),
  };
}

/**
 * The whole row: delayline first (store, memory, census, commands per job,
 * then the throughput comparison with a small deployment), then BullMQ on a
 * flushed Redis (store, memory, census). Leaves Redis flushed.
 */
export async function scale1mRun(infra: Infra, sizes: Scale1mSizes, log: (line: string) => void): Promise<Scale1mResult> {
  const started = Date.now();
  const { jobs, topics } = sizes;
  const names = Array.from({ length: topics }, (_, t) => topicName("s1m", t));
  const direct = new IORedis(infra.redis.url, { maxRetriesPerRequest: null });
  // delayline's jobs are stored and counted through the Queue over a REST bridge of its own (the real client, as the
  // drain and cost rows use) with Upstash's limits off: with the record cap on, a model whose largest key passes
  // 100 MB is refused part-way, and nothing could be compared.
  const token = `scale-1m-${crypto.randomUUID()}`;
  const bridge = await startBridge({ redisUrl: infra.redis.url, token, limits: NO_LIMITS });
  try {
    await infra.flush();
    const rest = nodeQueue(bridge.url, token, "dl:{scale-1m}");
    log(`scale-1m: storing ${jobs.toLocaleString("en-US")} delayline jobs over ${topics} topics`);
    let before = await infra.usedMemory();
    let t0 = Date.now();
    await fill(rest, "s1m", jobs, topics);
    const dlStoreS = (Date.now() - t0) / 1_000;
    const dlBytes = ((await infra.usedMemory()) - before) / jobs;
    log(`scale-1m: delayline stored in ${dlStoreS.toFixed(0)} s, ${dlBytes.toFixed(0)} B/job; key census`);
    const dlCensus = await keyCensus(infra.meter, names);
    log(`scale-1m: delayline's largest key ${dlCensus.largest.pattern} (${dlCensus.largest.type}) ${dlCensus.largest.bytes} B of ${dlCensus.keys} keys`);

    // Commands per job on the success path, the million present: in one of the ten topics, as the cost row counts.
    await infra.resetStats();
    const now = Date.now();
    await pool(sizes.costJobs, 50, (i) => rest.enqueue({ topic: names[0]!, payload: payload(i), runAt: now }));
    const enqueue = await infra.usage();
    await infra.resetStats();
    const drained = await claimAll(rest, names[0]!, 100, "ack");
    const consume = await infra.usage();
    if (drained !== sizes.costJobs) throw new Error(`scale-1m commands: drained ${drained} of ${sizes.costJobs}`);
    const mix: Record<string, number> = {};
    for (const u of [enqueue, consume])
      for (const [k, v] of Object.entries(u.byCommand)) mix[k] = Math.round(((mix[k] ?? 0) + v.calls / sizes.costJobs) * 1000) / 1000;
    const commands = {
      enqueue: enqueue.commands / sizes.costJobs,
      consume: consume.commands / sizes.costJobs,
      success: (enqueue.commands + consume.commands) / sizes.costJobs,
      mix,
    };
    log(`scale-1m: ${commands.success.toFixed(2)} commands/job on the success path`);

    // Throughput: the same ten topics with few jobs, in a second deployment; claimed in the first topic of each,
    // over TCP as the scale row (directQueue: the same scripts and arguments, no REST round trip to drown Redis' work).
    await fill(nodeQueue(bridge.url, token, "dl:{scale-10k}"), "s1m", sizes.small, topics);
    const large = directQueue(direct, "dl:{scale-1m}");
    const small = directQueue(direct, "dl:{scale-10k}");
    const throughput: Scale1mResult["throughput"] = { small: [], large: [] };
    for (let i = -1; i < sizes.runs; i++) {
      const order = i % 2 ? [large, small] : [small, large];
      const [s, l] = await scalePair(infra, small, large, order, i < 0 ? sizes.due / 4 : sizes.due, names[0]!);
      log(`scale-1m: ${i < 0 ? "warm-up" : `run ${i + 1}/${sizes.runs}`}: ${Math.round(l.jobsPerSec)} vs ${Math.round(s.jobsPerSec)} jobs/s`);
      if (i < 0) continue;
      throughput.small.push(s);
      throughput.large.push(l);
    }

    // BullMQ: the same jobs in ten queues, on a flushed Redis.
    await infra.flush();
    const queues: BullSystem[] = [];
    try {
      for (const name of names) queues.push(await bull(infra.redis.port, name));
      log(`scale-1m: storing ${jobs.toLocaleString("en-US")} BullMQ jobs over ${topics} queues`);
      before = await infra.usedMemory();
      t0 = Date.now();
      const due = Date.now() + DAY_MS;
      await pool(Math.ceil(jobs / 1_000), 4, (k) =>
        queues[k % topics]!.addBulk(Array.from({ length: Math.min(1_000, jobs - k * 1_000) }, (_, j) => ({ due, payload: payload(k * 1_000 + j) }))),
      );
      const bqStoreS = (Date.now() - t0) / 1_000;
      // The BullSystem notes every job's due time; a million of them are not needed here.
      for (const q of queues) q.due.clear();
      const bqBytes = ((await infra.usedMemory()) - before) / jobs;
      log(`scale-1m: BullMQ stored in ${bqStoreS.toFixed(0)} s, ${bqBytes.toFixed(0)} B/job; key census`);
      const bqCensus = await keyCensus(infra.meter, names);
      return {
        sizes,
        bytesPerJob: { delayline: dlBytes, bullmq: bqBytes },
        storeS: { delayline: dlStoreS, bullmq: bqStoreS },
        census: { delayline: dlCensus, bullmq: bqCensus },
        throughput,
        commands,
        durationS: Math.round((Date.now() - started) / 1_000),
      };
    } finally {
      for (const q of queues) await q.close();
    }
  } finally {
    direct.disconnect();
    await bridge.close();
    await infra.flush();
  }
}
