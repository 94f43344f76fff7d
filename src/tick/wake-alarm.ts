import type { Env } from "../env.js";
import type { Queue } from "../queue/queue.js";
import { unlookedUntil } from "./cron-look.js";

// The wake alarm's Durable Object is src/tick/alarm-object.ts; this is the producers' side of it.

/** How long before a job's due time the alarm starts the loop: taking the lock and a poll come first. */
const ALARM_LEAD_MS = 1_000;

/** Alarms this isolate armed, per deployment: a job due after one still to come needs none of its own (that loop finds it). */
const armed = new Map<string, number>();

/**
 * Arms the deployment's wake alarm (`TICK_ALARM`) for a job due at `dueAt`,
 * unless this isolate armed it for sooner already and that alarm is still
 * to come. Returns the request to hand to waitUntil, or null when none is
 * needed (or the deployment has no alarm).
 */
export function armWakeAlarm(env: Env, prefix: string, dueAt: number, now: number): Promise<void> | null {
  const ns = env.TICK_ALARM;
  if (!ns) return null;
  const at = Math.max(now, dueAt - ALARM_LEAD_MS);
  const mine = armed.get(prefix);
  if (mine !== undefined && mine > now && mine <= at) return null;
  armed.set(prefix, at);
  return ns
    .get(ns.idFromName(prefix))
    .arm(at, prefix)
    .catch((err: unknown) => {
      // Not armed after all: the next job due before the cron's look tries again.
      if (armed.get(prefix) === at) armed.delete(prefix);
      throw err;
    });
}

/**
 * After a producer's drain: work it leaves on its topic before the next
 * cron's look (a retry it scheduled past its horizon) arms the wake alarm
 * while no loop runs, as a producer does for a job. One GET, only then.
 */
export async function armForWorkLeft(env: Env, queue: Queue, nextLookAt: number | null, now: number): Promise<void> {
  if (!env.TICK_ALARM || nextLookAt === null || nextLookAt >= unlookedUntil(now)) return;
  if ((await queue.tickSleep()) !== "c") return;
  await armWakeAlarm(env, queue.keys.prefix, nextLookAt, now);
}
