/**
 * A job's attempt history, written by the claim (expired leases) and the
 * settle (every outcome, stale ones included), kept by cancel and replay.
 */
import { describe, expect, it } from "vitest";
import { ATTEMPT_HISTORY_LIMIT } from "../../../src/queue/queue.js";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;
const noDelay = normalizeBackoff({ type: "fixed", delay: 0 });

describe("attempt history", () => {
  it("a lease that expires is an 'expired' attempt; the late settle of that attempt is 'stale'; the next attempt's ack is 'ok'", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "h", payload: 1, backoff: noDelay, maxAttempts: 3 });
    const first = await queue.claim("h", { max: 1, leaseMs: 1_000 });
    expect(first.jobs[0]!.attempt).toBe(1);

    clock.now = T0 + 5_000;
    // Reaps attempt 1 (retried at once) and takes the job again as attempt 2.
    const second = await queue.claim("h", { max: 1, leaseMs: 60_000 });
    expect(second.reaped.retried).toBe(1);
    expect(second.jobs[0]!.attempt).toBe(2);

    clock.now = T0 + 6_000;
    const late = await queue.settle("h", [
      { id, attempt: 1, kind: "ack", startedAt: T0 + 10, observed: { latenessMs: 10, durationMs: 5_990 }, httpStatus: 200 },
    ]);
    expect(late[0]!.applied).toBe(false);
    clock.now = T0 + 7_000;
    await queue.settle("h", [{ id, attempt: 2, kind: "ack", startedAt: T0 + 5_100, observed: { latenessMs: 0, durationMs: 1_900 } }]);

    const job = await queue.get(id);
    expect(job!.state).toBe("succeeded");
    expect(job!.history).toEqual([
      { attempt: 1, run: 1, startedAt: T0, durationMs: 5_000, outcome: "expired", error: "lease expired: attempt 1 did not settle in time" },
      { attempt: 1, run: 1, startedAt: T0 + 10, durationMs: 5_990, outcome: "stale", httpStatus: 200 },
      { attempt: 2, run: 1, startedAt: T0 + 5_100, durationMs: 1_900, outcome: "ok" },
    ]);
  });

  it("repeated stale settles add one 'stale' entry for an expired attempt and none for an attempt that settled", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "rep", payload: 1, backoff: noDelay, maxAttempts: 5 });
    await queue.claim("rep", { max: 1, leaseMs: 1_000 });
    clock.now = T0 + 2_000;
    await queue.claim("rep", { max: 1, leaseMs: 60_000 });
    for (let i = 0; i < 30; i++) await queue.settle("rep", [{ id, attempt: 1, kind: "ack" }]);
    await queue.settle("rep", [{ id, attempt: 2, kind: "retry", at: T0 + 2_000, error: "again" }]);
    for (let i = 0; i < 30; i++) expect((await queue.settle("rep", [{ id, attempt: 2, kind: "ack" }]))[0]!.applied).toBe(false);
    expect((await queue.get(id))!.history.map((h) => [h.attempt, h.outcome])).toEqual([
      [1, "expired"],
      [1, "stale"],
      [2, "retry"],
    ]);
  });

  it("a pull consumer's attempt starts when it was claimed and lasts until it settles", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const { id } = await queue.enqueue({ topic: "p", payload: 1, backoff: noDelay });
    await queue.claim("p", { max: 1, leaseMs: 60_000 });
    clock.now = T0 + 2_500;
    expect(await queue.nack(id, 1, { error: "no" })).toBe("retry");
    clock.now = T0 + 3_000;
    await queue.claim("p", { max: 1, leaseMs: 60_000 });
    clock.now = T0 + 3_200;
    expect(await queue.ack(id, 2)).toBe("acked");
    expect((await queue.get(id))!.history).toEqual([
      { attempt: 1, run: 1, startedAt: T0, durationMs: 2_500, outcome: "retry", error: "no" },
      { attempt: 2, run: 1, startedAt: T0 + 3_000, durationMs: 200, outcome: "ok" },
    ]);
  });

  it(`keeps the last ${ATTEMPT_HISTORY_LIMIT} attempts, in the job while it is retried and in its dead letter`, async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const attempts = ATTEMPT_HISTORY_LIMIT + 5;
    const { id } = await queue.enqueue({ topic: "many", payload: 1, backoff: noDelay, maxAttempts: attempts });
    for (let a = 1; a <= attempts; a++) {
      clock.now += 1_000;
      const [job] = (await queue.claim("many", { max: 1, leaseMs: 60_000 })).jobs;
      expect(job!.attempt).toBe(a);
      const outcome =
        a < attempts
          ? { id, attempt: a, kind: "retry" as const, at: clock.now, error: `failure ${a}` }
          : { id, attempt: a, kind: "dead" as const, error: `failure ${a}` };
      await queue.settle("many", [outcome]);
      if (a === ATTEMPT_HISTORY_LIMIT + 1) {
        const live = await queue.get(id);
        expect(live!.state).toBe("scheduled");
        expect(live!.history.map((h) => h.attempt)).toEqual(Array.from({ length: ATTEMPT_HISTORY_LIMIT }, (_, i) => i + 2));
      }
    }
    const { entries } = await queue.deadLetters("many");
    const kept = Array.from({ length: ATTEMPT_HISTORY_LIMIT }, (_, i) => attempts - ATTEMPT_HISTORY_LIMIT + 1 + i);
    expect(entries[0]!.history.map((h) => h.attempt)).toEqual(kept);
    expect(entries[0]!.history.map((h) => h.error)).toEqual(kept.map((a) => `failure ${a}`));
    expect(entries[0]!.history.at(-1)!.outcome).toBe("dead");
    expect((await queue.get(id))!.history).toEqual(entries[0]!.history);
  });

  it.each([
    // "é" is two bytes of UTF-8 and "x" one: a cut at byte 1,024 would fall inside a character.
    ["two-byte characters", `x${"é".repeat(2_000)}`, `x${"é".repeat(511)}`],
    // "🎉" is two UTF-16 units and four bytes: after "xx", byte 1,024 falls inside the 256th, and unit 1,024 between its halves.
    ["surrogate pairs", `xx${"🎉".repeat(1_000)}`, `xx${"🎉".repeat(255)}`],
  ])("keeps at most 1 KB of an error's text, cut between characters: %s", async (_, error, kept) => {
    const { queue } = testQueue();
    const { id } = await queue.enqueue({ topic: "long", payload: 1, maxAttempts: 1 });
    await queue.claim("long", { max: 1, leaseMs: 60_000 });
    await queue.settle("long", [{ id, attempt: 1, kind: "dead", error }]);
    const [attempt] = (await queue.get(id))!.history;
    expect(attempt!.error).toBe(kept);
    expect(new TextEncoder().encode(attempt!.error).length).toBeLessThanOrEqual(1_024);
  });

  it("a cancelled job keeps its attempts; a replayed dead letter keeps them, marks the replay and counts attempts afresh in run 2", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const cancelled = await queue.enqueue({ topic: "c", payload: 1, backoff: noDelay });
    await queue.claim("c", { max: 1, leaseMs: 60_000 });
    await queue.settle("c", [{ id: cancelled.id, attempt: 1, kind: "retry", at: T0 + 60_000, error: "later" }]);
    expect(await queue.cancel(cancelled.id)).toBe("cancelled");
    const c = await queue.get(cancelled.id);
    expect(c!.state).toBe("cancelled");
    expect(c!.history.map((h) => [h.attempt, h.outcome, h.error])).toEqual([[1, "retry", "later"]]);

    const dead = await queue.enqueue({ topic: "r", payload: 2, maxAttempts: 1 });
    await queue.claim("r", { max: 1, leaseMs: 60_000 });
    await queue.settle("r", [{ id: dead.id, attempt: 1, kind: "dead", error: "broken", httpStatus: 500 }]);
    expect((await queue.replayDeadLetters("r", { ids: [dead.id] })).replayed).toBe(1);
    const replayed = await queue.get(dead.id);
    expect(replayed).toMatchObject({ state: "scheduled", attempts: 0 });
    // The replay is a marker at its time, opening run 2; attempts count per run.
    expect(replayed!.history.map((h) => [h.run, h.attempt, h.outcome, h.httpStatus, h.startedAt])).toEqual([
      [1, 1, "dead", 500, T0],
      [2, 0, "replayed", undefined, T0],
    ]);
    const [again] = (await queue.claim("r", { max: 1, leaseMs: 60_000 })).jobs;
    expect(again!.attempt).toBe(1);
    await queue.settle("r", [{ id: dead.id, attempt: 1, kind: "ack", httpStatus: 204 }]);
    expect((await queue.get(dead.id))!.history.map((h) => [h.run, h.attempt, h.outcome, h.httpStatus])).toEqual([
      [1, 1, "dead", 500],
      [2, 0, "replayed", undefined],
      [2, 1, "ok", 204],
    ]);
  });

  it("a job never attempted has an empty history", async () => {
    const { queue } = testQueue();
    const { id } = await queue.enqueue({ topic: "new", payload: 1, delayMs: 60_000 });
    expect((await queue.get(id))!.history).toEqual([]);
  });
});
