import type { TickLook } from "../queue/queue.js";

/**
 * How late a cron invocation may start after its minute and still find, at
 * its look, every job the loop that ended idle left to it in time: producers
 * cover jobs due before the next cron plus this (src/tick/wake.ts), and a
 * look starts a loop for anything due before the cron after it plus this.
 */
const CRON_LATE_MS = 10_000;

/** The next minute boundary after `now`: when the `* * * * *` cron is scheduled next. */
export function nextCronAt(now: number): number {
  return Math.floor(now / 60_000) * 60_000 + 60_000;
}

/**
 * Until when no loop looks at the topic index once one ends idle at `now`:
 * the next cron's look, allowing for its start being late. Producers cover
 * jobs due before it (a drain, or the wake alarm).
 */
export function unlookedUntil(now: number): number {
  return nextCronAt(now) + CRON_LATE_MS;
}

/**
 * Whether a cron invocation's look (Queue.look) at `now` leaves the tick
 * asleep: no loop runs, the last one ended idle (sleep mark "c", so producers
 * cover what falls due before the next cron), and nothing in the topic index
 * falls due before the next cron's look. Anything else runs the loop as
 * usual: a loop running (wait to take over), a mark of another kind (a loop
 * that crashed, or one that ended while working), or work due.
 */
export function lookLeavesAsleep(look: TickLook, now: number): boolean {
  if (look.lockHeld || look.sleepMark !== "c") return false;
  return look.earliestAt === null || look.earliestAt >= unlookedUntil(now);
}
