import type { Env } from "../../../src/env.js";
import type { SimClock } from "./sim-clock.js";

/**
 * What goes wrong with the wake alarm throughout one model run. Cloudflare's
 * alarms are at least once, so a second firing is normal; a lost one is a
 * fault the cron's look must catch.
 */
export type AlarmFault = "none" | "lost" | "duplicated" | "late" | "arm-fails";

/** A producer's (or a drain's) `arm(at, prefix)`: when asked, for when, and what the object did with it. */
export interface AlarmArm {
  requestedAt: number;
  at: number;
  /** set: the alarm moved to `at`; kept: one as soon or sooner was set; rejected: the request failed (fault arm-fails). */
  outcome: "set" | "kept" | "rejected";
}

/** An alarm that came due: when it was set for, when its wake ran (twice when duplicated), or lost. */
export interface AlarmFiring {
  at: number;
  /** The deployment (or shard) whose tick it wakes. */
  prefix: string;
  wokeAt: number[];
  lost: boolean;
}

/**
 * A stand-in for the TICK_ALARM Durable Object namespace on the sim clock,
 * behaving as src/tick/alarm-object.ts does: one object per name, whose `arm`
 * keeps the sooner of the armed times; when the clock reaches it, the alarm
 * clears and calls `wake(prefix)` (TickChunk.wakeTick), subject to `fault`.
 * `delays` (taken in turn, one per firing) are how late a late alarm fires,
 * or how long after the first a duplicated one fires again.
 */
export class SimAlarm {
  readonly arms: AlarmArm[] = [];
  readonly firings: AlarmFiring[] = [];
  private readonly set = new Map<string, { at: number; prefix: string }>();
  private stopped = false;

  constructor(
    private readonly clock: SimClock,
    readonly fault: AlarmFault,
    private readonly delays: number[],
    private readonly wake: (prefix: string) => Promise<unknown>,
  ) {}

  /** The namespace a deployment's env binds as TICK_ALARM. */
  get namespace(): NonNullable<Env["TICK_ALARM"]> {
    return {
      idFromName: (name) => ({ name }),
      get: (id) => ({ arm: (at, prefix) => this.arm((id as { name: string }).name, at, prefix) }),
    };
  }

  /** No alarm fires from now on (the run is over; its clock is run out). */
  stop(): void {
    this.stopped = true;
  }

  private async arm(name: string, at: number, prefix: string): Promise<void> {
    const requestedAt = this.clock.now();
    if (this.fault === "arm-fails") {
      this.arms.push({ requestedAt, at, outcome: "rejected" });
      throw new Error("SimAlarm: the Durable Object request failed (fault arm-fails)");
    }
    const current = this.set.get(name);
    if (current !== undefined && current.at <= at) {
      this.arms.push({ requestedAt, at, outcome: "kept" });
      return;
    }
    const alarm = { at, prefix };
    this.set.set(name, alarm);
    this.arms.push({ requestedAt, at, outcome: "set" });
    void this.clock.spawn(`alarm ${name} at ${at}`, () => this.fire(name, alarm));
  }

  private async fire(name: string, alarm: { at: number; prefix: string }): Promise<void> {
    await this.clock.sleep(alarm.at - this.clock.now());
    const n = this.firings.length;
    const delay = this.delays[n % this.delays.length] ?? 0;
    // A late alarm is still the one set until it runs: an arm for later meanwhile keeps it.
    if (this.fault === "late" && this.set.get(name) === alarm) await this.clock.sleep(delay);
    // Moved sooner meanwhile: that alarm fired instead of this one.
    if (this.set.get(name) !== alarm || this.stopped) return;
    this.set.delete(name);
    const firing: AlarmFiring = { at: alarm.at, prefix: alarm.prefix, wokeAt: [], lost: this.fault === "lost" };
    this.firings.push(firing);
    if (firing.lost) return;
    if (this.fault === "duplicated") void this.clock.spawn(`alarm ${name} at ${alarm.at}, again`, () => this.clock.sleep(delay).then(() => this.run(firing)));
    await this.run(firing);
  }

  private async run(firing: AlarmFiring): Promise<void> {
    if (this.stopped) return;
    firing.wokeAt.push(this.clock.now());
    await this.wake(firing.prefix);
  }
}
