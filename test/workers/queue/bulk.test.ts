/**
 * Bulk cancel: a due window walked through cursors, or given ids, each Redis
 * call bounded. The 100,000-job run uses a Redis of its own, so its SLOWLOG
 * holds only this test's calls.
 */
import { describe, expect, inject, it } from "vitest";
import { BULK_CANCEL_BATCH, Queue, type ListPosition } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { freshPrefix, testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;

/** One command over the REST protocol to the SLOWLOG test's Redis. */
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

/** SLOWLOG entries (id, start, µs, command) newer than `afterId`. */
async function slowEntries(afterId: number): Promise<Array<{ id: number; micros: number; command: string[] }>> {
  const raw = (await slowRedis(["SLOWLOG", "GET", "100000"])) as Array<[number, number, number, string[]]>;
  return raw.filter((e) => e[0] > afterId).map((e) => ({ id: e[0], micros: e[2], command: e[3] }));
}

/** Cancels a window through every cursor; returns the calls' results. */
async function cancelThrough(queue: Queue, topic: string, window: { dueFrom?: number; dueTo?: number }) {
  const calls: Array<{ cancelled: number; inflight: number }> = [];
  let after: ListPosition | undefined;
  for (;;) {
    const r = await queue.cancelWindow(topic, { ...window, ...(after ? { after } : {}) });
    calls.push(r);
    if (!r.next) return calls;
    after = r.next;
  }
}

describe("bulk cancel", () => {
  it(
    "cancels exactly the 60,000 of 100,000 scheduled jobs in a due window through cursors, no Redis call of it over 20 ms (SLOWLOG)",
    { timeout: 300_000 },
    async () => {
      const redis = createRedis({ redisUrl: inject("slowBridgeUrl"), redisToken: inject("slowBridgeToken"), redisTimeoutMs: 30_000 });
      const queue = new Queue({ redis, prefix: freshPrefix("bulk"), now: () => T0 });
      // 100,000 jobs, 10 per due millisecond value: job i is due at T0 + 1,000 + floor(i / 10).
      const ids: string[] = [];
      for (let b = 0; b < 100; b++) {
        const batch = Array.from({ length: 1_000 }, (_, i) => ({ topic: "many", payload: { n: b * 1_000 + i }, runAt: T0 + 1_000 + Math.floor((b * 1_000 + i) / 10) }));
        ids.push(...(await queue.enqueueBatch(batch)).map((r) => r.id));
      }
      // The window holds jobs 20,000 … 79,999.
      const dueFrom = T0 + 1_000 + 2_000;
      const dueTo = T0 + 1_000 + 7_999;

      await slowRedis(["CONFIG", "SET", "slowlog-log-slower-than", "20000"]);
      await slowRedis(["CONFIG", "SET", "slowlog-max-len", "100000"]);
      const [latest] = (await slowRedis(["SLOWLOG", "GET", "1"])) as Array<[number]>;
      const before = latest ? latest[0] : -1;
      await slowRedis(["CONFIG", "RESETSTAT"]);
      const calls = await cancelThrough(queue, "many", { dueFrom, dueTo });
      const stats = String(await slowRedis(["INFO", "commandstats"]));
      const slow = await slowEntries(before);

      expect(calls.reduce((n, c) => n + c.cancelled, 0)).toBe(60_000);
      expect(calls.length).toBe(60_000 / BULK_CANCEL_BATCH);
      expect(slow.filter((e) => e.command[0]!.toUpperCase().startsWith("EVAL"))).toEqual([]);
      const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(stats);
      // Commands as Upstash bills them (those run inside the scripts too), leaving out the metering's own.
      let commands = 0;
      for (const m of stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) if (!/^(config|slowlog|info)/.test(m[1]!)) commands += Number(m[2]);
      console.log(JSON.stringify({ bulkCancel: { jobs: 60_000, calls: Number(evalsha?.[1]), usecPerCall: Number(evalsha?.[3]), commandsPerJob: commands / 60_000, slowlogEntriesOver20ms: slow.length } }));

      // Exactly the window is gone: what is left is the 40,000 outside it, in order.
      const left: string[] = [];
      let after: ListPosition | undefined;
      for (;;) {
        const page = await queue.listJobs("many", { state: "scheduled", limit: 1_000, ...(after ? { after } : {}) });
        left.push(...page.jobs.map((j) => j.id));
        if (!page.next) break;
        after = page.next;
      }
      expect(left).toEqual([...ids.slice(0, 20_000), ...ids.slice(80_000)]);
      expect(await queue.get(ids[20_000]!)).toMatchObject({ state: "cancelled" });
      expect(await queue.get(ids[79_999]!)).toMatchObject({ state: "cancelled" });

      // The SLOWLOG does catch a script over 20 ms: a control, so the check above can fail.
      await slowRedis(["EVAL", "local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 30000 return 1", 0]);
      expect((await slowEntries(before)).some((e) => e.command[0]!.toUpperCase() === "EVAL" && e.micros > 20_000)).toBe(true);
    },
  );

  it("with large payloads a call stops once it has read about 1 MB of records, and the cursor goes on", async () => {
    const { queue } = testQueue({ clock: { now: T0 } });
    const big = "y".repeat(200_000);
    await queue.enqueueBatch(Array.from({ length: 60 }, (_, i) => ({ topic: "big", payload: { i, big }, runAt: T0 + 1_000 + i })));
    const calls = await cancelThrough(queue, "big", {});
    // 25 records (5 MB) per read: each call reads one batch of them, so 25 jobs a call.
    expect(calls.map((c) => c.cancelled)).toEqual([25, 25, 10]);
    expect((await queue.listJobs("big", { state: "scheduled" })).jobs).toEqual([]);
  });

  it("all: true cancels every scheduled job and leaves jobs in flight, counting them; a job enqueued behind the walk stays", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const flying = await queue.enqueue({ topic: "a", payload: 0 });
    await queue.claim("a", { max: 1, leaseMs: 60_000 });
    const scheduled = await queue.enqueueBatch(Array.from({ length: BULK_CANCEL_BATCH + 100 }, (_, i) => ({ topic: "a", payload: i, runAt: T0 + 10 + i })));
    const first = await queue.cancelWindow("a");
    expect(first).toMatchObject({ cancelled: BULK_CANCEL_BATCH, inflight: 1 });
    // Due before the position the walk reached: not in its way any more.
    const behind = await queue.enqueue({ topic: "a", payload: "behind", runAt: T0 + 10 });
    const second = await queue.cancelWindow("a", { after: first.next! });
    expect(second).toEqual({ cancelled: 100, inflight: 1, next: null });
    expect((await queue.listJobs("a", { state: "scheduled" })).jobs.map((j) => j.id)).toEqual([behind.id]);
    expect((await queue.get(flying.id))!.state).toBe("inflight");
    expect((await queue.get(scheduled[0]!.id))!.state).toBe("cancelled");
  });

  it("given ids: cancels the scheduled ones once each, counts those in flight and those not scheduled; keeps each job's history", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const [flying, retried, plain] = await queue.enqueueBatch([0, 1, 2].map((i) => ({ topic: "i", payload: i })));
    await queue.claim("i", { max: 2, leaseMs: 60_000 });
    await queue.settle("i", [{ id: retried!.id, attempt: 1, kind: "retry", at: T0 + 60_000, error: "later" }]);
    const finished = await queue.enqueue({ topic: "i", payload: 3, runAt: T0 + 5 });
    expect(await queue.cancel(finished.id)).toBe("cancelled");
    const unknown = "i.01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const r = await queue.cancelIds("i", [retried!.id, plain!.id, flying!.id, finished.id, unknown, plain!.id]);
    expect(r).toEqual({ cancelled: 2, inflight: 1, notScheduled: 2 });
    expect(await queue.get(retried!.id)).toMatchObject({ state: "cancelled", attempts: 1, lastError: "later", history: [expect.objectContaining({ outcome: "retry", error: "later" })] });
    expect((await queue.get(plain!.id))!.state).toBe("cancelled");
    expect((await queue.get(flying!.id))!.state).toBe("inflight");
  });
});
