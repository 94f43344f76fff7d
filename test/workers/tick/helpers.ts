import { settings, type Env } from "../../../src/env.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { TickLock } from "../../../src/queue/lock.js";
import { createRedis } from "../../../src/queue/redis.js";
import { runTick, type Clock, type TickOptions } from "../../../src/tick/loop.js";
import { runChunk } from "../../../src/tick/run-chunk.js";
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
  const tick = (options: Partial<TickOptions> & { scheduledTime: number }) =>
    runTick({ queue, lock: new TickLock(redis, s.prefix), settings: s, log: () => {}, ...(clock ? { clock } : {}), ...options });
  /**
   * What TICK_RUNNER gives a deployed tick, run here on the same clock: a
   * fanned-out chunk (a subrequest budget of its own) and a successor that
   * goes on with the window when a loop's budget runs out. `invocations`
   * counts both.
   */
  const runner = { invocations: 0, fanOut: undefined as unknown as NonNullable<TickOptions["fanOut"]>, handOver: (_end: number) => Promise.resolve({}) as Promise<unknown> };
  runner.fanOut = (topic, max) => {
    runner.invocations++;
    return runChunk({ queue, settings: s, topic, max, log: () => {}, ...(clock ? { clock } : {}) });
  };
  const withRunner = (scheduledTime: number) => {
    runner.handOver = (end: number) => {
      runner.invocations++;
      return tick({ scheduledTime, windowMs: end - scheduledTime, fanOut: runner.fanOut, handOver: runner.handOver });
    };
    return runner;
  };
  return {
    env,
    settings: s,
    queue,
    /** Runs one tick invocation (a lock of its own each time, as separate invocations have). */
    tick,
    /** Fan-out and handover for a tick scheduled at `scheduledTime`, run in this isolate. */
    runner: withRunner,
  };
}

/** A unique topic name, so handlers registered by parallel tests never collide. */
export const uniqueTopic = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;
