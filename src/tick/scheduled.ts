import { settings, type Env } from "../env.js";
import { createRedis } from "../queue/redis.js";
import { recordTickHeartbeat } from "../queue/health.js";

/**
 * The Worker's cron entry point. For now it records a heartbeat that
 * `/healthz` reports; the dispatch loop builds on it.
 */
export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
  const s = settings(env);
  await recordTickHeartbeat(createRedis(s), s.prefix, controller.scheduledTime);
}
