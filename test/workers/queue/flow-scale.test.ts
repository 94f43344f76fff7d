/**
 * Flow keys at scale (issue 36): what a keyed job costs in Redis commands
 * (INFO commandstats, as Upstash bills them) when a shaped topic serves many
 * keys of one job each, batched, or one hot key, beside an unkeyed topic;
 * that nothing of a drained key is left behind; that an idle minute costs
 * the same after 1 or many keys; and that no call's work grows with the
 * number of keys (each call's commands and arguments, counted). Runs against
 * a Redis of its own, one test after the other, with KEYS keys:
 * FLOW_SCALE_KEYS, 10,000 in `npm test`, 100,000 by `npm run test:flow-scale`.
 * How long the calls take is the bench's: `npm run bench:flow-scale`.
 */
import { afterAll, describe, expect, inject, it } from "vitest";
import { CLAIM_CANDIDATES, FLOW_PROMOTE_BATCH, FLOW_RATE_FORGET_BATCH } from "../../../src/limits.js";
import * as lua from "../../../src/queue/lua.generated.js";
import { Queue } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { testEnv } from "../self.js";
import { freshPrefix } from "./helpers.js";
import { nameScripts, redisMeter, type StepWork, totalCommands } from "./redis-meter.js";

const vars = testEnv as unknown as Record<string, string | undefined>;
const KEYS = vars.FLOW_SCALE_KEYS ? Number(vars.FLOW_SCALE_KEYS) : 10_000;
/** The tick's chunk (TICK_CHUNK's default), as cost.test.ts claims. */
const CHUNK = 100;
/** Single enqueues in flight at a time, as cost.test.ts sends them. */
const IN_FLIGHT = 50;
/** Per test: most time per thousand keys. */
const timeout = Math.max(300_000, KEYS * 60);

const url = inject("flowBridgeUrl");
const token = inject("flowBridgeToken");
const stats = redisMeter(url, token);
const report: Record<string, number> = {};
afterAll(() => console.log(JSON.stringify({ flowScale: { keys: KEYS, ...report } })));

function flowQueue(clock?: { now: number }) {
  const redis = createRedis({ redisUrl: url, redisToken: token, redisTimeoutMs: 30_000 });
  return new Queue({ redis, prefix: freshPrefix("flowscale"), ...(clock ? { now: () => clock.now } : {}) });
}

const payload = (i: number) => ({ n: i, pad: "x".repeat(80) });
const keyOf = (i: number) => `k${String(i).padStart(6, "0")}`;

/** `n` jobs enqueued one per call, IN_FLIGHT calls at a time; `key(i)` is job i's flow key (undefined: none). */
async function enqueueSingly(queue: Queue, topic: string, n: number, key: (i: number) => string | undefined): Promise<void> {
  for (let i = 0; i < n; i += IN_FLIGHT) {
    await Promise.all(
      Array.from({ length: Math.min(IN_FLIGHT, n - i) }, (_, j) => {
        const flowKey = key(i + j);
        return queue.enqueue({ topic, payload: payload(i + j), ...(flowKey === undefined ? {} : { flowKey }) });
      }),
    );
  }
}

/** Claims CHUNK at a time and acks each chunk, until a claim takes none; `step` runs after each claim and each settle. */
async function drain(queue: Queue, topic: string, step: (call: "claim" | "settle") => Promise<void> = async () => {}): Promise<number> {
  let done = 0;
  for (;;) {
    const { jobs } = await queue.claim(topic, { max: CHUNK, leaseMs: 60_000 });
    await step("claim");
    if (jobs.length === 0) return done;
    await queue.settle(
      topic,
      jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
    );
    await step("settle");
    done += jobs.length;
  }
}

/** Which of the topic's flow sets and hashes exist (fkeys, the keys' own settings, is configuration, not state). */
async function flowState(queue: Queue, topic: string): Promise<Record<string, number>> {
  const { fdue, fsched, fready, fcal, fpark, fin, ftat, fkidx } = queue.keys.topic(topic).flow;
  const sets = { fdue, fsched, fready, fcal, fpark, fin, ftat, fkidx };
  const out: Record<string, number> = {};
  for (const [name, key] of Object.entries(sets)) out[name] = Number(await stats.command(["EXISTS", key]));
  return out;
}
const NONE = { fdue: 0, fsched: 0, fready: 0, fcal: 0, fpark: 0, fin: 0, ftat: 0, fkidx: 0 };

/**
 * The success path of `n` jobs: commands per job to enqueue, to claim and ack, and both — as steady traffic
 * meets it, like cost.test.ts's figures: the topic has had a job before (of flow key `warm`, undefined: none),
 * which registered it and told the isolate its marks, so no metered enqueue pays the script for that.
 */
