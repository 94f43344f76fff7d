import { startBridge, type RunningBridge } from "../dev/bridge/server.js";
import { startRedis, type RunningRedis } from "../dev/redis-launcher.js";

/** A throwaway redis-server (temp dir, free port) with a bridge in front of it. */
export interface TestStack {
  redis: RunningRedis;
  bridge: RunningBridge;
  token: string;
  stop(): Promise<void>;
}

export async function startTestStack(): Promise<TestStack> {
  const redis = await startRedis();
  const token = `test-${crypto.randomUUID()}`;
  try {
    const bridge = await startBridge({ redisUrl: redis.url, token });
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
