import { settings, type Env, type Settings } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, tickLockFromSettings } from "../queue/from-settings.js";
import type { Queue } from "../queue/queue.js";
import { realClock, type Clock } from "./clock.js";
import { lookLeavesAsleep } from "./cron-look.js";
import { runTick, type TickOptions, type TickReport } from "./loop.js";

/** The Worker's cron entry point (a `* * * * *` trigger). */
export type Scheduled = (controller: ScheduledController, env: Env, ctx: ExecutionContext) => Promise<void>;

/**
 * The cron entry point of the deployment whose code handlers are `handlers`:
 * records a heartbeat for /healthz, then runs the dispatch loop for the rest
 * of its minute — or, while the tick sleeps with nothing due before the next
 * cron, only looks (src/tick/cron-look.ts).
 */
export function createScheduled(handlers: Handlers): Scheduled {
  return async (controller, env) => {
    const s = settings(env);
    const runner = env.TICK_RUNNER;
    const report = await cronTick({
      queue: queueFromSettings(s),
      settings: s,
      handlers,
      scheduledTime: controller.scheduledTime,
      wakeAlarm: env.TICK_ALARM !== undefined,
      ...(runner
        ? {
            fanOut: (topic: string, max: number) => runner.run(topic, max),
            handOver: (windowEnd: number) => runner.continueTick(controller.scheduledTime, windowEnd, 1),
          }
        : {}),
    });
    console.log(JSON.stringify({ level: "info", msg: report ? "tick ended" : "tick looked: asleep, nothing due before the next cron", ...report }));
  };
}

/**
 * One cron invocation. With the wake alarm (and TICK_IDLE_PEEK_MS > 0) its
 * first step is a look — the heartbeat, whether a loop runs, the sleep mark
 * and the topic index's head in one request — and the loop runs only when
 * the look does not leave the tick asleep; else the heartbeat, then the loop.
 * Returns the loop's report, or null when it only looked.
 */
export async function cronTick(
  o: Pick<TickOptions, "fanOut" | "handOver" | "log"> & {
    queue: Queue;
    settings: Settings;
    handlers: Handlers;
    scheduledTime: number;
    /** The deployment has its wake alarm (TICK_ALARM). */
    wakeAlarm: boolean;
    clock?: Clock;
    windowMs?: number;
  },
): Promise<TickReport | null> {
  const { queue, settings: s } = o;
  const clock = o.clock ?? realClock;
  const endWhenIdle = o.wakeAlarm && s.tickIdlePeekMs > 0;
  if (endWhenIdle) {
    // A look that fails (Redis down) runs the loop, which waits out the outage.
    const look = await queue.look(o.scheduledTime).catch(() => null);
    if (look && lookLeavesAsleep(look, clock.now())) return null;
  } else await queue.health.recordTickHeartbeat(o.scheduledTime);
  const { wakeAlarm: _, ...options } = o;
  return runTick({ ...options, lock: tickLockFromSettings(s), endWhenIdle });
}
