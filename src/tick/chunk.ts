import { WorkerEntrypoint } from "cloudflare:workers";
import { settings, type Env } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, shardNamed, tickLockFromSettings } from "../queue/from-settings.js";
import { MAIN_SHARD } from "../queue/ids.js";
import { runDrain } from "./drain.js";
import { runTick } from "./loop.js";
import { runChunk, type ChunkReport } from "./run-chunk.js";
import { tickShard } from "./scheduled.js";

export type { ChunkReport } from "./run-chunk.js";

/**
 * Most handovers in one window (or one drain's horizon). Each successor is
 * called (and awaited) by the one before it, and Cloudflare allows a chain of
 * 32 invocations per request; a successor's fanned-out chunks are one level
 * deeper still.
 */
export const MAX_HANDOVERS = 16;

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

  /** The tick of a shard other than `main`, started by the cron's `scheduled()` (src/tick/scheduled.ts). */
  async tickShard(shard: string, scheduledTime: number): Promise<{ ended: string }> {
    const report = await tickShard({ env: this.env, handlers: this.handlers, shard, scheduledTime });
    return { ended: report.ended };
  }

  /**
   * A topic's jobs as they fall due over the next `horizonMs`, started by a
   * producer while the tick sleeps (src/tick/wake.ts); `handovers` counts the
   * drains before it that ran out of budget.
   */
  async drain(topic: string, horizonMs: number, handovers = 0, shard: string = MAIN_SHARD): Promise<ChunkReport> {
    const s = settings(this.env);
    const runner = this.env.TICK_RUNNER;
    return runDrain({
      queue: queueFromSettings(s, { shard: shardNamed(s, shard) }),
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
  }

  /**
   * The rest of a tick loop's window, after the loop ran out of subrequests
   * (see TickOptions.handOver); `handovers` counts the loops before it in
   * this window.
   */
  async continueTick(scheduledTime: number, windowEnd: number, handovers: number, shard: string = MAIN_SHARD): Promise<{ ended: string }> {
    const s = settings(this.env);
    const runner = this.env.TICK_RUNNER;
    const report = await runTick({
      queue: queueFromSettings(s, { shard: shardNamed(s, shard) }),
      lock: tickLockFromSettings(s, shardNamed(s, shard)),
      settings: s,
      handlers: this.handlers,
      scheduledTime,
      windowMs: windowEnd - scheduledTime,
      ...(runner
        ? {
            fanOut: (topic: string, max: number) => runner.run(topic, max, shard),
            ...(handovers < MAX_HANDOVERS ? { handOver: (end: number) => runner.continueTick(scheduledTime, end, handovers + 1, shard) } : {}),
          }
        : {}),
    });
    console.log(JSON.stringify({ level: "info", msg: "tick ended", ...report }));
    return { ended: report.ended };
  }
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
