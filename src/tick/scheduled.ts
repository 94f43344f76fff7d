import { settings, type Env } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, shardNamed, tickLockFromSettings } from "../queue/from-settings.js";
import { MAIN_SHARD } from "../queue/ids.js";
import { runTick, type TickReport } from "./loop.js";

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
 * One shard's tick for the minute of `scheduledTime`: records its heartbeat
 * for /healthz, then runs the dispatch loop for the rest of the minute, on
 * the shard's own Redis, lock, status and budget; its fanned-out chunks and
 * handovers work on the same shard.
 */
export async function tickShard(args: { env: Env; handlers: Handlers; shard: string; scheduledTime: number }): Promise<TickReport> {
  const { env, handlers, shard, scheduledTime } = args;
  const s = settings(env);
  const queue = queueFromSettings(s, { shard: shardNamed(s, shard) });
  await queue.health.recordTickHeartbeat(scheduledTime);
  const runner = env.TICK_RUNNER;
  const report = await runTick({
    queue,
    lock: tickLockFromSettings(s, shardNamed(s, shard)),
    settings: s,
    handlers,
    scheduledTime,
    ...(runner
      ? {
          fanOut: (topic: string, max: number) => runner.run(topic, max, shard),
          handOver: (windowEnd: number) => runner.continueTick(scheduledTime, windowEnd, 1, shard),
        }
      : {}),
  });
  console.log(JSON.stringify({ level: "info", msg: "tick ended", ...(shard === MAIN_SHARD ? {} : { shard }), ...report }));
  return report;
}
