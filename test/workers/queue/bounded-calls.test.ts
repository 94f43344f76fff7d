/**
 * Bulk operations in bounded Redis calls, each call's work counted: bulk
 * cancel of 100,000 scheduled jobs by due window, replay and purge of 10,000
 * dead letters (the scenario in bench/lib/bulk-operations.ts). Runs against a
 * Redis of its own, one test after the other. After every bounded step the
 * test reads which scripts ran and with how many arguments (SLOWLOG,
 * threshold 0) and every command Redis ran inside them (INFO commandstats),
 * so the work of each call is known exactly, whatever the machine's load.
 * How long the calls take is the bench's: `npm run bench:bounded-calls`.
 */
import { describe, expect, inject, it } from "vitest";
import { cancelTheWindow, IN_WINDOW, killTenThousand, purgeTheRest, replayThe503s, scheduleMany, T0 } from "../../../bench/lib/bulk-operations.js";
import { LUA_READ_BATCH } from "../../../src/limits.js";
import { BULK_CANCEL_BATCH, DEAD_BATCH, type ListPosition, Queue } from "../../../src/queue/queue.js";
import * as lua from "../../../src/queue/lua.generated.js";
import { createRedis } from "../../../src/queue/redis.js";
import { freshPrefix } from "./helpers.js";
import { nameScripts, redisMeter, type StepWork, totalCommands } from "./redis-meter.js";

const slow = redisMeter(inject("slowBridgeUrl"), inject("slowBridgeToken"));
const { fromHere: meterFromHere, workSoFar } = slow;

/**
 * The bounds of one step over `batch` jobs or letters, from the scripts'
 * shape: two script calls (the page's listing, then the operation), the
 * metas read LUA_READ_BATCH a call, and a fixed dozen others (the two
 * EVALSHAs, an EVAL after a first NOSCRIPT, one ZMSCORE, MSET, ZADD, ZREM …;
 * a bulk cancel's listing also looks at the keyed jobs' set beside the due
 * set, one EXISTS while it is empty), with two to spare; never more for
 * 100,000 jobs than for 250. A call's
 * arguments are its keys and ARGV: at most four per job (its id, its score,
 * its meta and record keys) and ten others.
 */
function expectBounded(steps: StepWork[], batch: number, operation: string): void {
  for (const [i, step] of steps.entries()) {
    expect(
      step.scripts.map((s) => s.name),
      `step ${i}`,
    ).toEqual([operation === "cancelJobs" ? "listJobs" : "listDead", operation]);
    expect(totalCommands(step), `step ${i}: ${JSON.stringify(step.commands)}`).toBeLessThanOrEqual(Math.ceil(batch / LUA_READ_BATCH) + 15);
    for (const call of step.scripts) expect(call.args, `step ${i}, ${call.name}`).toBeLessThanOrEqual(4 * batch + 10);
  }
}

function slowQueue(clock: { now: number }) {
  const redis = createRedis({ redisUrl: inject("slowBridgeUrl"), redisToken: inject("slowBridgeToken"), redisTimeoutMs: 30_000 });
  return new Queue({ redis, prefix: freshPrefix("bounded"), now: () => clock.now });
}

