/**
 * delayline as a library: the handlers a Worker passes to delayline() are
 * the ones its tick runs, in each shape the option takes.
 */
import { afterEach, expect, it } from "vitest";
import { delayline, removeHandler } from "../../src/index.js";
import { tickDeployment, uniqueTopic, VirtualClock } from "./tick/helpers.js";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const topics: string[] = [];
afterEach(() => topics.splice(0).forEach(removeHandler));

it("runs a plain handler, one with options and a batch handler, as the options give them", async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
  const [plain, limited, batched] = [uniqueTopic("plain"), uniqueTopic("limited"), uniqueTopic("batched")];
  topics.push(plain, limited, batched);
  const seen: Record<string, unknown[]> = { plain: [], limited: [], batched: [] };
  let running = 0;
  let mostAtOnce = 0;
  const batchSizes: number[] = [];
  const dl = delayline({
    handlers: {
      [plain]: (job) => void seen.plain!.push(job.payload),
      [limited]: {
        concurrency: 1,
        handler: async (job) => {
          mostAtOnce = Math.max(mostAtOnce, ++running);
          await clock.sleep(50);
          running--;
          seen.limited!.push(job.payload);
        },
      },
      [batched]: {
        batchSize: 3,
        batchHandler: (jobs) => {
          batchSizes.push(jobs.length);
          seen.batched!.push(...jobs.map((j) => j.payload));
          return jobs.map(() => undefined);
        },
      },
    },
  });
  expect(typeof dl.fetch).toBe("function");
  expect(typeof dl.scheduled).toBe("function");
  expect(dl.TickChunk.name).toBe("TickChunk");

  for (let i = 0; i < 3; i++) {
    await d.queue.enqueue({ topic: plain, payload: `p${i}`, runAt: T0 + 1_000 });
    await d.queue.enqueue({ topic: limited, payload: `l${i}`, runAt: T0 + 1_000 });
  }
  for (let i = 0; i < 6; i++) await d.queue.enqueue({ topic: batched, payload: `b${i}`, runAt: T0 + 1_000 });
  await d.tick({ scheduledTime: T0, windowMs: 5_000 });

  expect([...seen.plain!].sort()).toEqual(["p0", "p1", "p2"]);
  expect([...seen.limited!].sort()).toEqual(["l0", "l1", "l2"]);
  expect(mostAtOnce).toBe(1);
  expect([...seen.batched!].sort()).toEqual(["b0", "b1", "b2", "b3", "b4", "b5"]);
  expect(batchSizes.every((n) => n <= 3)).toBe(true);
});
