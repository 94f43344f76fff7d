import type { Redis } from "@upstash/redis/cloudflare";
import type { Keys } from "./keys.js";
import { redisCall } from "./redis.js";

/** What /healthz reports: whether Redis answers, and when the tick last started (its heartbeat). */
export class Health {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /** True when Redis answers PING; false on an outage. */
  async isUp(): Promise<boolean> {
    try {
      return (await redisCall({ name: "PING", repeatSafe: true }, () => this.redis.ping())) === "PONG";
    } catch {
      return false;
    }
  }

  /** Records that a scheduled() invocation started at `nowMs`; `healthz` reports its age. */
  async recordTickHeartbeat(nowMs: number): Promise<void> {
    await redisCall({ name: "SET", repeatSafe: true }, () => this.redis.set(this.keys.tickLast, String(nowMs)));
  }

  /** When the latest scheduled() invocation started, or null if none has. */
  async lastTickAt(): Promise<number | null> {
    const raw = await redisCall({ name: "GET", repeatSafe: true }, () => this.redis.get<string>(this.keys.tickLast));
    return raw === null ? null : Number(raw);
  }
}
