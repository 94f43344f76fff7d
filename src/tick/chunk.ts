import { WorkerEntrypoint } from "cloudflare:workers";
import { settings, type Env } from "../env.js";
import type { Handlers } from "../handlers/registry.js";
import { queueFromSettings, tickLockFromSettings } from "../queue/from-settings.js";
import { runDrain } from "./drain.js";
import { nextCronAt } from "./cron-look.js";
import { runTick, type TickOptions } from "./loop.js";
import { runChunk, type ChunkReport } from "./run-chunk.js";
import { armForWorkLeft } from "./wake-alarm.js";

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

  /** One chunk of a topic (src/tick/run-chunk.ts), fanned out by the tick. */
  async run(topic: string, max: number): Promise<ChunkReport> {
    const s = settings(this.env);
    return runChunk({ queue: queueFromSettings(s), settings: s, handlers: this.handlers, topic, max });
  }

  /**
   * A topic's jobs as they fall due over the next `horizonMs`, started by a
   * producer while the tick sleeps (src/tick/wake.ts); `handovers` counts the
   * drains before it that ran out of budget.
   */
  async drain(topic: string, horizonMs: number, handovers = 0): Promise<ChunkReport> {
    const s = settings(this.env);
    const runner = this.env.TICK_RUNNER;
    const queue = queueFromSettings(s);
    const report = await runDrain({
      queue,
      settings: s,
      handlers: this.handlers,
      topic,
      horizonMs,
      ...(runner
        ? {
            fanOut: (t: string, max: number) => runner.run(t, max),
            ...(handovers < MAX_HANDOVERS ? { handOver: (h: number) => runner.drain(topic, h, handovers + 1) } : {}),
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
   * this window.
   */
  continueTick(scheduledTime: number, windowEnd: number, handovers: number): Promise<{ ended: string }> {
    return this.loop(scheduledTime, windowEnd, handovers, {});
  }

  /**
   * A loop started by the wake alarm (src/tick/alarm-object.ts) for a job due
   * before the next cron's look: it runs until that cron's window would
   * begin, and ends at once if a loop runs already. `prefix` names the
   * deployment the alarm was armed for.
   */
  async wakeTick(prefix: string): Promise<{ ended: string }> {
    const s = settings(this.env);
    // One deployment per Worker (a shard per prefix later): an alarm armed for another prefix is not this tick's.
    if (prefix !== s.prefix) return { ended: "not-acquired" };
    const now = Date.now();
    return this.loop(now, nextCronAt(now) + s.tickOverlapMs, 0, { waitForLock: false });
  }

  private async loop(scheduledTime: number, windowEnd: number, handovers: number, extra: Pick<TickOptions, "waitForLock">): Promise<{ ended: string }> {
    const s = settings(this.env);
    const runner = this.env.TICK_RUNNER;
    const report = await runTick({
      queue: queueFromSettings(s),
      lock: tickLockFromSettings(s),
      settings: s,
      handlers: this.handlers,
      scheduledTime,
      windowMs: windowEnd - scheduledTime,
      endWhenIdle: this.env.TICK_ALARM !== undefined,
      ...extra,
      ...(runner
        ? {
            fanOut: (topic: string, max: number) => runner.run(topic, max),
            ...(handovers < MAX_HANDOVERS ? { handOver: (end: number) => runner.continueTick(scheduledTime, end, handovers + 1) } : {}),
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
