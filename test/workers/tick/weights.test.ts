/**
 * Topic weights through the real tick on the virtual clock: two topics with
 * large backlogs, and the jobs each starts over a window. Under contention
 * for TICK_CONCURRENCY they follow the topics' weights; without it, weights
 * change nothing.
 */
import type { Env } from "../../../src/env.js";
import { describe, expect, it } from "vitest";
import { recorder, tickDeployment, uniqueTopic, VirtualClock, type Seen } from "./helpers.js";

const T0 = 1_900_000_012_000;
/** Every handler takes this long on the virtual clock. */
const HANDLER_MS = 100;
/** Handlers a topic without a concurrency setting runs at once (its http or code handler's default). */
const TOPIC_SLOTS = 10;

/**
 * Runs one loop of `windowMs` over two backlogged topics of weights `a` and
 * `b` (more jobs than the window can start, so both stay backlogged to its
 * end); the jobs of each started from a second in (the first round's chunks
 * have started) to a second before the loop ends.
 */
async function startsUnder(a: number, b: number, env: Partial<Env> & { TICK_CONCURRENCY: string }, windowMs: number): Promise<[number, number]> {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({ TICK_POLL_MS: "100", TICK_CHUNK: "8", TICK_IDLE_PEEK_MS: "0", ...env }, clock);
  // More than the topic could start in the window however the slots went.
  const backlog = (windowMs / HANDLER_MS) * Math.min(TOPIC_SLOTS, Number(env.TICK_CONCURRENCY)) + 100;
  const [heavy, light] = await Promise.all(
    ([a, b] as const).map(async (weight, k) => {
      const topic = uniqueTopic(k === 0 ? "heavy" : "light");
      await d.queue.configureTopic(topic, { weight });
      for (let i = 0; i < backlog; i += 1_000)
        await d.queue.enqueueBatch(Array.from({ length: Math.min(1_000, backlog - i) }, (_, j) => ({ topic, payload: i + j, runAt: T0 })));
      return recorder(d.handlers, topic, clock, () => clock.sleep(HANDLER_MS));
    }),
  );
  const report = await d.tick({ scheduledTime: T0, clock, windowMs });
  expect(report.ended).toBe("window");
  const counted = (s: Seen[]) => s.filter((x) => x.at >= T0 + 1_000 && x.at < T0 + windowMs - 1_000).length;
  for (const s of [heavy!, light!]) expect(s.length).toBeLessThan(backlog);
  return [counted(heavy!), counted(light!)];
}

describe("topic weights", () => {
  // Four handlers at once for two topics that could run ten each: every slot is contended all along.
  const contended = { TICK_CONCURRENCY: "4" };
  const slotsOver = (windowMs: number, slots: number) => ((windowMs - 2_000) / HANDLER_MS) * slots;

  it("two backlogged topics of weights 3 and 1 contending for TICK_CONCURRENCY start jobs 3:1 (± 5 %)", async () => {
    const [heavy, light] = await startsUnder(3, 1, contended, 12_000);
    expect(heavy + light).toBe(slotsOver(12_000, 4));
    expect(heavy / light).toBeGreaterThanOrEqual(3 * 0.95);
    expect(heavy / light).toBeLessThanOrEqual(3 * 1.05);
  });

  it("topics of one weight start jobs 1:1 (± 5 %), as topics that set none always have", async () => {
    const [one, other] = await startsUnder(1, 1, contended, 12_000);
    expect(one + other).toBe(slotsOver(12_000, 4));
    expect(one / other).toBeGreaterThanOrEqual(0.95);
    expect(one / other).toBeLessThanOrEqual(1.05);
  });

  it("topics of one weight share TICK_CONCURRENCY 1:1 (± 5 %) also when each chunk takes one job (TICK_CHUNK 1)", async () => {
    for (const slots of ["2", "4"]) {
      const [one, other] = await startsUnder(1, 1, { TICK_CONCURRENCY: slots, TICK_CHUNK: "1" }, 12_000);
      expect(one + other).toBe(slotsOver(12_000, Number(slots)));
      expect(one / other).toBeGreaterThanOrEqual(0.95);
      expect(one / other).toBeLessThanOrEqual(1.05);
    }
  });

  it("without contention — TICK_CONCURRENCY lets each topic run all its handlers — weights change nothing", async () => {
    const [heavy, light] = await startsUnder(3, 1, { TICK_CONCURRENCY: String(2 * TOPIC_SLOTS) }, 4_000);
    expect([heavy, light]).toEqual([slotsOver(4_000, TOPIC_SLOTS), slotsOver(4_000, TOPIC_SLOTS)]);
  });
});
