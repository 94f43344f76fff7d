import { settings, type Env } from "../../../src/env.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { TickLock } from "../../../src/queue/lock.js";
import { createRedis } from "../../../src/queue/redis.js";
import { runTick, type Clock, type TickOptions } from "../../../src/tick/loop.js";
import { testEnv } from "../self.js";

/** Time that passes only when the loop sleeps: rounds are instant, so tests of timing logic are exact. */
export class VirtualClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  async sleep(ms: number): Promise<void> {
    this.t += Math.max(0, ms);
    await Promise.resolve();
  }
}

/** A deployment of its own (fresh prefix) with the given settings. */
export function tickDeployment(overrides: Partial<Env> = {}, clock?: Clock) {
  const env: Env = { ...testEnv, DELAYLINE_PREFIX: `t${crypto.randomUUID().slice(0, 8)}:{tick}`, ...overrides };
  const s = settings(env);
  // The queue reads time from the same clock as the loop, so reads of finished jobs find them.
  const queue = queueFromSettings(s, clock ? { now: () => clock.now() } : {});
  const redis = createRedis(s);
  return {
    env,
    settings: s,
    queue,
    /** Runs one tick invocation (a lock of its own each time, as separate invocations have). */
    tick: (options: Partial<TickOptions> & { scheduledTime: number }) =>
      runTick({ queue, lock: new TickLock(redis, s.prefix), settings: s, log: () => {}, ...(clock ? { clock } : {}), ...options }),
  };
}

/** A unique topic name, so handlers registered by parallel tests never collide. */
export const uniqueTopic = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;
