import type { Redis } from "@upstash/redis/cloudflare";
import { z } from "zod";
import { Keys } from "./keys.js";
import * as lua from "./lua.generated.js";
import { runScript } from "./scripts.js";

/**
 * The tick's lock: one loop per deployment. Held with an owner token (SET NX
 * PX), renewed while the loop runs (by the peek script, which the loop calls
 * every poll anyway), released by compare-and-delete, so a loop whose lock
 * expired can never free its successor's.
 */
export class TickLock {
  private readonly key: string;
  readonly token = crypto.randomUUID();

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = new Keys(prefix).tickLock;
  }

  /** Takes the lock; when another loop holds it, says how long until it expires. */
  async acquire(ttlMs: number): Promise<{ acquired: true } | { acquired: false; heldForMs: number }> {
    const [ok, ttl] = z.array(z.number()).parse(await runScript(this.redis, lua.lockAcquire, [this.key], [this.token, ttlMs]));
    return ok === 1 ? { acquired: true } : { acquired: false, heldForMs: Math.max(0, ttl ?? 0) };
  }

  async release(): Promise<boolean> {
    return z.number().parse(await runScript(this.redis, lua.lockRelease, [this.key], [this.token])) === 1;
  }
}