async function successPath(queue: Queue, topic: string, n: number, warm: string | undefined, enqueue: () => Promise<void>) {
  await queue.enqueue({ topic, payload: payload(-1), ...(warm === undefined ? {} : { flowKey: warm }) });
  expect(await drain(queue, topic)).toBe(1);
  const enqueued = await stats.meter(enqueue);
  const drained = await stats.meter(() => drain(queue, topic));
  expect(drained.result).toBe(n);
  return { enqueue: enqueued.commands / n, claimAndAck: drained.commands / n, success: (enqueued.commands + drained.commands) / n };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
function note(path: string, cost: { enqueue: number; claimAndAck: number; success: number }): void {
  report[`${path}_enqueueCommands`] = round3(cost.enqueue);
  report[`${path}_claimAndAckCommands`] = round3(cost.claimAndAck);
  report[`${path}_successCommands`] = round3(cost.success);
}

describe.sequential("flow keys at scale", () => {
  it(`${KEYS} keys × 1 job, enqueued one per call: ≤ 5.5 commands per job, and nothing of the keys left behind`, { timeout }, async () => {
    const queue = flowQueue();
    const cost = await successPath(queue, "cold", KEYS, "warm", () => enqueueSingly(queue, "cold", KEYS, keyOf));
    note("coldKeys_single", cost);
    expect(cost.success).toBeLessThanOrEqual(5.5);
    expect(await flowState(queue, "cold")).toEqual(NONE);
  });

  it(`${KEYS} keys × 1 job, enqueued in batches of 1,000`, { timeout }, async () => {
    const queue = flowQueue();
    const cost = await successPath(queue, "batched", KEYS, "warm", async () => {
      for (let i = 0; i < KEYS; i += 1_000) {
        await queue.enqueueBatch(
          Array.from({ length: Math.min(1_000, KEYS - i) }, (_, j) => ({ topic: "batched", payload: payload(i + j), flowKey: keyOf(i + j) })),
        );
      }
    });
    note("coldKeys_batched", cost);
    // A batch's writes are one command per set, whatever its size: what is left is the claim and the ack.
    expect(cost.success).toBeLessThanOrEqual(1);
    expect(await flowState(queue, "batched")).toEqual(NONE);
  });

  it(`one hot key of ${KEYS} jobs, enqueued one per call`, { timeout }, async () => {
    const queue = flowQueue();
    const cost = await successPath(queue, "hot", KEYS, "hot", () => enqueueSingly(queue, "hot", KEYS, () => "hot"));
    note("hotKey_single", cost);
    expect(cost.success).toBeLessThanOrEqual(5.5);
    expect(await flowState(queue, "hot")).toEqual(NONE);
  });

  it(`an unkeyed topic beside them costs what cost.test.ts measures (${KEYS} jobs)`, { timeout }, async () => {
    const queue = flowQueue();
    // The isolate knows a shaped topic of the same deployment: the plain one is not served as one.
    await queue.enqueue({ topic: "shaped", payload: 0, flowKey: "k" });
    expect((await queue.claim("shaped", { max: 1, leaseMs: 60_000 })).jobs).toHaveLength(1);
    const cost = await successPath(queue, "plain", KEYS, undefined, () => enqueueSingly(queue, "plain", KEYS, () => undefined));
    note("unkeyed_single", cost);
    // docs/costs.md's success path: 3.27 (three commands an enqueue, a quarter of one a claim and ack).
    expect(cost.success).toBeLessThanOrEqual(3.3);
  });

  it(`${KEYS} rate-limited keys × 1 job: once their rates' times have passed, their GCRA times are gone too`, { timeout }, async () => {
    const T0 = 1_900_000_000_000;
    const clock = { now: T0 };
    const queue = flowQueue(clock);
    await queue.configureTopic("rated", { flow: { ratePerSec: 1 } });
    for (let i = 0; i < KEYS; i += 1_000) {
      await queue.enqueueBatch(Array.from({ length: Math.min(1_000, KEYS - i) }, (_, j) => ({ topic: "rated", payload: i + j, flowKey: keyOf(i + j) })));
    }
    expect(await drain(queue, "rated")).toBe(KEYS);
    // Each key started one job now: its next start is a second away, which its GCRA time holds until then.
    expect(await flowState(queue, "rated")).toEqual({ ...NONE, ftat: 1 });
    const index = queue.keys.topicIndex;
    const score = Number(await stats.command(["ZSCORE", index, "rated"]));
    expect(score).toBeLessThanOrEqual(T0 + 1_000);
    // The tick looks again once the times have passed, and each look drops a bounded batch of them.
    clock.now = T0 + 1_000;
    let looks = 0;
    while (Number(await stats.command(["ZSCORE", index, "rated"])) <= clock.now && (await flowState(queue, "rated")).ftat === 1) {
      expect((await queue.claim("rated", { max: CHUNK, leaseMs: 60_000 })).jobs).toHaveLength(0);
      looks++;
      expect(looks).toBeLessThanOrEqual(KEYS / FLOW_RATE_FORGET_BATCH + 1);
    }
    expect(await flowState(queue, "rated")).toEqual(NONE);
    report.ratedKeys_looksToForget = looks;
  });

  it(`an idle minute of the tick costs the same after 1 or ${KEYS} keys were served`, { timeout }, async () => {
    const { tickDeployment, VirtualClock } = await import("../tick/helpers.js");
    const perMinute: Record<number, number> = {};
    for (const count of [1, KEYS]) {
      const clock = new VirtualClock(1_900_000_000_000);
      const d = tickDeployment({ UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, TICK_POLL_MS: "1000" }, clock);
      let handled = 0;
      d.handlers.define("past", () => void handled++);
      await d.queue.configureTopic("past", { flow: { ratePerSec: 1, parallelism: 1 } });
      for (let i = 0; i < count; i += 1_000) {
        await d.queue.enqueueBatch(Array.from({ length: Math.min(1_000, count - i) }, (_, j) => ({ topic: "past", payload: i + j, flowKey: keyOf(i + j) })));
      }
      // Served, each key's rate time passed and forgotten (FLOW_RATE_FORGET_BATCH a look), then the tick settles into idleness.
      await d.tick({ scheduledTime: clock.now(), windowMs: 60_000 });
      expect(handled).toBe(count);
      let windows = 0;
      do {
        await d.tick({ scheduledTime: clock.now(), windowMs: 60_000 });
        windows++;
      } while ((await flowState(d.queue, "past")).ftat === 1 && windows < 20);
      report[`idle_windowsToForget_after${count}keys`] = windows;
      expect(await flowState(d.queue, "past")).toEqual(NONE);
      const minute = await stats.meter(() => d.tick({ scheduledTime: clock.now(), windowMs: 60_000 }));
      expect(minute.result.claimed).toBe(0);
      perMinute[count] = minute.commands;
      report[`idle_asleep_after${count}keys_commandsPerMinute`] = minute.commands;
    }
    expect(perMinute[KEYS]).toBe(perMinute[1]);
  });
});

/**
 * The bound on one call's work, from the scripts' shape: flow-read names at
 * most CHUNK keys and reads each one's jobs waiting (a command a key in the
 * calendar), claim.lua checks a drained key of the calendar once more; the
 * rest is a fixed set of reads and writes of the topic's sets, each over the
 * claim's jobs and keys, with a margin. A call's arguments: per job named
 * seven (its key, id, priority, due, source, record and meta keys), per
 * newly due job four, per key two, and a fixed few dozen.
 */
const CALL_COMMANDS = 2 * CHUNK + 80;
const JOBS_NAMED = CHUNK * (2 + CLAIM_CANDIDATES);
const CLAIM_ARGS = 7 * JOBS_NAMED + 4 * FLOW_PROMOTE_BATCH + 2 * CHUNK + 3 * 100 + 60;
const SETTLE_ARGS = 10 * CHUNK + 30;

function expectBoundedCalls(steps: Array<{ call: "claim" | "settle"; work: StepWork }>): void {
  for (const [i, { call, work }] of steps.entries()) {
    const names = work.scripts.map((s) => s.name);
    expect(names, `step ${i}`).toEqual(call === "claim" ? ["flowRead", "claim"] : ["settle"]);
    expect(totalCommands(work), `step ${i} (${call}): ${JSON.stringify(work.commands)}`).toBeLessThanOrEqual(CALL_COMMANDS);
    for (const s of work.scripts) expect(s.args, `step ${i}, ${s.name}`).toBeLessThanOrEqual(s.name === "settle" ? SETTLE_ARGS : CLAIM_ARGS);
  }
}

describe.sequential("flow keys at scale: bounded calls", () => {
  it(`every claim and settle of ${KEYS} keys × 1 job and of one hot key does bounded work, no more than with a tenth of the keys`, { timeout }, async () => {
    await nameScripts(lua);
    const most: Record<string, { commands: number; args: number }> = {};
    for (const [name, n, key] of [
      ["tenthKeys", KEYS / 10, keyOf],
      ["keys", KEYS, keyOf],
      ["hotKey", KEYS, () => "hot"],
    ] as const) {
      const queue = flowQueue();
      // Known shaped, the scripts loaded: every claim is the shaped one's two calls.
      await queue.enqueue({ topic: "steps", payload: 0, flowKey: "warm" });
      await drain(queue, "steps");
      for (let i = 0; i < n; i += 1_000) {
        await queue.enqueueBatch(Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({ topic: "steps", payload: i + j, flowKey: key(i + j) })));
      }
      await stats.fromHere();
      const steps: Array<{ call: "claim" | "settle"; work: StepWork }> = [];
      expect(await drain(queue, "steps", async (call) => void steps.push({ call, work: await stats.workSoFar() }))).toBe(n);
      expectBoundedCalls(steps);
      most[name] = {
        commands: Math.max(...steps.map((s) => totalCommands(s.work))),
        args: Math.max(...steps.flatMap((s) => s.work.scripts.map((c) => c.args))),
      };
    }
    report.mostCommandsACall_tenthKeys = most.tenthKeys!.commands;
    report.mostCommandsACall_keys = most.keys!.commands;
    report.mostCommandsACall_hotKey = most.hotKey!.commands;
    report.mostArgsACall_keys = most.keys!.args;
    // Ten times the keys, not one command or argument more in any call.
    expect(most.keys!.commands).toBeLessThanOrEqual(most.tenthKeys!.commands);
    expect(most.keys!.args).toBeLessThanOrEqual(most.tenthKeys!.args);
  });
});
