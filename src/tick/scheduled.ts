import { settings, type Env, type Settings } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { tickLockFromSettings } from "../queue/from-settings.js";
import { MAIN_SHARD } from "../queue/ids.js";
import type { Queue } from "../queue/queue.js";
import { realClock, type Clock } from "./clock.js";
import { lookLeavesAsleep } from "./cron-look.js";
import { runTick, type TickOptions, type TickReport } from "./loop.js";
import { logTickEnd, shardTickOptions } from "./shard-tick.js";

/** The Worker's cron entry point (a `* * * * *` trigger). */
export type Scheduled = (controller: ScheduledController, env: Env, ctx: ExecutionContext) => Promise<void>;

/**
 * The cron entry point of the deployment whose code handlers are `handlers`:
 * runs `main`'s tick here, and starts every other shard's in an invocation
 * of its own (TickChunk.tickShard through TICK_RUNNER) at the same time, so
 * a shard that is down or slow delays only its own topics.
 */
export function createScheduled(handlers: Handlers): Scheduled {
  return async (controller, env) => {
    const runner = env.TICK_RUNNER;
    const scheduledTime = controller.scheduledTime;
    const others = settings(env)
      .shards.filter((sh) => sh.name !== MAIN_SHARD)
      .map((sh) =>
        // Without the binding (a library user's Worker that has none), the shard's tick runs here beside main's.
        (runner ? runner.tickShard(sh.name, scheduledTime) : tickShard({ env, handlers, shard: sh.name, scheduledTime })).catch((err: unknown) =>
          console.error(JSON.stringify({ level: "error", msg: "shard tick failed", shard: sh.name, error: String(err) })),
        ),
      );
    try {
      await tickShard({ env, handlers, shard: MAIN_SHARD, scheduledTime });
    } finally {
      await Promise.all(others);
    }
  };
}

/**
 * One shard's cron invocation for the minute of `scheduledTime` (see
 * {@link cronTick}), on the shard's own Redis, lock, status and budget; its
 * fanned-out chunks and handovers work on the same shard. Returns the loop's
 * report, or null when it only looked.
 */
export async function tickShard(args: { env: Env; handlers: Handlers; shard: string; scheduledTime: number }): Promise<TickReport | null> {
  const report = await cronTick({ ...shardTickOptions({ ...args, handovers: 0 }), wakeAlarm: args.env.TICK_ALARM !== undefined });
  logTickEnd(args.shard, report ? "tick ended" : "tick looked: asleep, nothing due before the next cron", report);
  return report;
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
    /** The tick lock of the queue's shard. Default `main`'s. */
    lock?: TickOptions["lock"];
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
  const { wakeAlarm: _, lock, ...options } = o;
  return runTick({ ...options, lock: lock ?? tickLockFromSettings(s), endWhenIdle });
}
