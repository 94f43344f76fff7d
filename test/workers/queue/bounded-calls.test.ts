/**
 * Bulk operations in bounded Redis calls, each call timed: bulk cancel of
 * 100,000 scheduled jobs by due window, replay and purge of 10,000 dead
 * letters. Runs against a Redis of its own, one test after the other, with
 * every call in its SLOWLOG (threshold 0), so the longest call is known.
 */
import { describe, expect, inject, it } from "vitest";
import * as lua from "../../../src/queue/lua.generated.js";
import { BULK_CANCEL_BATCH, DEAD_BATCH, Queue, type ListPosition } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { freshPrefix, killAll } from "./helpers.js";

const T0 = 1_900_000_000_000;
/** The bound issue 15 sets for one Redis call of a bulk operation, µs. */
const CALL_BOUND_US = 20_000;

/** One command over the REST protocol to this test's Redis. */
async function slowRedis(command: Array<string | number>): Promise<unknown> {
  const res = await fetch(inject("slowBridgeUrl"), {
    method: "POST",
    headers: { authorization: `Bearer ${inject("slowBridgeToken")}` },
    body: JSON.stringify(command.map(String)),
  });
  const body = (await res.json()) as { result?: unknown; error?: string };
  if (body.error !== undefined) throw new Error(body.error);
  return body.result;
}

