import type { SubrequestBudget } from "./budget.js";
import type { ChunksInFlight } from "./in-flight.js";
import type { Log } from "./settle.js";

/** What a producer does after storing jobs (src/tick/wake.ts, wakeForSoonJobs), for these; resolves once what it started has ended. */
export type Wake = (jobs: Array<{ topic: string; dueAt: number }>) => Promise<unknown>;

/**
 * Waits for the chunks a loop still runs when it lets go of the lock. Its
 * successor polls meanwhile, but has not heard of what they do as they end —
 * slots freed that a topic's concurrency held jobs back for, retries — and
 * once asleep it looks only every TICK_IDLE_PEEK_MS. So what each ended (or
 * early) settle asks to be back for goes through the producers' wake path,
 * which drains the topic while the tick sleeps and does nothing while it is
 * awake. `fold` takes in what ended, as the loop does between rounds.
 */
export async function awaitLateChunks(
  inFlight: ChunksInFlight,
  o: { wake: Wake | undefined; budget: SubrequestBudget; fold: () => void; log: Log },
): Promise<void> {
  // What ended while the loop ran, the loop has seen.
  inFlight.takeTopicLooks();
  const woken: Array<Promise<unknown>> = [];
  while (!inFlight.idle) {
    await inFlight.whenOneEnds();
    o.fold();
    const looks = inFlight.takeTopicLooks();
    // The sleep mark's read and a drain a topic at most.
    if (!o.wake || looks.size === 0 || o.budget.left < 1 + looks.size) continue;
    o.budget.spend(1 + looks.size);
    const jobs = [...looks].map(([topic, dueAt]) => ({ topic, dueAt }));
    woken.push(
      o.wake(jobs).catch((err: unknown) => o.log({ level: "error", msg: "waking topics for chunks that ended after their loop failed", error: String(err) })),
    );
  }
  o.fold();
  await Promise.all(woken);
}