describe.sequential("bounded calls", () => {
  it("the meter counts the commands inside a script and its arguments (a control, so the bounds below can fail)", async () => {
    await meterFromHere();
    const keys = Array.from({ length: 40 }, (_, i) => `bounded-control:${i}`);
    await slow.command(["EVAL", "for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[1]) end return 1", keys.length, ...keys, "x"]);
    const work = await workSoFar();
    expect(work.commands.set).toBe(40);
    expect(work.commands.eval).toBe(1);
  });

  it("bulk cancel of the 60,000 of 100,000 scheduled jobs in a due window: exactly those, through cursors, each step two calls of bounded work", {
    timeout: 300_000,
  }, async () => {
    await nameScripts(lua);
    const queue = slowQueue({ now: T0 });
    const ids = await scheduleMany(queue);

    await meterFromHere();
    const steps: StepWork[] = [];
    const walked = await cancelTheWindow(queue, async () => {
      steps.push(await workSoFar());
    });
    const cancelled = walked.reduce((n, r) => n + r.cancelled, 0);
    expect(cancelled).toBe(IN_WINDOW);
    expect(walked.every((r) => r.cancelled <= BULK_CANCEL_BATCH)).toBe(true);
    expect(steps).toHaveLength(IN_WINDOW / BULK_CANCEL_BATCH);
    expectBounded(steps, BULK_CANCEL_BATCH, "cancelJobs");
    console.log(
      JSON.stringify({
        bulkCancel60000Of100000: {
          steps: steps.length,
          mostCommandsAStep: Math.max(...steps.map(totalCommands)),
          commandsPerJob: steps.map(totalCommands).reduce((a, b) => a + b, 0) / IN_WINDOW,
        },
      }),
    );

    // Exactly the window is gone: what is left is the 40,000 outside it, in order.
    const left: string[] = [];
    let page: ListPosition | undefined;
    for (;;) {
      const p = await queue.listJobs("many", { state: "scheduled", limit: 1_000, ...(page ? { after: page } : {}) });
      left.push(...p.jobs.map((j) => j.id));
      if (!p.next) break;
      page = p.next;
    }
    expect(left).toEqual([...ids.slice(0, 20_000), ...ids.slice(80_000)]);
    expect(await queue.get(ids[20_000]!)).toMatchObject({ state: "cancelled" });
    expect(await queue.get(ids[79_999]!)).toMatchObject({ state: "cancelled" });
  });

  it("replay and purge of 10,000 dead letters, filtered by failed time and error text, spread: through cursors, each step bounded work", {
    timeout: 300_000,
  }, async () => {
    await nameScripts(lua);
    const clock = { now: T0 };
    const queue = slowQueue(clock);
    expect(await killTenThousand(queue, clock)).toEqual(Array(10).fill(1_000));
    expect((await queue.topicStats("d")).dead).toBe(10_000);

    await meterFromHere();
    const replaySteps: StepWork[] = [];
    const replayed = await replayThe503s(queue, clock, async () => {
      replaySteps.push(await workSoFar());
    });
    expect(replayed.reduce((n, r) => n + r.replayed, 0)).toBe(2_000);
    expect(replayed.every((r) => r.replayed <= DEAD_BATCH)).toBe(true);
    expect(replaySteps).toHaveLength(4_000 / DEAD_BATCH);
    expectBounded(replaySteps, DEAD_BATCH, "replayDead");

    const purgeSteps: StepWork[] = [];
    const purged = await purgeTheRest(queue, async () => {
      purgeSteps.push(await workSoFar());
    });
    expect(purged.reduce((n, r) => n + r.purged, 0)).toBe(8_000);
    expect(purged.every((r) => r.purged <= DEAD_BATCH)).toBe(true);
    expect(purgeSteps).toHaveLength(8_000 / DEAD_BATCH);
    expectBounded(purgeSteps, DEAD_BATCH, "purgeDead");
    const most = (steps: StepWork[]) => Math.max(...steps.map(totalCommands));
    console.log(
      JSON.stringify({
        deadLetters: {
          replaySteps: replaySteps.length,
          mostReplayCommands: most(replaySteps),
          purgeSteps: purgeSteps.length,
          mostPurgeCommands: most(purgeSteps),
        },
      }),
    );

    // The replayed jobs are scheduled within the spread, their letters gone; the rest purged.
    expect((await queue.topicStats("d")).dead).toBe(0);
    const due: number[] = [];
    let page: ListPosition | undefined;
    for (;;) {
      const p = await queue.listJobs("d", { state: "scheduled", limit: 1_000, ...(page ? { after: page } : {}) });
      due.push(...p.jobs.map((j) => j.dueAt!));
      if (!p.next) break;
      page = p.next;
    }
    expect(due).toHaveLength(2_000);
    expect(Math.min(...due)).toBeGreaterThanOrEqual(T0 + 60_000);
    expect(Math.max(...due)).toBeLessThan(T0 + 660_000);
    // Spread, not bunched: every minute of the ten holds some.
    expect(new Set(due.map((t) => Math.floor((t - T0 - 60_000) / 60_000))).size).toBe(10);
  });
});
