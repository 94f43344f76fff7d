import { describe, expect, it } from "vitest";
import type { ClaimedJob } from "../../../src/queue/queue.js";
import { shapedTopics } from "../../../src/queue/shaped-topics.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;
const LEASE = 600_000;

/**
 * Claims until `n` jobs were taken (or a claim takes none), in order, a
 * millisecond apart: a key served goes behind the keys waiting, a moment
 * after the claim that served it.
 */
async function claimAll(
  queue: ReturnType<typeof testQueue>["queue"],
  clock: { now: number },
  topic: string,
  max: number,
  n = Number.POSITIVE_INFINITY,
): Promise<ClaimedJob[]> {
  const out: ClaimedJob[] = [];
  while (out.length < n) {
    clock.now += 1;
    const { jobs } = await queue.claim(topic, { max, leaseMs: LEASE });
    if (jobs.length === 0) break;
    out.push(...jobs);
  }
  return out;
}

const keyOf = (j: ClaimedJob) => j.record.flowKey;

describe("flow keys: turns", () => {
  it("one hot key of 1,000 jobs and 100 cold keys of one, all due together, chunk 100: every cold job among the first 101 claimed", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    // The hot key sorts first, so it is first in every tie.
    await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "fair", payload: i, flowKey: "a-hot", runAt: T0 + 1_000 })));
    await queue.enqueueBatch(
      Array.from({ length: 100 }, (_, i) => ({ topic: "fair", payload: i, flowKey: `cold-${String(i).padStart(3, "0")}`, runAt: T0 + 1_000 })),
    );
    clock.now = T0 + 1_000;
    const taken = await claimAll(queue, clock, "fair", 100, 300);
    const firstCold = taken.slice(0, 101).filter((j) => keyOf(j) !== "a-hot");
    expect(firstCold).toHaveLength(100);
    // Then the hot key alone: the rest of its jobs, one turn after another.
    const rest = await claimAll(queue, clock, "fair", 100);
    expect(taken.length + rest.length).toBe(1_100);
    expect(new Set([...taken, ...rest].map((j) => j.id)).size).toBe(1_100);
    expect(await queue.topicStats("fair")).toMatchObject({ scheduled: 0, inflight: 1_100 });
  });

  it("a key just served goes behind every key still waiting; a key newly ready does not jump the queue", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("turns", { concurrency: 1_000 });
    for (const key of ["a", "b", "c"]) await queue.enqueueBatch(Array.from({ length: 3 }, (_, i) => ({ topic: "turns", payload: i, flowKey: key })));
    const order: Array<string | undefined> = [];
    for (const j of await claimAll(queue, clock, "turns", 1, 4)) order.push(keyOf(j));
    // d becomes ready after a, b, c were waiting: it comes after them, once.
    await queue.enqueue({ topic: "turns", payload: 0, flowKey: "d" });
    clock.now += 1;
    for (const j of await claimAll(queue, clock, "turns", 1)) order.push(keyOf(j));
    expect(order).toEqual(["a", "b", "c", "a", "b", "c", "d", "a", "b", "c"]);
  });

  it("weights 3:1 between keys start jobs 3:1 under contention", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("weights", { flow: { weight: 1 } });
    await queue.setFlowKey("weights", "heavy", { weight: 3 });
    await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "weights", payload: i, flowKey: "heavy" })));
    await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "weights", payload: i, flowKey: "light" })));
    // Contention: each claim takes 10 of the 2,000 due jobs.
    const taken = await claimAll(queue, clock, "weights", 10, 400);
    const heavy = taken.filter((j) => keyOf(j) === "heavy").length;
    const light = taken.filter((j) => keyOf(j) === "light").length;
    expect(heavy / light).toBeGreaterThanOrEqual(3 * 0.95);
    expect(heavy / light).toBeLessThanOrEqual(3 * 1.05);
  });

  it("under the topic's concurrency, a claim that can take one job gives each key a turn of one: keys alternate", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("slot", { concurrency: 1, flow: {} });
    for (const key of ["a", "b"]) await queue.enqueueBatch(Array.from({ length: 4 }, (_, i) => ({ topic: "slot", payload: i, flowKey: key })));
    const order: Array<string | undefined> = [];
    for (let i = 0; i < 8; i++) {
      clock.now += 1;
      // The tick asks for a chunk; the topic's one slot lets it take one job.
      const { jobs } = await queue.claim("slot", { max: 100, leaseMs: LEASE });
      expect(jobs).toHaveLength(1);
      order.push(keyOf(jobs[0]!));
      await queue.settle("slot", [{ id: jobs[0]!.id, attempt: jobs[0]!.attempt, kind: "ack" }]);
    }
    expect(order).toEqual(["a", "b", "a", "b", "a", "b", "a", "b"]);
  });

  it("keys a claim held to fewer jobs did not come to keep their turns, ahead of keys ready later", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("held", { concurrency: 2 });
    for (const key of ["a", "b", "c", "d", "e"]) await queue.enqueue({ topic: "held", payload: key, flowKey: key });
    const order: string[] = [];
    for (let round = 0; round < 4; round++) {
      const taken = await claimAll(queue, clock, "held", 100);
      order.push(...taken.map((j) => String(j.record.payload)));
      if (round === 0) await queue.enqueue({ topic: "held", payload: "f", flowKey: "f" });
      await queue.settle(
        "held",
        taken.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
      );
    }
    expect(order).toEqual(["a", "b", "c", "d", "e", "f"]);
  });

  it("jobs without a key share a default lane that takes its turn beside the keys", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("lane", { flow: {} });
    await queue.enqueueBatch(Array.from({ length: 50 }, (_, i) => ({ topic: "lane", payload: i, flowKey: `k${i}` })));
    await queue.enqueueBatch(Array.from({ length: 50 }, (_, i) => ({ topic: "lane", payload: i })));
    const first = await claimAll(queue, clock, "lane", 10, 20);
    expect(first.filter((j) => keyOf(j) === undefined).length).toBeGreaterThanOrEqual(1);
    const all = [...first, ...(await claimAll(queue, clock, "lane", 100))];
    expect(all).toHaveLength(100);
  });
});

