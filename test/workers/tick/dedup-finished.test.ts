import { expect, it } from "vitest";
import { recorder, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000; // 20 s past a minute boundary

it("an idempotency key held until its job finished, through the tick: a repeat is the job while it waits, a new job once the tick delivered it, and once it died", async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({}, clock);
  const topic = uniqueTopic("finished");
  let fail = false;
  const seen = recorder(d.handlers, topic, clock, () => {
    if (fail) throw new Error("boom");
  });
  await d.queue.configureTopic(topic, { maxAttempts: 1 });
  const enqueue = () => d.queue.enqueue({ topic, payload: "x", delayMs: 5_000, idempotencyKey: "order-1", idempotencyUntil: "finished" });
  const run = () => d.tick({ scheduledTime: clock.now(), windowMs: 30_000 });

  const first = await enqueue();
  expect(await enqueue()).toMatchObject({ id: first.id, deduplicated: true, dueAt: first.dueAt });
  await run();
  expect(seen.map((s) => s.id)).toEqual([first.id]);
  expect((await d.queue.get(first.id))!.state).toBe("succeeded");

  const second = await enqueue();
  expect(second.deduplicated).toBe(false);
  expect(second.id).not.toBe(first.id);
  fail = true;
  await run();
  expect(seen.map((s) => s.id)).toEqual([first.id, second.id]);
  expect((await d.queue.get(second.id))!.state).toBe("dead");

  const third = await enqueue();
  expect(third.deduplicated).toBe(false);
  expect(third.id).not.toBe(second.id);
  expect(await enqueue()).toMatchObject({ id: third.id, deduplicated: true });
  expect(await d.queue.topicStats(topic)).toMatchObject({ scheduled: 1, inflight: 0, dead: 1 });
});
