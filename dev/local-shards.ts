/**
 * The shards `npm start` runs on this machine (`DELAYLINE_LOCAL_SHARDS=N`):
 * each a redis-server of its own behind a REST bridge of its own, with a
 * token of its own, and the Worker's bindings that name them. One shard
 * (N unset or 1) is the stack as it always was: `main` alone, on
 * UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN, no DELAYLINE_SHARDS.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { SettingProblem } from "../src/env.js";
import { MAIN_SHARD } from "../src/queue/ids.js";
import type { UpstashLimits } from "./bridge/limits.js";
import { startBridge, type RunningBridge } from "./bridge/server.js";
import { startRedis, type RunningRedis } from "./redis-launcher.js";

/** The most shards `DELAYLINE_LOCAL_SHARDS` starts: each is a redis-server and a bridge on a machine shared with the Worker. */
const MAX_LOCAL_SHARDS = 8;

/** The variable that asks for local shards. */
const VARIABLE = "DELAYLINE_LOCAL_SHARDS";

/** The names of `count` local shards: `main` (which keeps today's data and keys), then `s2`, `s3`, … */
export function localShardNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => (i === 0 ? MAIN_SHARD : `s${i + 1}`));
}

/** The Worker secret holding a local shard's REST token (its `tokenBinding`), e.g. `SHARD_S2_TOKEN`. */
const tokenBindingOf = (name: string) => `SHARD_${name.toUpperCase()}_TOKEN`;

/**
 * How many local shards `env` asks for (1 when `DELAYLINE_LOCAL_SHARDS` is
 * unset), or the problems with it: a count outside 1–{@link MAX_LOCAL_SHARDS},
 * or a variable that puts the shards elsewhere (REDIS_URL, Upstash, an
 * explicit DELAYLINE_SHARDS), each saying what to do instead.
 */
export function localShardCount(env: Record<string, string | undefined>): { count: number; problems: SettingProblem[] } {
  const raw = env[VARIABLE];
  if (raw === undefined || raw === "") return { count: 1, problems: [] };
  const count = Number(raw);
  const problems: SettingProblem[] = [];
  const refuse = (message: string) => problems.push({ setting: VARIABLE, message });
  if (!/^\d+$/.test(raw) || count < 1 || count > MAX_LOCAL_SHARDS) refuse(`must be a whole number from 1 to ${MAX_LOCAL_SHARDS}`);
  const own = "it runs a redis-server and a bridge per shard on this machine";
  if (env.REDIS_URL) refuse(`cannot be used with REDIS_URL: ${own}; unset REDIS_URL, or unset ${VARIABLE} to use that Redis`);
  if (env.UPSTASH_REDIS_REST_URL || env.UPSTASH_REDIS_REST_TOKEN)
    refuse(
      `cannot be used with UPSTASH_REDIS_REST_URL/UPSTASH_REDIS_REST_TOKEN: ${own}; unset them, or unset ${VARIABLE} to use Upstash (several databases: DELAYLINE_SHARDS)`,
    );
  if (env.DELAYLINE_SHARDS) refuse(`cannot be used with DELAYLINE_SHARDS: ${VARIABLE} writes the Worker's DELAYLINE_SHARDS itself; unset one of the two`);
  return { count, problems };
}

/** Where a shard's clients reach it: its bridge's URL and token. */
interface ShardAddress {
  name: string;
  url: string;
  token: string;
}

/**
 * The Worker's bindings for these shards: `main`'s bridge as
 * UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN; with more than one,
 * DELAYLINE_SHARDS naming every other one's bridge and token binding, and
 * one binding per token. Their prefixes are the defaults: DELAYLINE_PREFIX
 * for `main` (so its keys are today's), `dl:{<name>}` for the others.
 */
export function shardBindings(shards: ShardAddress[]): Record<string, string> {
  const [main, ...others] = shards;
  const bindings: Record<string, string> = { UPSTASH_REDIS_REST_URL: main!.url, UPSTASH_REDIS_REST_TOKEN: main!.token };
  if (others.length === 0) return bindings;
  bindings.DELAYLINE_SHARDS = JSON.stringify([
    { name: MAIN_SHARD },
    ...others.map((s) => ({ name: s.name, url: s.url, tokenBinding: tokenBindingOf(s.name) })),
  ]);
  for (const s of others) bindings[tokenBindingOf(s.name)] = s.token;
  return bindings;
}

/** A shard running on this machine: its redis-server (none over REDIS_URL), its bridge and the bridge's token. */
export interface LocalShard extends ShardAddress {
  redis: RunningRedis | undefined;
  bridge: RunningBridge;
  /** Closes the bridge, then stops the redis-server. */
  stop(): Promise<void>;
}

/** Options of one local shard. */
export interface LocalShardOptions {
  name: string;
  /** The stack's data directory: `main` keeps its append-only file in `<dataDir>/redis`, another shard in `<dataDir>/redis-<name>`. */
  dataDir: string;
  /** Its redis-server's port; 0 picks a free one. */
  redisPort: number;
  /** Its bridge's port; 0 picks a free one. */
  bridgePort: number;
  /** The bridge's Upstash limits, each shard's bridge its own (dev/bridge/limits.ts). */
  limits: Partial<UpstashLimits>;
  /** A Redis to bridge instead of starting one (REDIS_URL; one shard only). Default none: a redis-server of its own. */
  redisUrl?: string | undefined;
  /** Called once its redis-server runs, before the bridge starts (the data directory's lock records it). Default none. */
  onRedis?: (redis: RunningRedis) => void;
}

/** Starts a shard's redis-server (unless `redisUrl`) and its bridge with a fresh random token; stops what it started if either fails. */
export async function startLocalShard(o: LocalShardOptions): Promise<LocalShard> {
  const redis = o.redisUrl ? undefined : await startRedis({ port: o.redisPort, dataDir: join(o.dataDir, o.name === MAIN_SHARD ? "redis" : `redis-${o.name}`) });
  if (redis) o.onRedis?.(redis);
  const token = randomBytes(24).toString("hex");
  try {
    const bridge = await startBridge({ redisUrl: o.redisUrl ?? redis!.url, token, port: o.bridgePort, limits: o.limits });
    return {
      name: o.name,
      url: bridge.url,
      token,
      redis,
      bridge,
      async stop() {
        await bridge.close().catch(() => {});
        await redis?.stop().catch(() => {});
      },
    };
  } catch (err) {
    await redis?.stop().catch(() => {});
    throw err;
  }
}
