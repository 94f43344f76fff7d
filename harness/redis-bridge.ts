import { limitsFromEnv, type UpstashLimits } from "../dev/bridge/limits.js";
import { startBridge, type BridgeOptions, type RunningBridge } from "../dev/bridge/server.js";
import { startRedis, type RedisLauncherOptions, type RunningRedis } from "../dev/redis-launcher.js";
import { type RunningRedisCluster, startRedisCluster } from "./redis-cluster.js";

/** A throwaway redis-server (temp dir, free port) with the REST bridge in front of it: what the Worker reaches in tests and benchmarks. */
export interface RedisBridge {
  /** The redis-server; with `cluster`, the cluster's first master. */
  redis: RunningRedis;
  /** With `cluster`: the whole Redis Cluster the bridge routes to. */
  cluster?: RunningRedisCluster;
  bridge: RunningBridge;
  /** The bridge's token (UPSTASH_REDIS_REST_TOKEN). */
  token: string;
  stop(): Promise<void>;
}

export interface RedisBridgeOptions {
  /** How redis-server runs (dev/redis-launcher.ts). Default its defaults. */
  redis?: RedisLauncherOptions;
  /** Called once per request the bridge answers. Default none. */
  log?: BridgeOptions["log"];
  /** Called with every request's commands before they run. Default none. */
  onCommands?: BridgeOptions["onCommands"];
  /** Names the token. Default "test". */
  tokenPrefix?: string;
  /**
   * Upstash's limits the bridge holds (dev/bridge/limits.ts; `0` turns one off).
   * Default Upstash's own values, changed by the BRIDGE_MAX_* / BRIDGE_COMMANDS_PER_SECOND
   * environment variables, then by these fields.
   */
  limits?: Partial<UpstashLimits>;
  /** A 3-master Redis Cluster (harness/redis-cluster.ts) instead of one redis-server, behind the bridge's cluster client. Default false. */
  cluster?: boolean;
}

export async function startRedisBridge(options: RedisBridgeOptions = {}): Promise<RedisBridge> {
  const cluster = options.cluster ? await startRedisCluster() : undefined;
  const redis = cluster ? cluster.nodes[0]! : await startRedis(options.redis);
  const stopRedis = () => (cluster ?? redis).stop();
  const token = `${options.tokenPrefix ?? "test"}-${crypto.randomUUID()}`;
  try {
    const limits = { ...limitsFromEnv(process.env), ...options.limits };
    const target = cluster ? { redisCluster: cluster.urls } : { redisUrl: redis.url };
    const bridge = await startBridge({
      ...target,
      token,
      limits,
      ...(options.log ? { log: options.log } : {}),
      ...(options.onCommands ? { onCommands: options.onCommands } : {}),
    });
    return {
      redis,
      ...(cluster ? { cluster } : {}),
      bridge,
      token,
      async stop() {
        await bridge.close();
        await stopRedis();
      },
    };
  } catch (err) {
    await stopRedis();
    throw err;
  }
}