describe("flow keys: limits", () => {
  it("a key's parallelism holds; a settle frees its slot and puts the key back", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("par", { flow: { parallelism: 2 } });
    await queue.enqueueBatch(Array.from({ length: 6 }, (_, i) => ({ topic: "par", payload: i, flowKey: "k" })));
    await queue.enqueueBatch(Array.from({ length: 6 }, (_, i) => ({ topic: "par", payload: i, flowKey: "other" })));
    const first = await claimAll(queue, clock, "par", 100);
    expect(first.filter((j) => keyOf(j) === "k")).toHaveLength(2);
    expect(first.filter((j) => keyOf(j) === "other")).toHaveLength(2);
    const one = first.find((j) => keyOf(j) === "k")!;
    await queue.settle("par", [{ id: one.id, attempt: one.attempt, kind: "ack" }]);
    const next = await claimAll(queue, clock, "par", 100);
    expect(next.map(keyOf)).toEqual(["k"]);
  });

  it("a claim of one job passes over a key whose rate holds it back to one that can start", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("few", { flow: { parallelism: 1, ratePerSec: 1, burst: 1 } });
    await queue.enqueueBatch(Array.from({ length: 2 }, (_, i) => ({ topic: "few", payload: `a${i}`, flowKey: "a", runAt: T0 })));
    await queue.enqueue({ topic: "few", payload: "b", flowKey: "b", runAt: T0 + 20 });
    clock.now = T0 + 10;
    const [a0] = (await queue.claim("few", { max: 1, leaseMs: LEASE })).jobs;
    expect(a0!.record.payload).toBe("a0");
    // Its settle frees "a"'s slot: "a" is back in turn, first, though its rate holds its next job for a second.
    clock.now = T0 + 15;
    await queue.settle("few", [{ id: a0!.id, attempt: a0!.attempt, kind: "ack" }]);
    clock.now = T0 + 30;
    // A claim that may take one job (a topic near its concurrency, a drain's room) takes "b"'s, not nothing.
    expect((await queue.claim("few", { max: 1, leaseMs: LEASE })).jobs.map((j) => j.record.payload)).toEqual(["b"]);
  });

  it("a key's rate holds (GCRA: burst, then one per interval)", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("rate", { flow: { ratePerSec: 5, burst: 5 } });
    await queue.enqueueBatch(Array.from({ length: 100 }, (_, i) => ({ topic: "rate", payload: i, flowKey: "k" })));
    const starts: number[] = [];
    for (let t = 0; t <= 4_000; t += 50) {
      clock.now = T0 + t;
      for (const _ of await claimAll(queue, clock, "rate", 100)) starts.push(t);
    }
    // 5 at once, then one every 200 ms: 5 + 4 s × 5/s.
    expect(starts.length).toBe(5 + 20);
    for (let i = 0; i < starts.length; i++) expect(i + 1).toBeLessThanOrEqual(5 + Math.floor((starts[i]! * 5) / 1000));
  });

  it("a key's rate time holds its next start until it passes, and is forgotten once it has", async () => {
    const clock = { now: T0 };
    const { queue, redis } = testQueue({ clock });
    await queue.configureTopic("forget", { flow: { ratePerSec: 1 } });
    await queue.enqueue({ topic: "forget", payload: 1, flowKey: "k" });
    expect(await claimAll(queue, clock, "forget", 10)).toHaveLength(1);
    clock.now = T0 + 500;
    await queue.enqueue({ topic: "forget", payload: 2, flowKey: "k" });
    expect(await claimAll(queue, clock, "forget", 10)).toHaveLength(0);
    clock.now = T0 + 1_000;
    expect(await claimAll(queue, clock, "forget", 10)).toHaveLength(1);
    // Drained, its time still to pass: kept, and the topic is looked at when it passes.
    const ftat = queue.keys.topic("forget").flow.ftat;
    expect(await redis.exists(ftat)).toBe(1);
    expect(Number(await redis.zscore(queue.keys.topicIndex, "forget"))).toBeLessThanOrEqual(T0 + 2_002);
    clock.now = T0 + 2_002;
    expect(await claimAll(queue, clock, "forget", 10)).toHaveLength(0);
    expect(await redis.exists(ftat)).toBe(0);
  });

  it("a retried job goes back by its key and keeps its key's limits", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("retry", { flow: { parallelism: 1 } });
    const { id } = await queue.enqueue({ topic: "retry", payload: 1, flowKey: "k" });
    const [job] = await claimAll(queue, clock, "retry", 10);
    await queue.settle("retry", [{ id, attempt: job!.attempt, kind: "retry", at: T0 + 500, error: "boom" }]);
    expect(await claimAll(queue, clock, "retry", 10)).toHaveLength(0);
    clock.now = T0 + 500;
    const again = await claimAll(queue, clock, "retry", 10);
    expect(again.map((j) => [j.id, j.attempt])).toEqual([[id, 2]]);
  });
});

