/**
 * The fault scenarios of `npm run chaos`, CI-sized (its `--quick` sizes),
 * against the local stack: redis-server with fsync always, the bridge, the
 * Worker in `wrangler dev`, the cron driver. Each accounts for every
 * acknowledged job: delivered once, delivered again after the fault, dead or
 * still scheduled, and never lost.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChaosReceiver } from "../../chaos/receiver.js";
import { CHAOS_SETTINGS } from "../../chaos/settings.js";
import { killRedis, killWorkerd, stopBridge, type Ctx, type ScenarioResult } from "../../chaos/scenarios.js";
import { ChaosStack } from "../../chaos/stack.js";
import { Api } from "../../harness/api.js";

let stack: ChaosStack;
let receiver: ChaosReceiver;
let ctx: Ctx;

beforeAll(async () => {
  receiver = await new ChaosReceiver().start();
  stack = await ChaosStack.start({ settings: CHAOS_SETTINGS });
  stack.startCron();
  ctx = { stack, api: new Api(stack.url, stack.apiToken), receiver, quick: true, log: () => {} };
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  expect(stack.leftovers()).toEqual([]);
});

function survived(r: ScenarioResult) {
  expect(r.failures).toEqual([]);
  expect(r.accounting.lost).toBe(0);
  expect(r.accounting.early).toBe(0);
  expect(r.accounting.enqueued).toBeGreaterThan(0);
  expect(r.accounting.deliveredOnce + r.accounting.redelivered + r.accounting.dead + r.accounting.scheduled).toBe(r.accounting.enqueued);
}

it("kill -9 of redis-server during load: nothing acknowledged is lost", async () => {
  survived(await killRedis(ctx));
}, 400_000);

it("the bridge stopped for 10 s: 503 problem+json only, the tick backs off and resumes, nothing lost", async () => {
  const r = await stopBridge(ctx);
  survived(r);
}, 400_000);

it("kill -9 of workerd mid-round, then a restart: leased jobs are delivered again, nothing lost", async () => {
  const r = await killWorkerd(ctx);
  survived(r);
  expect(r.fault.killedPids).toBeGreaterThan(0);
}, 400_000);
