import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.js";

/**
 * The tick's wake alarm: one Durable Object per shard (the shard's key
 * prefix names it). While no loop runs (the last one
 * ended idle, sleep mark "c"), a producer that stores a job due before the
 * next cron's look arms it for that job; the alarm starts a loop through the
 * TickChunk entrypoint. Alarms are at least once: a second wake finds the
 * lock held and ends, or starts a loop that finds nothing and ends idle;
 * claims are atomic either way, so nothing is delivered twice. The cron
 * stays the backstop if an alarm is lost. Costs a Durable Object request
 * per arm and per alarm, none while nothing is enqueued.
 */
export class TickAlarm extends DurableObject<Env> {
  /** Sets the alarm for `at` unless it is already set sooner; `prefix` names the deployment (or shard) whose tick it wakes. */
  async arm(at: number, prefix: string): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current !== null && current <= at) return;
    await this.ctx.storage.put("prefix", prefix);
    await this.ctx.storage.setAlarm(at);
  }

  override async alarm(): Promise<void> {
    const prefix = await this.ctx.storage.get<string>("prefix");
    if (prefix !== undefined) await this.env.TICK_RUNNER?.wakeTick(prefix);
  }
}