describe("flow keys: the tick's next look", () => {
  it("a keyed retry settled with nothing in the calendar brings the topic's look forward to the retry (a topic with a concurrency limit)", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("look", { concurrency: 2, flow: { parallelism: 2 } });
    const { id } = await queue.enqueue({ topic: "look", payload: "now", flowKey: "a" });
    // Another key's job due a minute later: the topic's look until the retry below.
    await queue.enqueue({ topic: "look", payload: "later", flowKey: "b", delayMs: 60_000 });
    const [job] = await claimAll(queue, clock, "look", 10);
    expect(job!.id).toBe(id);
    // The tick settles a topic with a concurrency limit by its earliest due job ("due").
    await queue.settle("look", [{ id, attempt: job!.attempt, kind: "retry", at: clock.now + 1_000, error: "boom" }], { index: "due" });
    const peek = await queue.peek({ now: clock.now + 1_000, limit: 10 });
    expect(peek.due.map((d) => d.topic)).toEqual(["look"]);
  });

  it("the default lane waiting for its turn is looked at at its turn, not at once for its plain job long due", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("lane", { flow: {} });
    await queue.enqueue({ topic: "lane", payload: "plain", runAt: T0 + 100 });
    await queue.enqueue({ topic: "lane", payload: "prioritized", runAt: T0 + 200, priority: 3 });
    await queue.enqueue({ topic: "lane", payload: "keyed", runAt: T0 + 100, flowKey: "k" });
    clock.now = T0 + 1_000;
    // Claims of one job at one instant: the lane's turn, then the key's; the lane's next turn is just after.
    const taken: unknown[] = [];
    for (let i = 0; i < 2; i++) taken.push(...(await queue.claim("lane", { max: 1, leaseMs: LEASE })).jobs.map((j) => j.record.payload));
    expect(taken).toEqual(["prioritized", "keyed"]);
    const third = await queue.claim("lane", { max: 1, leaseMs: LEASE });
    expect(third.jobs).toEqual([]);
    // Not "now": a claim now takes nothing, and the tick would leave the topic alone for a poll.
    expect(third.nextLookAt).toBeGreaterThan(clock.now);
    clock.now = Math.ceil(third.nextLookAt!);
    expect((await queue.claim("lane", { max: 1, leaseMs: LEASE })).jobs.map((j) => j.record.payload)).toEqual(["plain"]);
  });

  it("the default lane joins the turns with its oldest plain job when a prioritized one of it falls due later", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("join", { flow: {} });
    await queue.enqueue({ topic: "join", payload: "a", flowKey: "a", runAt: T0 + 50 });
    await queue.enqueue({ topic: "join", payload: "plain", runAt: T0 + 100 });
    await queue.enqueue({ topic: "join", payload: "k", flowKey: "k", runAt: T0 + 150 });
    await queue.enqueue({ topic: "join", payload: "prioritized", runAt: T0 + 200, priority: 1 });
    clock.now = T0 + 300;
    const one = async () => (await queue.claim("join", { max: 1, leaseMs: LEASE })).jobs.map((j) => j.record.payload);
    expect(await one()).toEqual(["a"]);
    // The lane has waited since +100 (its plain job), "k" since +150: the lane's turn comes first.
    expect(await one()).toEqual(["prioritized"]);
    expect(await one()).toEqual(["k"]);
  });

  it("a shaped topic resumed with only keyed jobs due is looked at again at once", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("resume", { paused: true, flow: { parallelism: 1 } });
    await queue.enqueue({ topic: "resume", payload: 1, flowKey: "k" });
    // The tick's claim of the paused topic drops it from the index.
    clock.now += 1;
    expect(await queue.claim("resume", { max: 10, leaseMs: LEASE })).toMatchObject({ jobs: [], paused: true });
    expect((await queue.peek({ now: clock.now, limit: 10 })).due).toEqual([]);
    await queue.configureTopic("resume", { paused: false });
    expect((await queue.peek({ now: clock.now, limit: 10 })).due.map((d) => d.topic)).toEqual(["resume"]);
  });

  it("a key a claim unparks as it reaps a lease is looked at again at once, though the topic has free slots under its concurrency", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("reap", { concurrency: 3, flow: { parallelism: 1 } });
    await queue.enqueueBatch(Array.from({ length: 2 }, (_, i) => ({ topic: "reap", payload: i, flowKey: "k" })));
    // The first job's lease is short: its worker dies; the key is parked at its parallelism meanwhile.
    const first = await queue.claim("reap", { max: 10, leaseMs: 1_000 });
    expect(first.jobs).toHaveLength(1);
    clock.now = T0 + 1_000;
    // The reap frees the key's slot as this claim runs: it took nothing, and a claim now can.
    const reaping = await queue.claim("reap", { max: 10, leaseMs: LEASE });
    expect(reaping.reaped.retried).toBe(1);
    expect(reaping.nextLookAt).toBe(T0 + 1_000);
    const next = await queue.claim("reap", { max: 10, leaseMs: LEASE });
    expect(next.jobs.map((j) => j.record.payload)).toEqual([1]);
  });
});

