import { WorkerEntrypoint } from "cloudflare:workers";
import { settings, type Env, type Settings } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, shardNamed } from "../queue/from-settings.js";
import { MAIN_SHARD } from "../queue/ids.js";
import { runDrain } from "./drain.js";
import { nextCronAt } from "./cron-look.js";
import { runTick, type TickOptions } from "./loop.js";
import { runChunk, type ChunkReport } from "./run-chunk.js";
import { tickShard } from "./scheduled.js";
import { logTickEnd, MAX_HANDOVERS, shardTickOptions } from "./shard-tick.js";
import { armForWorkLeft } from "./wake-alarm.js";

export type { ChunkReport } from "./run-chunk.js";

export { MAX_HANDOVERS } from "./shard-tick.js";

/**
 * The tick's work in invocations of its own, each with a subrequest budget
 * of its own. The Worker calls it through a service binding to itself
 * (`TICK_RUNNER` in wrangler.toml). These are RPC methods, not HTTP routes:
 * nothing outside the Worker can reach them. Each deployment has a class of
 * its own ({@link createTickChunk}) that holds its code handlers.
 */
export abstract class TickChunk extends WorkerEntrypoint<Env> {
  /** The deployment's code handlers. */
  protected abstract readonly handlers: Handlers;

  /** One chunk of a topic (src/tick/run-chunk.ts) on `shard`, fanned out by the tick. */
  async run(topic: string, max: number, shard: string = MAIN_SHARD): Promise<ChunkReport> {
    const s = settings(this.env);
    return runChunk({ queue: queueFromSettings(s, { shard: shardNamed(s, shard) }), settings: s, handlers: this.handlers, topic, max });
  }

  /** The cron invocation of a shard other than `main`, started by the cron's `scheduled()` (src/tick/scheduled.ts). */
  async tickShard(shard: string, scheduledTime: number): Promise<{ ended: string }> {
    const report = await tickShard({ env: this.env, handlers: this.handlers, shard, scheduledTime });
    return { ended: report?.ended ?? "looked" };
  }

  /**
   * A topic's jobs as they fall due over the next `horizonMs`, started by a
   * producer while the tick sleeps (src/tick/wake.ts); `handovers` counts the
   * drains before it that ran out of budget; `shard`, the topic's.
   */
  async drain(topic: string, horizonMs: number, handovers = 0, shard: string = MAIN_SHARD): Promise<ChunkReport> {
    const s = settings(this.env);
    const runner = this.env.TICK_RUNNER;
    const queue = queueFromSettings(s, { shard: shardNamed(s, shard) });
    const report = await runDrain({
      queue,
      settings: s,
      handlers: this.handlers,
      topic,
      horizonMs,
      ...(runner
        ? {
            fanOut: (t: string, max: number) => runner.run(t, max, shard),
            ...(handovers < MAX_HANDOVERS ? { handOver: (h: number) => runner.drain(topic, h, handovers + 1, shard) } : {}),
          }
        : {}),
    });
    await armForWorkLeft(this.env, queue, report.nextLookAt ?? null, Date.now()).catch((err: unknown) =>
      console.error(JSON.stringify({ level: "error", msg: "arming the wake alarm failed", error: String(err) })),
    );
    return report;
  }

  /**
   * The rest of a tick loop's window, after the loop ran out of subrequests
   * (see TickOptions.handOver); `handovers` counts the loops before it in
   * this window, on `shard`.
   */
  continueTick(scheduledTime: number, windowEnd: number, handovers: number, shard: string = MAIN_SHARD): Promise<{ ended: string }> {
    return this.loop(scheduledTime, windowEnd, handovers, {}, shard);
  }

  /**
   * A loop started by the wake alarm (src/tick/alarm-object.ts) for a job due
   * before the next cron's look: it runs until that cron's window would
   * begin, and ends at once if a loop runs already. `prefix` names the
   * shard (its key prefix) the alarm was armed for.
   */
  async wakeTick(prefix: string): Promise<{ ended: string }> {
    const wake = wakeLoop(settings(this.env), prefix, Date.now());
    if (!wake) return { ended: "not-acquired" };
    return this.loop(wake.scheduledTime, wake.windowEnd, 0, { waitForLock: wake.waitForLock }, wake.shard);
  }

  private async loop(
    scheduledTime: number,
    windowEnd: number,
    handovers: number,
    extra: Pick<TickOptions, "waitForLock">,
    shard: string,
  ): Promise<{ ended: string }> {
    const report = await runTick({
      ...shardTickOptions({ env: this.env, handlers: this.handlers, shard, scheduledTime, handovers }),
      windowMs: windowEnd - scheduledTime,
      endWhenIdle: this.env.TICK_ALARM !== undefined,
      ...extra,
    });
    logTickEnd(shard, "tick ended", report);
    return { ended: report.ended };
  }
}

/**
 * The loop the wake alarm starts at `now` for the shard whose key prefix is
 * `prefix` (TickChunk.wakeTick): until the next cron's window begins (plus
 * TICK_OVERLAP_MS, so that cron's loop takes over), asking for the lock once,
 * since a loop that holds it finds the job. Null for a prefix no shard of `s`
 * has: an alarm armed before that shard was removed is not this tick's.
 */
export function wakeLoop(s: Settings, prefix: string, now: number): { shard: string; scheduledTime: number; windowEnd: number; waitForLock: false } | null {
  const shard = s.shards.find((sh) => sh.prefix === prefix);
  return shard ? { shard: shard.name, scheduledTime: now, windowEnd: nextCronAt(now) + s.tickOverlapMs, waitForLock: false } : null;
}

/**
 * The TickChunk entrypoint of the deployment whose code handlers are
 * `handlers`. A class per deployment, holding them: the runtime makes the
 * entrypoint's instances itself, from the class the main module exports.
 */
export function createTickChunk(handlers: Handlers): new (ctx: ExecutionContext, env: Env) => TickChunk {
  return class extends TickChunk {
    protected readonly handlers = handlers;
  };
}
