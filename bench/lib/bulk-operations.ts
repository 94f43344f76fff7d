/**
 * The bulk operations issue 15 bounds, as one scenario that the test
 * (test/workers/queue/bounded-calls.test.ts: calls and the work in each) and
 * the bench (bench/bounded-calls.ts: how long each call takes) both walk:
 * bulk cancel of the 60,000 of 100,000 scheduled jobs in a due window, then
 * replay and purge of 10,000 dead letters. It imports only the queue, so it
 * runs in workerd as in Node; `afterStep` is called after every bounded step.
 */
import type { ListPosition, Queue } from "../../src/queue/queue.js";

export const T0 = 1_900_000_000_000;
/** The jobs scheduled, 10 per due millisecond: job i is due at T0 + 1,000 + floor(i / 10). */
const SCHEDULED = 100_000;
/** The due window cancelled: jobs 20,000 … 79,999. */
const CANCEL_WINDOW = { dueFrom: T0 + 3_000, dueTo: T0 + 8_999 };
export const IN_WINDOW = 60_000;
/** Dead letters: 1,000 failed in each second T0 + 1 s … T0 + 10 s, every other one with "HTTP 503". */
const DEAD = 10_000;
/** What is replayed: the 503s that failed in seconds 3 to 6, spread over 10 minutes from T0 + 60 s. */
const REPLAY = { failedFrom: T0 + 3_000, failedTo: T0 + 6_000, errorContains: "HTTP 503", dueAt: T0 + 60_000, spreadMs: 600_000 };

/** The clock the queue reads (`now: () => clock.now`). */
export interface Clock {
  now: number;
}

type AfterStep<R> = (result: R) => Promise<void> | void;

/** Walks a bounded-step operation from its start to its end; the steps' results in order. */
async function walk<R extends { next: ListPosition | null }>(step: (after?: ListPosition) => Promise<R>, afterStep?: AfterStep<R>): Promise<R[]> {
  const results: R[] = [];
  let after: ListPosition | undefined;
  for (;;) {
    const r = await step(after);
    await afterStep?.(r);
    results.push(r);
    if (!r.next) return results;
    after = r.next;
  }
}

/** Schedules the 100,000 jobs of topic `many`; their ids in due order. */
export async function scheduleMany(queue: Queue): Promise<string[]> {
  const ids: string[] = [];
  for (let b = 0; b < SCHEDULED / 1_000; b++) {
    const batch = Array.from({ length: 1_000 }, (_, i) => ({
      topic: "many",
      payload: { n: b * 1_000 + i },
      runAt: T0 + 1_000 + Math.floor((b * 1_000 + i) / 10),
    }));
    ids.push(...(await queue.enqueueBatch(batch)).map((r) => r.id));
  }
  return ids;
}

/** Cancels the window of `many` step by step. */
export function cancelTheWindow(queue: Queue, afterStep?: AfterStep<Awaited<ReturnType<Queue["cancelWindow"]>>>) {
  return walk((after) => queue.cancelWindow("many", { ...CANCEL_WINDOW, ...(after ? { after } : {}) }), afterStep);
}

/** Kills every due job of `topic` with `error(payload)`, in settles of up to 1,000; returns how many (test/workers/queue/helpers.ts passes it on). */
export async function killAll(queue: Queue, topic: string, error: (payload: unknown) => string): Promise<number> {
  let n = 0;
  for (;;) {
    const { jobs } = await queue.claim(topic, { max: 1_000, leaseMs: 60_000 });
    if (jobs.length === 0) return n;
    await queue.settle(
      topic,
      jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "dead" as const, error: error(j.record.payload) })),
    );
    n += jobs.length;
  }
}

/** Fills topic `d` with the 10,000 dead letters; the number killed each second. */
export async function killTenThousand(queue: Queue, clock: Clock): Promise<number[]> {
  const killed: number[] = [];
  for (let s = 1; s <= DEAD / 1_000; s++) {
    clock.now = T0 + s * 1_000 - 500;
    await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "d", payload: { n: i, pad: "p".repeat(200) }, maxAttempts: 1 })));
    clock.now = T0 + s * 1_000;
    killed.push(await killAll(queue, "d", (p) => ((p as { n: number }).n % 2 === 0 ? "HTTP 503: busy" : "HTTP 400: bad")));
  }
  return killed;
}

/** Replays the window's 503s step by step (at T0 + 20 s). */
export function replayThe503s(queue: Queue, clock: Clock, afterStep?: AfterStep<Awaited<ReturnType<Queue["replayDeadLettersStep"]>>>) {
  clock.now = T0 + 20_000;
  return walk((after) => queue.replayDeadLettersStep("d", { ...REPLAY, ...(after ? { after } : {}) }), afterStep);
}

/** Purges the rest of `d` step by step. */
export function purgeTheRest(queue: Queue, afterStep?: AfterStep<Awaited<ReturnType<Queue["purgeDeadLettersStep"]>>>) {
  return walk((after) => queue.purgeDeadLettersStep("d", after ? { after } : {}), afterStep);
}