describe("priorities", () => {
  it("in a backlog of 10,000 due jobs, priority 9 jobs all start before priority 0 jobs due at the same time", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("prio", { paused: true });
    for (let b = 0; b < 10; b++) {
      await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "prio", payload: b * 1_000 + i, priority: i % 10 === 0 ? 9 : 0, runAt: T0 })));
    }
    await queue.configureTopic("prio", { paused: false });
    const taken = await claimAll(queue, clock, "prio", 100);
    expect(taken).toHaveLength(10_000);
    const lastHigh = taken.findLastIndex((j) => j.record.priority === 9);
    expect(lastHigh).toBe(999);
  });

  it("priority is a bounded head start: a priority-0 job due earlier than the head start is not passed", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("head", { flow: { priorityStepMs: 1_000 } });
    // Priority 9 is a 9 s head start: a priority-0 job due 10 s before goes first, one due 8 s before does not.
    await queue.enqueue({ topic: "head", payload: "old", runAt: T0 });
    await queue.enqueue({ topic: "head", payload: "recent", runAt: T0 + 2_000, priority: 0 });
    await queue.enqueue({ topic: "head", payload: "high", runAt: T0 + 10_000, priority: 9 });
    clock.now = T0 + 10_000;
    const taken = await claimAll(queue, clock, "head", 1);
    expect(taken.map((j) => j.record.payload)).toEqual(["old", "high", "recent"]);
  });
});

