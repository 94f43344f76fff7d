/**
 * Dead letters kept by id and failed time: stable pages, one-by-one
 * deletion, letters of earlier versions (a list) moved over, and a dead job
 * still readable by id after the retention window. Filtered, bounded replay
 * and purge: bounded-calls.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { ListPosition, Queue } from "../../../src/queue/queue.js";
import { killAll, testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;

async function allDead(queue: Queue, topic: string, options: { failedFrom?: number; failedTo?: number } = {}): Promise<string[]> {
  const ids: string[] = [];
  let after: ListPosition | undefined;
  for (;;) {
    const page = await queue.deadLetters(topic, { limit: 1_000, ...options, ...(after ? { after } : {}) });
    ids.push(...page.entries.map((e) => e.id));
    if (!page.next) return ids;
    after = page.next;
  }
}

describe("dead letters", () => {
  it("pages newest first with a cursor that stays put while letters arrive, are replayed or deleted; a failed-time window", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    // 30 letters, three per failed millisecond.
    for (let s = 0; s < 10; s++) {
      clock.now = T0 + s;
      await queue.enqueueBatch(Array.from({ length: 3 }, (_, i) => ({ topic: "p", payload: s * 3 + i, maxAttempts: 1 })));
      await killAll(queue, "p", () => "boom");
    }
    const newestFirst = await allDead(queue, "p");
    expect(newestFirst).toHaveLength(30);
    const first = await queue.deadLetters("p", { limit: 10 });
    expect(first.entries.map((e) => e.id)).toEqual(newestFirst.slice(0, 10));
    // Meanwhile: new letters (newer than every page), the cursor's own letter deleted, one ahead replayed.
    clock.now = T0 + 100;
    await queue.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ topic: "p", payload: 100 + i, maxAttempts: 1 })));
    await killAll(queue, "p", () => "later");
    expect(await queue.deleteDeadLetter("p", newestFirst[9]!)).toBe(true);
    expect(await queue.deleteDeadLetter("p", newestFirst[9]!)).toBe(false);
    expect((await queue.replayDeadLetters("p", { ids: [newestFirst[12]!] })).replayed).toBe(1);
    const second = await queue.deadLetters("p", { limit: 10, after: first.next! });
    expect(second.entries.map((e) => e.id)).toEqual([...newestFirst.slice(10, 12), ...newestFirst.slice(13, 21)]);

    const window = await allDead(queue, "p", { failedFrom: T0 + 2, failedTo: T0 + 4 });
    expect(window).toEqual(newestFirst.filter((_, i) => i >= 15 && i < 24 && i !== 12));
  });

  it("a dead job stays readable by id, with its attempts, after the retention window, as long as its letter is kept", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock, retentionMs: 1_000 });
    const { id } = await queue.enqueue({ topic: "r", payload: { keep: true }, maxAttempts: 1 });
    await queue.claim("r", { max: 1, leaseMs: 60_000 });
    await queue.settle("r", [{ id, attempt: 1, kind: "dead", error: "HTTP 500", httpStatus: 500, startedAt: T0, observed: { latenessMs: 0, durationMs: 12 } }]);
    clock.now = T0 + 10_000;
    expect(await queue.get(id)).toMatchObject({
      state: "dead",
      payload: { keep: true },
      lastError: "HTTP 500",
      finishedAt: T0,
      history: [{ attempt: 1, run: 1, startedAt: T0, durationMs: 12, outcome: "dead", httpStatus: 500, error: "HTTP 500" }],
    });
    expect(await queue.deleteDeadLetter("r", id)).toBe(true);
    expect(await queue.get(id)).toBeNull();
  });
});
