import type { TickLock } from "../queue/lock.js";
import type { SubrequestBudget } from "./budget.js";
import type { Clock } from "./clock.js";
import type { OutageBackoff } from "./outage.js";

/** How often a waiting invocation asks for the lock while the holder sleeps (idle: producers cover jobs due soon). */
const ASLEEP_CHECK_MS = 5_000;

/**
 * Takes the tick's lock for a loop whose window ends at `windowEnd`. A loop
 * already running is healthy while it renews its lock: wait for it to end (or
 * for its lock to lapse) instead of running beside it. While the holder
 * works, ask every poll: it may end early (its lock lost, Redis gone, a bug)
 * and let go, and a job due then must not wait for a slower ask; while it
 * sleeps, every 5 s. Past the holder's window it is about to let go (its last
 * poll may still be under way), so ask soon, then less often (25 ms doubling
 * up to a poll), so a handover leaves no gap of a whole poll. False when the
 * window or the budget ends first.
 */
export async function acquireLock(a: {
  lock: TickLock;
  clock: Clock;
  budget: SubrequestBudget;
  outage: OutageBackoff;
  windowEnd: number;
  ttlMs: number;
  tickPollMs: number;
  /** Ask once: false when another loop holds it. */
  once?: boolean;
}): Promise<boolean> {
  const { clock } = a;
  let handoverWait = 25;
  for (;;) {
    if (clock.now() >= a.windowEnd || a.budget.left < 4) return false;
    a.budget.spend();
    let got: Awaited<ReturnType<TickLock["acquire"]>>;
    try {
      got = await a.lock.acquire(a.ttlMs, a.windowEnd);
    } catch (err) {
      await a.outage.wait(err);
      continue;
    }
    if (got.acquired) return true;
    if (a.once) return false;
    const holderLeft = got.holderWindowEnd === null ? 0 : got.holderWindowEnd - clock.now();
    const pace = got.holderAsleep ? ASLEEP_CHECK_MS : a.tickPollMs;
    const wait = holderLeft > 0 ? Math.min(holderLeft, got.heldForMs + 1, pace) : Math.min(got.heldForMs + 1, a.tickPollMs, handoverWait);
    if (holderLeft <= 0) handoverWait = Math.min(handoverWait * 2, a.tickPollMs);
    await clock.sleep(Math.max(25, Math.min(wait, a.windowEnd - clock.now())));
  }
}
