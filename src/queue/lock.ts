import type { Redis } from "@upstash/redis/cloudflare";
import { Keys } from "./keys.js";
import * as lua from "./lua.generated.js";
import { replies } from "./replies.js";
import { runScript } from "./scripts.js";
import type { TickStatus } from "./tick-views.js";

/**
 * The tick's lock: one loop per deployment. Held with an owner token (SET NX
 * PX), renewed while the loop runs (by the peek script, which the loop calls
 * every poll anyway), released by compare-and-delete, so a loop whose lock
 * expired can never free its successor's.
 */
export class TickLock {
  private readonly key: string;
  private readonly statusKey: string;
  private readonly asleepKey: string;
  /** The lock's value while held: a random token and when the holder's window ends. Set by acquire. */
  token = "";

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    const keys = new Keys(prefix);
    this.key = keys.tickLock;
    this.statusKey = keys.tickStatus;
    this.asleepKey = keys.tickAsleep;
  }

  /**
   * Takes the lock for a loop whose window ends at `windowEnd`; when another
   * loop holds it, says how long until that lock expires and when the
   * holder's window ends, and whether it sleeps, so a waiter can pace its asks.
   */
  async acquire(
    ttlMs: number,
    windowEnd: number,
  ): Promise<{ acquired: true } | { acquired: false; heldForMs: number; holderWindowEnd: number | null; holderAsleep: boolean }> {
    const value = `${crypto.randomUUID()}|${windowEnd}`;
    const got = replies.lockAcquire.parse(await runScript(this.redis, lua.lockAcquire, [this.key, this.asleepKey], [value, ttlMs]));
    if (got.acquired) {
      this.token = value;
      return got;
    }
    // The holder's value is a token and its window's end, as the line above writes them.
    const end = Number(got.holder.split("|")[1]);
    return { acquired: false, heldForMs: got.heldForMs, holderWindowEnd: Number.isFinite(end) ? end : null, holderAsleep: got.holderAsleep };
  }

  /** Frees the lock if it is still ours, recording the loop's final status with it. */
  async release(finalStatus?: TickStatus): Promise<boolean> {
    const status = finalStatus ? JSON.stringify(finalStatus) : "";
    return replies.lockRelease.parse(await runScript(this.redis, lua.lockRelease, [this.key, this.statusKey], [this.token, status]));
  }
}
