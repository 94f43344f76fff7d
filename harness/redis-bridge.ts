import { startBridge, type BridgeOptions, type RunningBridge } from "../dev/bridge/server.js";
import { startRedis, type RedisLauncherOptions, type RunningRedis } from "../dev/redis-launcher.js";

/** A throwaway redis-server (temp dir, free port) with the REST bridge in front of it: what the Worker reaches in tests and benchmarks. */
export interface RedisBridge {
  redis: RunningRedis;
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
  /** Names the token. Default "test". */
  tokenPrefix?: string;
}

export async function startRedisBridge(options: RedisBridgeOptions = {}): Promise<RedisBridge> {
  const redis = await startRedis(options.redis);
  const token = `${options.tokenPrefix ?? "test"}-${crypto.randomUUID()}`;
  try {
    const bridge = await startBridge({ redisUrl: redis.url, token, ...(options.log ? { log: options.log } : {}) });
    return {
      redis,
      bridge,
      token,
      async stop() {
        await bridge.close();
        await redis.stop();
      },
    };
  } catch (err) {
    await redis.stop();
    throw err;
  }
}