describe("keyed jobs by id", () => {
  it("are read, counted, rescheduled and cancelled like plain ones, and a cancelled one is never claimed", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const a = await queue.enqueue({ topic: "byid", payload: "a", flowKey: "k", delayMs: 5_000 });
    const b = await queue.enqueue({ topic: "byid", payload: "b", flowKey: "k", priority: 2 });
    await queue.enqueue({ topic: "byid", payload: "c" });
    expect(await queue.get(a.id)).toMatchObject({ state: "scheduled", dueAt: T0 + 5_000 });
    expect(await queue.topicStats("byid")).toMatchObject({ scheduled: 3 });
    // b waits in its key's turn once a claim has seen it; a is still scheduled.
    await queue.configureTopic("byid", { paused: true });
    await claimAll(queue, clock, "byid", 10);
    expect(await queue.reschedule(a.id, T0 + 1)).toBe("rescheduled");
    expect(await queue.get(a.id)).toMatchObject({ state: "scheduled", dueAt: T0 + 1 });
    expect(await queue.cancel(b.id)).toBe("cancelled");
    expect(await queue.get(b.id)).toMatchObject({ state: "cancelled" });
    expect(await queue.topicStats("byid")).toMatchObject({ scheduled: 2 });
    await queue.configureTopic("byid", { paused: false });
    const taken = await claimAll(queue, clock, "byid", 10);
    expect(taken.map((j) => j.record.payload).sort()).toEqual(["a", "c"]);
    expect(await queue.topicStats("byid")).toMatchObject({ scheduled: 0, inflight: 2 });
  });

  it("a dead keyed job is replayed by its key, under its key's parallelism", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("replay", { maxAttempts: 1, flow: { parallelism: 1 } });
    const { id } = await queue.enqueue({ topic: "replay", payload: 1, flowKey: "k" });
    const [job] = await claimAll(queue, clock, "replay", 10);
    await queue.settle("replay", [{ id, attempt: job!.attempt, kind: "dead", error: "gone" }]);
    await queue.enqueue({ topic: "replay", payload: 2, flowKey: "k" });
    const [other] = await claimAll(queue, clock, "replay", 10);
    expect(await queue.replayDeadLetters("replay", { ids: [id] })).toMatchObject({ replayed: 1 });
    // The key's one slot is taken: the replayed job waits for it.
    expect(await claimAll(queue, clock, "replay", 10)).toHaveLength(0);
    await queue.settle("replay", [{ id: other!.id, attempt: other!.attempt, kind: "ack" }]);
    expect((await claimAll(queue, clock, "replay", 10)).map((j) => j.id)).toEqual([id]);
  });

  it("a purge drops keyed jobs and every key of the topic's flow", async () => {
    const clock = { now: T0 };
    const { queue, redis } = testQueue({ clock });
    await queue.configureTopic("gone", { flow: { parallelism: 1, ratePerSec: 1 } });
    await queue.setFlowKey("gone", "k", { weight: 2 });
    await queue.enqueueBatch(Array.from({ length: 20 }, (_, i) => ({ topic: "gone", payload: i, flowKey: `k${i % 3}`, delayMs: i * 10 })));
    clock.now += 100;
    const taken = await claimAll(queue, clock, "gone", 5);
    await queue.settle(
      "gone",
      taken.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
    );
    expect(await queue.deleteTopic("gone", { purge: true })).toMatchObject({ result: "deleted", purged: { scheduled: 20 - taken.length } });
    // Only the purge mark (for the idempotency window) and the shaped mark stay (see delete-topic.lua).
    expect((await redis.keys(`${queue.keys.prefix}:t:gone:*`)).sort()).toEqual([`${queue.keys.prefix}:t:gone:conf`, `${queue.keys.prefix}:t:gone:purged`]);
    expect(await redis.hgetall(`${queue.keys.prefix}:t:gone:conf`)).toEqual(["shaped", "1", "prioritized", "0"]);
  });

  it("a keyed job pipelined into a topic deleted meanwhile is claimed by an isolate that never knew the topic shaped", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.enqueue({ topic: "again", payload: "first", flowKey: "k" });
    await queue.deleteTopic("again", { purge: true });
    // Registered again by a plain job (the script), then a keyed one: the pipeline, as this isolate knows the topic shaped.
    await queue.enqueue({ topic: "again", payload: "plain" });
    await queue.enqueue({ topic: "again", payload: "keyed", flowKey: "k" });
    // Another isolate's tick: it never learned that the topic is shaped.
    shapedTopics(queue.keys.prefix).clear();
    clock.now += 1;
    const taken = await claimAll(queue, clock, "again", 10);
    expect(taken.map((j) => j.record.payload).sort()).toEqual(["keyed", "plain"]);
  });
});

