/**
 * A claim of a topic whose jobs may expire (lib/claim-expire.lua): a job that
 * lapses there (past its expiresAt, or its due time plus the topic's
 * maxLateness) takes no slot from a job due behind it. Found by the
 * model-based tick test: a drain at concurrency 1 took nothing, the lapsed
 * job having been the one candidate it read, and a retry due behind it
 * waited for the tick's next look.
 */
import { expect, it } from "vitest";
import { testQueue } from "./helpers.js";

it("maxLateness at concurrency 1: the claim expires the late job and takes the one due behind it", async () => {
  const clock = { now: 1_900_000_000_000 };
  const { queue } = testQueue({ clock });
  await queue.configureTopic("late", { maxLateness: 1_000, concurrency: 1 });
  const [late, fine] = await queue.enqueueBatch([
    { topic: "late", payload: "late", delayMs: 0 },
    { topic: "late", payload: "fine", delayMs: 5_000 },
  ]);
  const claimed = await queue.claim("late", { max: 1, leaseMs: 60_000, now: clock.now + 6_000 });
  expect(claimed.jobs.map((j) => j.id)).toEqual([fine!.id]);
  expect((await queue.get(late!.id))!.state).toBe("expired");
});

it("expiresAt: of three jobs due together, the two past it expire and the claim of one still takes the third", async () => {
  const clock = { now: 1_900_000_000_000 };
  const { queue } = testQueue({ clock });
  const [a, b, c] = await queue.enqueueBatch([
    { topic: "exp", payload: "a", delayMs: 0, expiresAt: clock.now + 1_000 },
    { topic: "exp", payload: "b", delayMs: 0, expiresAt: clock.now + 2_000 },
    { topic: "exp", payload: "c", delayMs: 0 },
  ]);
  const claimed = await queue.claim("exp", { max: 1, leaseMs: 60_000, now: clock.now + 3_000 });
  expect(claimed.jobs.map((j) => j.id)).toEqual([c!.id]);
  for (const id of [a!.id, b!.id]) expect((await queue.get(id))!.state, id).toBe("expired");
});
