import { settings, type Env } from "../../../src/env.js";
import { Handlers, type JobContext } from "../../../src/handlers/registry.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import type { Clock } from "../../../src/tick/clock.js";
import type { TickOptions } from "../../../src/tick/loop.js";
import { runChunk } from "../../../src/tick/run-chunk.js";
import { cronTick } from "../../../src/tick/scheduled.js";
import { freshEnv, tickOnce } from "../fixtures.js";
import { DrivenClock } from "./sim-clock.js";

export { deliveries } from "../fixtures.js";

/** Time that passes only when the loop sleeps: rounds are instant, so tests of timing logic are exact. */
/**
 * The tests' virtual clock: a {@link DrivenClock}, so the loop, its chunks
 * running side by side and their handlers see one consistent time (a sleep
 * returns once every other task waits too), and `t` moves it by hand between
 * runs. It tracks this test's requests through the global fetch from its
 * creation until the next VirtualClock is made (tests of a file run one at a time).
 */
export class VirtualClock extends DrivenClock {
  private static restore: (() => void) | undefined;

  constructor(t: number) {
    super(t);
    VirtualClock.restore?.();
    VirtualClock.restore = this.install();
  }

  get t(): number {
    return this.now();
  }

  set t(value: number) {
    this.set(value);
  }
}

/** A deployment of its own (fresh prefix, code handlers of its own, none at first) with the given settings. */
export function tickDeployment(overrides: Partial<Env> = {}, clock?: Clock) {
  const env = freshEnv("tick", overrides);
  const s = settings(env);
  // The queue reads time from the same clock as the loop, so reads of finished jobs find them.
  const queue = queueFromSettings(s, clock ? { now: () => clock.now() } : {});
  const handlers = new Handlers();
  const tick = (options: Partial<TickOptions> & { scheduledTime: number }) => tickOnce(s, { queue, handlers, ...(clock ? { clock } : {}), ...options });
  /**
   * What TICK_RUNNER gives a deployed tick, run here on the same clock: a
   * fanned-out chunk (a subrequest budget of its own) and a successor that
   * goes on with the window when a loop's budget runs out. `invocations`
   * counts both.
   */
  const runner = {
    invocations: 0,
    fanOut: undefined as unknown as NonNullable<TickOptions["fanOut"]>,
    handOver: (_end: number) => Promise.resolve({}) as Promise<unknown>,
  };
  runner.fanOut = (topic, max) => {
    runner.invocations++;
    return runChunk({ queue, settings: s, handlers, topic, max, log: () => {}, ...(clock ? { clock } : {}) });
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
    /** The deployment's code handlers, which its ticks and chunks run. */
    handlers,
    /** Runs one tick invocation (a lock of its own each time, as separate invocations have). */
    tick,
    /** Fan-out and handover for a tick scheduled at `scheduledTime`, run in this isolate. */
    runner: withRunner,
    /** One cron invocation of a deployment with the wake alarm (src/tick/scheduled.ts): its look, then the loop only if the look finds work. */
    cron: (options: { scheduledTime: number; windowMs?: number }) =>
      cronTick({ queue, settings: s, handlers, wakeAlarm: true, log: () => {}, ...(clock ? { clock } : {}), ...options }),
    /** What the wake alarm starts (TickChunk.wakeTick): a loop that ends idle, and ends at once when one runs. */
    wake: (options: { scheduledTime: number; windowMs: number }) => tick({ ...options, waitForLock: false, endWhenIdle: true }),
  };
}

/** A unique topic name, so handlers registered by parallel tests never collide. */
export const uniqueTopic = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;

/** What a {@link recorder} handler saw of one attempt. */
export interface Seen {
  id: string;
  attempt: number;
  /** When the handler started, on the test's clock. */
  at: number;
  dueAt: number;
  payload: unknown;
}

/** Defines a code handler of `topic` in `handlers` that records what it saw and when (on the given clock). */
export function recorder(handlers: Handlers, topic: string, clock: { now(): number }, behave: (job: JobContext) => void | Promise<void> = () => {}): Seen[] {
  const seen: Seen[] = [];
  handlers.define(topic, async (job) => {
    seen.push({ id: job.id, attempt: job.attempt, at: clock.now(), dueAt: job.dueAt, payload: job.payload });
    await behave(job);
  });
  return seen;
}
