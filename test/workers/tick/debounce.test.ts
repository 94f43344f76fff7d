import { expect, it } from "vitest";
import { createdAtOfJobId } from "../../../src/queue/ids.js";
import { recorder, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000; // 20 s past a minute boundary
/** TICK_POLL_MS's default (docs/configuration.md), and so TICK_LEAD_MS's. */
const POLL = 1_000;

it("debounce: an upsert every 100 ms for 10 s, delay 1 s and maxWait 5 s, gives two deliveries, each of the latest payload and within maxWait", async () => {
  const clock = new VirtualClock(T0);
  // The default poll and lead: a topic with job keys is claimed at its jobs' due times, never ahead of them.
  const d = tickDeployment({}, clock);
  const topic = uniqueTopic("debounce");
  const seen = recorder(d.handlers, topic, clock);
  const upserts: Array<{ at: number; payload: number; id: string; result: string }> = [];
  const producer = (async () => {
    for (let i = 0; i < 100; i++) {
      const r = await d.queue.upsert({ topic, jobKey: "user-7", payload: i, delayMs: 1_000, maxWaitMs: 5_000 });
      upserts.push({ at: clock.now(), payload: i, id: r.id, result: r.result });
      await clock.sleep(100);
    }
  })();
  const tick = d.tick({ scheduledTime: T0 - 20_000, windowMs: 40_000 });
  await producer;
  await tick;

  expect(seen).toHaveLength(2);
  expect(upserts.filter((u) => u.result === "created").map((u) => u.id)).toEqual(seen.map((s) => s.id));
  for (const s of seen) {
    const mine = upserts.filter((u) => u.id === s.id);
    // The latest payload at its claim: every upsert that reached the job came before it started, the last one's payload is what ran.
    expect(s.payload).toBe(mine.at(-1)!.payload);
    for (const u of mine) expect(u.at).toBeLessThanOrEqual(s.at);
    const firstEnqueuedAt = createdAtOfJobId(s.id)!;
    expect(firstEnqueuedAt).toBe(mine[0]!.at);
    expect(s.at).toBeGreaterThanOrEqual(s.dueAt);
    expect(s.at).toBeLessThanOrEqual(firstEnqueuedAt + 5_000 + POLL);
  }
  // The second job took every upsert after the first one's claim, to the last.
  expect(seen[1]!.payload).toBe(99);
  expect(await d.queue.topicStats(topic)).toMatchObject({ scheduled: 0, inflight: 0 });
});
