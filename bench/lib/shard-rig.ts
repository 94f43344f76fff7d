/**
 * The Redis side of the shards benchmark: per shard its own redis-server
 * and its own REST bridge, both started here (the bridges in this process,
 * so their requests are counted without a preload), and the settings that
 * make `npm start` a deployment of those shards (`DELAYLINE_SHARDS`, main on
 * the stack's `UPSTASH_REDIS_REST_URL`). Every bridge takes the same token:
 * `npm start` passes the Worker its settings and `UPSTASH_REDIS_REST_TOKEN`
 * only, so each shard's `tokenBinding` names that one. A shard can be taken
 * down and brought back on the same port and append-only file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import IORedis from "ioredis";
import { startBridge, type RunningBridge } from "../../dev/bridge/server.js";
import { freePort } from "../../dev/ports.js";
import { startRedis, type RunningRedis } from "../../dev/redis-launcher.js";
import { Keys } from "../../src/queue/keys.js";
import { placeTopic } from "../../src/queue/placement.js";
import type { StackRedis } from "./delayline.js";
import { billed, parseCommandstats } from "./commandstats.js";
import { SHARD_BENCH_TOPICS } from "../worker/shard-topics.js";

/** The shards of the 3-shard deployment; the 1-shard one is the first alone. */
export const SHARD_NAMES = ["main", "b", "c"] as const;

/** A request the bridge answered: [epoch ms, path, HTTP status]. */
type BridgeRequest = [number, string, number];

export interface ShardServer {
  name: string;
  /** Its key prefix (`dl:{<name>}`; main's is the bench Worker's default). */
  prefix: string;
  keys: Keys;
  bridge: RunningBridge;
  /** Every request its bridge answered. */
  requests: BridgeRequest[];
  /** Commands its bridge was sent (a script counts one, as in the bridge's commands/s), by when they came. */
  commandsSent: Array<[number, number]>;
  /** For INFO and CONFIG (the measurement's own), and for reading the tick's keys outside a measured span. */
  meter: IORedis;
  /** redis-server's pid (a new one after {@link ShardServer.up}). */
  redisPid(): number;
  /** Billed calls per command name so far (INFO commandstats, cumulative since the last reset). */
  calls(): Promise<Record<string, number>>;
  /** Stops its redis-server (SIGTERM: Redis writes the append-only file out first); the bridge stays and answers 503. */
  down(): Promise<void>;
  /** Starts its redis-server again on the same port and append-only file. */
  up(): Promise<void>;
}

export interface ShardRig {
  shards: ShardServer[];
  /** Where the stack's main shard is. */
  stackRedis: StackRedis;
  /** The Worker's settings for these shards (none for one shard: a deployment from before shards). */
  settings: Record<string, string>;
  byName(name: string): ShardServer;
  stop(): Promise<void>;
}

/** `count` topics of the bench Worker that `shard` holds among `shards` (rendezvous placement), in name order. */
export function topicsOn(shard: string, shards: readonly string[], count: number): string[] {
  const topics = SHARD_BENCH_TOPICS.filter((t) => placeTopic(t, shards) === shard).slice(0, count);
  if (topics.length < count) throw new Error(`only ${topics.length} of the bench Worker's topics are placed on shard ${shard}; ${count} wanted`);
  return topics;
}

export async function startShardRig(options: {
  shards: number;
  /** Each bridge's commands per second (dev/bridge/limits.ts; a script counts one). Default Upstash's (10,000). */
  commandsPerSecond?: number;
}): Promise<ShardRig> {
  const names = SHARD_NAMES.slice(0, options.shards);
  const token = `bench-shards-${crypto.randomUUID()}`;
  const dirs: string[] = [];
  const shards: ShardServer[] = [];
  const stop = async () => {
    for (const s of shards) {
      s.meter.disconnect();
      await s.bridge.close().catch(() => {});
      await s.down().catch(() => {});
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    for (const name of names) {
      const dataDir = mkdtempSync(join(tmpdir(), `delayline-bench-shard-${name}-`));
      dirs.push(dataDir);
      const port = await freePort();
      // fsync every second, as the bench's other Redis: a graceful stop writes the file out, and nothing acknowledged is lost.
      const launch = async () => {
        const r = await startRedis({ port, dataDir, appendfsync: "everysec" });
        const conf = new IORedis(r.url, { maxRetriesPerRequest: 1, lazyConnect: true });
        // No automatic rewrite, whose fork would land in whichever span grew the file.
        await conf.config("SET", "auto-aof-rewrite-percentage", "0").finally(() => conf.disconnect());
        return r;
      };
      let redis: RunningRedis | undefined = await launch();
      const requests: BridgeRequest[] = [];
      const commandsSent: Array<[number, number]> = [];
      const bridge = await startBridge({
        redisUrl: redis.url,
        token,
        ...(options.commandsPerSecond ? { limits: { commandsPerSecond: options.commandsPerSecond } } : {}),
        log: (line) => requests.push([Date.now(), line.path, line.status]),
        onCommands: (commands) => commandsSent.push([Date.now(), commands.length]),
      });
      const meter = new IORedis(redis.url, { maxRetriesPerRequest: 1 });
      meter.on("error", () => {});
      const prefix = `dl:{${name}}`;
      shards.push({
        name,
        prefix,
        keys: new Keys(prefix),
        bridge,
        requests,
        commandsSent,
        meter,
        redisPid: () => redis?.pid ?? 0,
        calls: async () => billed(parseCommandstats(await meter.info("commandstats"))),
        down: async () => {
          const r = redis;
          redis = undefined;
          await r?.stop();
        },
        up: async () => {
          redis ??= await launch();
        },
      });
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const main = shards[0]!;
  const entries = shards.map((s) =>
    s.name === "main" ? { name: s.name } : { name: s.name, url: s.bridge.url, tokenBinding: "UPSTASH_REDIS_REST_TOKEN", prefix: s.prefix },
  );
  return {
    shards,
    stackRedis: { restUrl: main.bridge.url, restToken: token },
    settings: shards.length > 1 ? { DELAYLINE_SHARDS: JSON.stringify(entries) } : {},
    byName: (name) => {
      const s = shards.find((x) => x.name === name);
      if (!s) throw new Error(`no shard ${name}`);
      return s;
    },
    stop,
  };
}
