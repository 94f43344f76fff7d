import { settings, type Env } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, tickLockFromSettings } from "../queue/from-settings.js";
import { runTick } from "./loop.js";

/** The Worker's cron entry point (a `* * * * *` trigger). */
export type Scheduled = (controller: ScheduledController, env: Env, ctx: ExecutionContext) => Promise<void>;

/**
 * The cron entry point of the deployment whose code handlers are `handlers`:
 * records a heartbeat for /healthz, then runs the dispatch loop for the rest
 * of its minute.
 */
export function createScheduled(handlers: Handlers): Scheduled {
  return async (controller, env) => {
    const s = settings(env);
    const queue = queueFromSettings(s);
    await queue.health.recordTickHeartbeat(controller.scheduledTime);
    const runner = env.TICK_RUNNER;
    const report = await runTick({
      queue,
      lock: tickLockFromSettings(s),
      settings: s,
      handlers,
      scheduledTime: controller.scheduledTime,
      ...(runner
        ? {
            fanOut: (topic: string, max: number) => runner.run(topic, max),
            handOver: (windowEnd: number) => runner.continueTick(controller.scheduledTime, windowEnd, 1),
          }
        : {}),
    });
    console.log(JSON.stringify({ level: "info", msg: "tick ended", ...report }));
  };
}
