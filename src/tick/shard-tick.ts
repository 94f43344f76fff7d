import { settings, type Env } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, shardNamed, tickLockFromSettings } from "../queue/from-settings.js";
import { MAIN_SHARD } from "../queue/ids.js";
import type { TickOptions } from "./loop.js";
import { jsonLog } from "./settle.js";
import { wakeForSoonJobs } from "./wake.js";

/**
 * Most handovers in one window (or one drain's horizon). Each successor is
 * called (and awaited) by the one before it, and Cloudflare allows a chain of
 * 32 invocations per request; a successor's fanned-out chunks are one level
 * deeper still.
 */
export const MAX_HANDOVERS = 16;

/** The log of a shard's tick: main's lines as they always were, another shard's naming it. */
function shardLog(shard: string): Pick<TickOptions, "log"> {
  return shard === MAIN_SHARD ? {} : { log: (line) => jsonLog({ ...line, shard }) };
}

/**
 * What every tick loop of `shard` runs on, whoever starts it (the cron, a
 * handover, the wake alarm): the shard's queue and lock, its log, and — with
 * the Worker's TICK_RUNNER — fan-out and handover to invocations that stay on
 * that shard. `handovers` counts the loops before this one in its window;
 * past {@link MAX_HANDOVERS} it cannot hand over.
 */
export function shardTickOptions(args: {
  env: Env;
  handlers: Handlers;
  shard: string;
  scheduledTime: number;
  handovers: number;
}): Pick<TickOptions, "queue" | "lock" | "settings" | "handlers" | "scheduledTime" | "log" | "fanOut" | "handOver" | "wake"> {
  const { env, shard, scheduledTime, handovers } = args;
  const s = settings(env);
  const runner = env.TICK_RUNNER;
  const queue = queueFromSettings(s, { shard: shardNamed(s, shard) });
  return {
    queue,
    lock: tickLockFromSettings(s, shardNamed(s, shard)),
    settings: s,
    handlers: args.handlers,
    scheduledTime,
    ...shardLog(shard),
    ...(runner
      ? {
          fanOut: (topic: string, max: number) => runner.run(topic, max, shard),
          ...(handovers < MAX_HANDOVERS ? { handOver: (end: number) => runner.continueTick(scheduledTime, end, handovers + 1, shard) } : {}),
          // The drains it starts run in the loop's invocation, which awaits them.
          wake: async (jobs) => {
            const drains: Array<Promise<unknown>> = [];
            await wakeForSoonJobs({ env, settings: s, queue, jobs, waitUntil: (work) => drains.push(work) });
            await Promise.all(drains);
          },
        }
      : {}),
  };
}

/** The line a shard's tick invocation ends with (`msg`, and the loop's report when it ran). */
export function logTickEnd(shard: string, msg: string, report: object | null): void {
  console.log(JSON.stringify({ level: "info", msg, ...(shard === MAIN_SHARD ? {} : { shard }), ...report }));
}
