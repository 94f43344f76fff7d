import { settings, type Env } from "../env.js";
import { queueFromSettings } from "../queue/from-settings.js";
import { recordTickHeartbeat } from "../queue/health.js";
import { TickLock } from "../queue/lock.js";
import { createRedis } from "../queue/redis.js";
import { runTick } from "./loop.js";

/**
 * The Worker's cron entry point (every minute): records a heartbeat for
 * /healthz, then runs the dispatch loop for the rest of its minute.
 */
export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
  const s = settings(env);
  const redis = createRedis(s);
  await recordTickHeartbeat(redis, s.prefix, controller.scheduledTime);
  const report = await runTick({
    queue: queueFromSettings(s),
    lock: new TickLock(redis, s.prefix),
    settings: s,
    scheduledTime: controller.scheduledTime,
    ...(env.TICK_RUNNER ? { fanOut: (topic: string, max: number) => env.TICK_RUNNER!.run(topic, max) } : {}),
  });
  console.log(JSON.stringify({ level: "info", msg: "tick ended", ...report }));
}
