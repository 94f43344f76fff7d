/**
 * The client through an outage of the local stack (redis-server, the REST
 * bridge, the Worker in `wrangler dev`, as chaos/stack.ts runs it): with the
 * bridge stopped, the Worker answers 503 and the client keeps retrying the
 * enqueue with one Idempotency-Key; once the bridge is back the enqueue
 * succeeds, and exactly one job exists.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChaosStack } from "../../chaos/stack.js";
import { Delayline, DelaylineUnavailableError, type RetryEvent } from "../../src/client/index.js";

let stack: ChaosStack;

beforeAll(async () => {
  stack = await ChaosStack.start();
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  expect(stack.leftovers()).toEqual([]);
});

it("with the bridge stopped for 3 s, enqueue succeeds once it is back, and exactly one job exists", { timeout: 120_000 }, async () => {
  const keys: Array<string | null> = [];
  const retries: RetryEvent[] = [];
  let failedOnce!: () => void;
  const failed = new Promise<void>((r) => (failedOnce = r));
  const dl = new Delayline({
    baseUrl: stack.url,
    token: stack.apiToken,
    // Enough retries that the outcome cannot hinge on how fast this machine restarts the bridge.
    retry: { retries: 30 },
    onRetry: (e) => {
      retries.push(e);
      failedOnce();
    },
    fetch: (request) => {
      keys.push(request.headers.get("idempotency-key"));
      return fetch(request);
    },
  });
  const plain = new Delayline({ baseUrl: stack.url, token: stack.apiToken });
  await plain.jobs.enqueue({ topic: "outage-warmup", delay: "1h" });

  await stack.stopBridge();
  const stoppedAt = Date.now();
  let bridgeBack = false;
  const enqueued = dl.jobs.enqueue({ topic: "outage", payload: { n: 1 }, delay: "1h" }).then((job) => ({ job, bridgeBack }));
  // The enqueue has met the outage before the clock starts mattering.
  await failed;
  await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 3_000 - Date.now())));
  bridgeBack = true;
  await stack.startBridge();

  const { job, bridgeBack: resolvedAfterRestart } = await enqueued;
  expect(resolvedAfterRestart).toBe(true);
  expect(retries.length).toBeGreaterThan(0);
  for (const r of retries) expect(r.error).toBeInstanceOf(DelaylineUnavailableError);
  // The Worker's own answer to an outage, not a dropped connection, reached the client.
  expect(retries.some((r) => r.error.status === 503)).toBe(true);
  expect(keys).toHaveLength(retries.length + 1);
  expect(new Set(keys).size).toBe(1);
  expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);

  const listed = await plain.jobs.list("outage", { payload: true });
  expect(listed.jobs.map((j) => [j.id, j.payload])).toEqual([[job.id, { n: 1 }]]);
  expect(await plain.jobs.get(job.id)).toMatchObject({ state: "scheduled", topic: "outage" });
});
