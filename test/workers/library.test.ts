/**
 * delayline as a library: the handlers a Worker passes to delayline() are
 * the ones its tick runs, in each shape the option takes; and each call is a
 * deployment of its own, whose handlers, app and TickChunk no other call in
 * the isolate shares.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { expect, inject, it } from "vitest";
import { delayline, type DelaylineWorker } from "../../src/index.js";
import { deliveries, tickDeployment, uniqueTopic, VirtualClock } from "./tick/helpers.js";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

it("runs a plain handler, one with options and a batch handler, as the options give them", async () => {
  const clock = new VirtualClock(T0);
  const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
  const [plain, limited, batched] = [uniqueTopic("plain"), uniqueTopic("limited"), uniqueTopic("batched")];
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
  expect(typeof dl.TickChunk).toBe("function");

  for (let i = 0; i < 3; i++) {
    await d.queue.enqueue({ topic: plain, payload: `p${i}`, runAt: T0 + 1_000 });
    await d.queue.enqueue({ topic: limited, payload: `l${i}`, runAt: T0 + 1_000 });
  }
  for (let i = 0; i < 6; i++) await d.queue.enqueue({ topic: batched, payload: `b${i}`, runAt: T0 + 1_000 });
  await d.tick({ scheduledTime: T0, windowMs: 5_000, handlers: dl.handlers });

  expect([...seen.plain!].sort()).toEqual(["p0", "p1", "p2"]);
  expect([...seen.limited!].sort()).toEqual(["l0", "l1", "l2"]);
  expect(mostAtOnce).toBe(1);
  expect([...seen.batched!].sort()).toEqual(["b0", "b1", "b2", "b3", "b4", "b5"]);
  expect(batchSizes.every((n) => n <= 3)).toBe(true);
});

/** One chunk of `topic` run by the deployment's TickChunk entrypoint, as a fanned-out chunk runs (an instance the runtime would make). */
async function runChunkOf(dl: DelaylineWorker, env: object, topic: string) {
  const ctx = createExecutionContext();
  const report = await new dl.TickChunk(ctx, env as never).run(topic, 10);
  await waitOnExecutionContext(ctx);
  return report;
}

it("two delayline() instances in one isolate keep their own handlers: one's handler never runs the other's jobs", async () => {
  const d = tickDeployment();
  const topic = uniqueTopic("shared");
  await d.queue.configureTopic(topic, { url: `${inject("receiverUrl")}/${topic}/ok` });
  const ranInA: string[] = [];
  const a = delayline({ handlers: { [topic]: (job) => void ranInA.push(job.id) } });
  const b = delayline();

  // B has no handler for the topic: its chunk delivers over http, A's handler is not called.
  const forB = await d.queue.enqueue({ topic, payload: "b" });
  expect((await runChunkOf(b, d.env, topic)).outcomes.ack).toBe(1);
  expect(ranInA).toEqual([]);
  expect((await deliveries(`/${topic}/`)).map((x) => x.headers["delayline-job-id"])).toEqual([forB.id]);

  // A's chunk runs A's handler, and sends nothing over http.
  const forA = await d.queue.enqueue({ topic, payload: "a" });
  expect((await runChunkOf(a, d.env, topic)).outcomes.ack).toBe(1);
  expect(ranInA).toEqual([forA.id]);
  expect(await deliveries(`/${topic}/`)).toHaveLength(1);

  // A handler B defines later is B's alone, from its next chunk on; removed, the topic goes back to http.
  const ranInB: string[] = [];
  b.handlers.define(topic, (job) => void ranInB.push(job.id));
  const laterForB = await d.queue.enqueue({ topic, payload: "b later" });
  expect((await runChunkOf(b, d.env, topic)).outcomes.ack).toBe(1);
  expect([ranInA, ranInB]).toEqual([[forA.id], [laterForB.id]]);
  a.handlers.remove(topic);
  const overHttp = await d.queue.enqueue({ topic, payload: "a, removed" });
  expect((await runChunkOf(a, d.env, topic)).outcomes.ack).toBe(1);
  expect([ranInA, ranInB]).toEqual([[forA.id], [laterForB.id]]);
  expect((await deliveries(`/${topic}/`)).map((x) => x.headers["delayline-job-id"])).toEqual([forB.id, overHttp.id]);
});

it("each delayline() instance has an app of its own: a route added to one is not served by the other", async () => {
  const a = delayline();
  const b = delayline();
  a.app.get("/only-in-a", (c) => c.text("a"));
  const get = async (dl: DelaylineWorker) => {
    const ctx = createExecutionContext();
    const res = await dl.fetch(new Request("http://delayline.test/only-in-a"), tickDeployment().env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };
  expect(await (await get(a)).text()).toBe("a");
  expect((await get(b)).status).toBe(404);
});