/** Logs every call from now on (SLOWLOG threshold 0), emptied. */
async function timeEveryCall(): Promise<void> {
  await slowRedis(["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
  await slowRedis(["CONFIG", "SET", "slowlog-max-len", "100000"]);
  await slowRedis(["SLOWLOG", "RESET"]);
}

/** SLOWLOG entries: µs and the command. */
async function logged(): Promise<Array<{ micros: number; command: string[] }>> {
  const raw = (await slowRedis(["SLOWLOG", "GET", "100000"])) as Array<[number, number, number, string[]]>;
  return raw.map((e) => ({ micros: e[2], command: e[3] }));
}

/** How long (µs) each logged call of the script with this digest took. */
/**
 * Each EVALSHA of `script` in the SLOWLOG, by the digest Redis knows it by:
 * the bridge takes the first line's `#!lua flags=allow-key-locking` out
 * (Redis 7.0 refuses it), which leaves that line empty. A first EVALSHA,
 * before the bridge has seen the text, goes out with the flagged digest (and
 * Redis answers NOSCRIPT, logged as a call too, the EVAL after it not).
 */
async function scriptCalls(script: { source: string; sha1: string }): Promise<number[]> {
  const stripped = script.source.slice(script.source.indexOf("\n"));
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(stripped));
  const sha1 = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return (await logged())
    .filter((e) => e.command[0]!.toUpperCase() === "EVALSHA" && (e.command[1] === sha1 || e.command[1] === script.sha1))
    .map((e) => e.micros);
}

const summary = (micros: number[]) => ({
  calls: micros.length,
  maxMs: Math.max(...micros) / 1_000,
  meanMs: micros.reduce((a, b) => a + b, 0) / micros.length / 1_000,
});

function slowQueue(clock: { now: number }) {
  const redis = createRedis({ redisUrl: inject("slowBridgeUrl"), redisToken: inject("slowBridgeToken"), redisTimeoutMs: 30_000 });
  return new Queue({ redis, prefix: freshPrefix("bounded"), now: () => clock.now });
}

describe.sequential("bounded calls", () => {
  it("the SLOWLOG times a script's whole run (a control, so the bounds below can fail)", async () => {
    await timeEveryCall();
    await slowRedis([
      "EVAL",
      "local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 30000 return 1",
      0,
    ]);
    expect((await logged()).some((e) => e.command[0]!.toUpperCase() === "EVAL" && e.micros > CALL_BOUND_US)).toBe(true);
  });

  it("bulk cancel of the 60,000 of 100,000 scheduled jobs in a due window: exactly those, through cursors, no call over 20 ms", {
    timeout: 300_000,
  }, async () => {
    const clock = { now: T0 };
    const queue = slowQueue(clock);
    // 100,000 jobs, 10 per due millisecond value: job i is due at T0 + 1,000 + floor(i / 10).
    const ids: string[] = [];
    for (let b = 0; b < 100; b++) {
      const batch = Array.from({ length: 1_000 }, (_, i) => ({
        topic: "many",
        payload: { n: b * 1_000 + i },
        runAt: T0 + 1_000 + Math.floor((b * 1_000 + i) / 10),
      }));
      ids.push(...(await queue.enqueueBatch(batch)).map((r) => r.id));
    }
    // The window holds jobs 20,000 … 79,999.
    const window = { dueFrom: T0 + 3_000, dueTo: T0 + 8_999 };

    await timeEveryCall();
    await slowRedis(["CONFIG", "RESETSTAT"]);
    let cancelled = 0;
    let steps = 0;
    let after: ListPosition | undefined;
    for (;;) {
      const r = await queue.cancelWindow("many", { ...window, ...(after ? { after } : {}) });
      cancelled += r.cancelled;
      steps++;
      if (!r.next) break;
      after = r.next;
    }
    const stats = String(await slowRedis(["INFO", "commandstats"]));
    const calls = await scriptCalls(lua.cancelJobs);

    expect(cancelled).toBe(60_000);
    expect(steps).toBe(60_000 / BULK_CANCEL_BATCH);
    expect(calls).toHaveLength(steps);
    expect(Math.max(...calls)).toBeLessThan(CALL_BOUND_US);
    // Commands as Upstash bills them (those run inside the scripts too), leaving out the metering's own and the bridge's MEMORY USAGE.
    let commands = 0;
    for (const m of stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) if (!/^(config|slowlog|info|memory)/.test(m[1]!)) commands += Number(m[2]);
    console.log(JSON.stringify({ bulkCancel60000Of100000: { ...summary(calls), commandsPerJob: commands / 60_000 } }));

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

  it("replay and purge of 10,000 dead letters, filtered by failed time and error text, spread: through cursors, no call over 20 ms", {
    timeout: 300_000,
  }, async () => {
    const clock = { now: T0 };
    const queue = slowQueue(clock);
    // 10,000 letters failed at T0 + 1 s … T0 + 10 s (1,000 a second), every other one with "HTTP 503".
    for (let s = 1; s <= 10; s++) {
      clock.now = T0 + s * 1_000 - 500;
      await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "d", payload: { n: i, pad: "p".repeat(200) }, maxAttempts: 1 })));
      clock.now = T0 + s * 1_000;
      expect(await killAll(queue, "d", (p) => ((p as { n: number }).n % 2 === 0 ? "HTTP 503: busy" : "HTTP 400: bad"))).toBe(1_000);
    }
    expect((await queue.topicStats("d")).dead).toBe(10_000);

    // Replay the 503s that failed in seconds 3 to 6, spread over 10 minutes from T0 + 60 s.
    await timeEveryCall();
    clock.now = T0 + 20_000;
    let replayed = 0;
    let steps = 0;
    let after: ListPosition | undefined;
    for (;;) {
      const r = await queue.replayDeadLettersStep("d", {
        failedFrom: T0 + 3_000,
        failedTo: T0 + 6_000,
        errorContains: "HTTP 503",
        dueAt: T0 + 60_000,
        spreadMs: 600_000,
        ...(after ? { after } : {}),
      });
      replayed += r.replayed;
      steps++;
      if (!r.next) break;
      after = r.next;
    }
    const replayCalls = await scriptCalls(lua.replayDead);
    expect(replayed).toBe(2_000);
    expect(steps).toBe(4_000 / DEAD_BATCH);
    expect(replayCalls).toHaveLength(steps);

    // Purge the rest: 8,000 letters.
    await timeEveryCall();
    expect(await queue.purgeDeadLetters("d")).toBe(8_000);
    const purgeCalls = await scriptCalls(lua.purgeDead);
    expect(purgeCalls).toHaveLength(Math.ceil(8_000 / DEAD_BATCH));
    expect(Math.max(...replayCalls, ...purgeCalls)).toBeLessThan(CALL_BOUND_US);
    console.log(JSON.stringify({ deadLetters: { replay2000Of4000InWindow: summary(replayCalls), purge8000: summary(purgeCalls) } }));

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
