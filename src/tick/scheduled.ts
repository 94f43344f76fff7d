import { settings, type Env } from "../env.js";
import { queueFromSettings, tickLockFromSettings } from "../queue/from-settings.js";
import { runTick } from "./loop.js";

/**
 * The Worker's cron entry point (every minute): records a heartbeat for
 * /healthz, then runs the dispatch loop for the rest of its minute.
 */
export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
  const s = settings(env);
  const queue = queueFromSettings(s);
  await queue.health.recordTickHeartbeat(controller.scheduledTime);
  const runner = env.TICK_RUNNER;
  const report = await runTick({
    queue,
    lock: tickLockFromSettings(s),
    settings: s,
    scheduledTime: controller.scheduledTime,
    ...(runner
      ? {
          fanOut: (topic: string, max: number) => runner.run(topic, max),
          handOver: (windowEnd: number) => runner.continueTick(controller.scheduledTime, windowEnd, 1),
        }
      : {}),
  });
  console.log(JSON.stringify({ level: "info", msg: "tick ended", ...report }));
}