describe("listing a shaped topic", () => {
  it("pages its keyed and plain scheduled jobs as one set, in due order, a page at a time", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const ids: Array<{ id: string; dueAt: number }> = [];
    for (let i = 0; i < 30; i++) {
      const job = { topic: "list", payload: i, runAt: T0 + 1_000 + (i % 7) * 100, ...(i % 3 === 0 ? {} : { flowKey: `k${i % 4}` }) };
      const { id, dueAt } = await queue.enqueue(job);
      ids.push({ id, dueAt: dueAt! });
    }
    const expected = [...ids].sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : 1)).map((j) => j.id);
    const seen: string[] = [];
    let after: { score: number; id: string } | undefined;
    for (let page = 0; page < 10; page++) {
      const { jobs, next } = await queue.listJobs("list", { state: "scheduled", limit: 7, ...(after ? { after } : {}) });
      seen.push(...jobs.map((j) => j.id));
      if (!next) break;
      after = next;
    }
    expect(seen).toEqual(expected);
  });
});

describe("capped shaped topics", () => {
  it("a cap counts keyed jobs; dropOldest drops the oldest, keyed or not, and a dropped keyed job is never claimed", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("capped", { maxLength: 3, overflow: "dropOldest" });
    const first = await queue.enqueue({ topic: "capped", payload: 1, flowKey: "k", runAt: T0 + 1 });
    await queue.enqueue({ topic: "capped", payload: 2, runAt: T0 + 2 });
    await queue.enqueue({ topic: "capped", payload: 3, flowKey: "j", runAt: T0 + 3 });
    await queue.enqueue({ topic: "capped", payload: 4, flowKey: "k", runAt: T0 + 4 });
    expect(await queue.topicStats("capped")).toMatchObject({ scheduled: 3 });
    expect(await queue.get(first.id)).toMatchObject({ state: "dropped" });
    clock.now = T0 + 10;
    const taken = await claimAll(queue, clock, "capped", 10);
    expect(taken.map((j) => j.record.payload).sort()).toEqual([2, 3, 4]);
    await queue.configureTopic("rejecting", { maxLength: 2 });
    await queue.enqueueBatch([
      { topic: "rejecting", payload: 1, flowKey: "k" },
      { topic: "rejecting", payload: 2, flowKey: "k" },
    ]);
    await expect(queue.enqueue({ topic: "rejecting", payload: 3, flowKey: "x" })).rejects.toThrow(/maxLength|full/i);
    expect(await queue.topicStats("rejecting")).toMatchObject({ scheduled: 2 });
  });
});
