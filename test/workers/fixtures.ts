/**
 * What the workerd tests of every folder set up the same way, in one place:
 * each folder's helpers.ts builds its own fixtures on these.
 */
import { inject } from "vitest";
import type { Env, Settings } from "../../src/env.js";
import { Handlers } from "../../src/handlers/registry.js";
import { queueFromSettings, tickLockFromSettings } from "../../src/queue/from-settings.js";
import { runTick, type TickOptions, type TickReport } from "../../src/tick/loop.js";
import { testEnv } from "./self.js";

/**
 * What these tests read of a request the test receiver recorded (its
 * Delivery in test/receiver.ts, which is Node code this side cannot import).
 */
export interface Delivery {
  path: string;
  headers: Record<string, string>;
  /** Header names and values as they arrived, in order. */
  rawHeaders: string[];
  body: string;
  /** When it arrived, epoch ms. */
  at: number;
}

/** A fresh key prefix (with a hash tag) for one test: its keys are its own. */
export function freshPrefix(tag = "q"): string {
  return `t${crypto.randomUUID().slice(0, 8)}:{${tag}}`;
}

/** The test deployment's bindings on a fresh prefix, with `overrides` (strings, as bindings are). */
export function freshEnv(tag: string, overrides: Partial<Env> = {}): Env {
  return { ...testEnv, DELAYLINE_PREFIX: freshPrefix(tag), ...overrides };
}

/**
 * One tick invocation of a deployment, wired as src/tick/scheduled.ts wires
 * it (without the heartbeat): its queue, a lock of its own, no code handlers
 * (every topic delivered over http), quiet unless `log` is given. `options`
 * replace any of these (a queue on the test's clock, another deployment's
 * queue, the test's handlers, fan-out and handover).
 */
export function tickOnce(s: Settings, options: Partial<TickOptions> & { scheduledTime: number }): Promise<TickReport> {
  return runTick({ queue: queueFromSettings(s), lock: tickLockFromSettings(s), settings: s, handlers: new Handlers(), log: () => {}, ...options });
}

/** What the test receiver (test/receiver.ts) was sent on paths starting with `prefix`, in arrival order. */
export async function deliveries(prefix: string): Promise<Delivery[]> {
  return (await (await fetch(`${inject("receiverUrl")}/__deliveries?prefix=${encodeURIComponent(prefix)}`)).json()) as Delivery[];
}
