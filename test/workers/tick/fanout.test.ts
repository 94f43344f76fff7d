import { expect, inject, it } from "vitest";
import { testEnv } from "../self.js";
import { tickDeployment, uniqueTopic } from "./helpers.js";

/**
 * Fan-out runs chunks in invocations of their own (the TickChunk entrypoint
 * through the TICK_RUNNER service binding), which read the deployment's own
 * settings — so this test uses the deployment's own prefix, and a topic no
 * other test touches.
 */
it("a backlog beyond one invocation's budget is carried by fanned-out invocations", { timeout: 60_000 }, async () => {
  expect(testEnv.TICK_RUNNER).toBeDefined();
  const d = tickDeployment({ DELAYLINE_PREFIX: "dl:{main}", TICK_SUBREQUEST_BUDGET: "45", TICK_CHUNK: "10", TICK_FANOUT: "3", TICK_POLL_MS: "50" });
  const topic = uniqueTopic("fanout");
  await d.queue.configureTopic(topic, { url: `${inject("receiverUrl")}/${topic}/ok` });
  await d.queue.enqueueBatch(Array.from({ length: 300 }, (_, i) => ({ topic, payload: i })));
  const report = await d.tick({ scheduledTime: Date.now(), windowMs: 20_000, fanOut: (t, max) => testEnv.TICK_RUNNER!.run(t, max) });
  console.log(JSON.stringify({ fanout: report }));
  // This invocation stayed inside its 45 subrequests; the others carried the rest.
  expect(report.subrequests).toBeLessThanOrEqual(45);
  expect(report.fannedOut).toBeGreaterThan(0);
  const delivered = (await (await fetch(`${inject("receiverUrl")}/__deliveries?prefix=/${topic}/`)).json()) as unknown[];
  // Delivering here costs a subrequest per job: at most ~30 of the 45. Fanned out, a chunk costs one.
  expect(report.claimed).toBeGreaterThan(150);
  expect(delivered.length).toBe(report.claimed);
  expect(report.outcomes.ack).toBe(report.claimed);
});
