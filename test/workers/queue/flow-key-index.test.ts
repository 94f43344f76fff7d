/**
 * The flow keys' index (lua/lib/flow.lua's fkidx): every job of a flow key
 * scheduled or waiting, by key and due time, the caps it counts
 * (maxKeyLength), and listing and bulk cancel by flow key. Random runs of
 * enqueues (some refused at a cap), claims, settles (ack, retry, dead),
 * reaped leases, cancels (by id, by ids, by due window and by key), reschedules, replays
 * and a dropOldest topic's drops for its own cap and its keys', and expiry
 * (some jobs carry an expiresAt, one topic a maxLateness), each seeded
 * (a failure names its seed); after each, every job is read by id and the
 * index must hold exactly the scheduled jobs of each key at their due times,
 * each topic's `dropped` counter the jobs its caps dropped and its `expired`
 * counter the jobs that expired, and its exp set exactly its never-started
 * scheduled jobs with an expiresAt.
 */
import { describe, expect, it } from "vitest";
import { FlowKeyFullError, TopicFullError } from "../../../src/queue/errors.js";
import type { EnqueueInput, ListJobsOptions, ListPosition } from "../../../src/queue/views.js";
import { testQueue } from "./helpers.js";

const T0 = 1_900_000_000_000;
const KEYS = ["k0", "k1", "k2", "k3", "a\u00e9b"];
const TOPICS = ["mix", "ring"];
const RING_CAP = 8;

/** A small seeded generator (mulberry32): a run is replayed by its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

type Run = { queue: ReturnType<typeof testQueue>["queue"]; redis: ReturnType<typeof testQueue>["redis"]; clock: { now: number }; jobs: Map<string, string> };

/** A job of a random kind: a flow key (most), a priority only (the default lane), both, or neither. */
function jobInput(r: ReturnType<typeof random>, topic: string, now: number): EnqueueInput {
  const kind = r.int(6);
  const input: EnqueueInput = { topic, payload: r.int(1_000), delayMs: r.int(3) === 0 ? 0 : r.int(2_000) };
  if (r.int(3) === 0) input.expiresAt = now + input.delayMs! + 1 + r.int(1_500);
  if (kind <= 3) input.flowKey = r.pick(KEYS);
  if (kind === 3 || kind === 4) input.priority = 1 + r.int(9);
  return input;
}

/** One random step of a run. */
async function step(run: Run, r: ReturnType<typeof random>, inflight: Map<string, { id: string; attempt: number; topic: string }>) {
  const { queue, clock, jobs } = run;
  const topic = r.pick(TOPICS);
  const known = [...jobs.keys()];
  const op = r.int(10);
  if (op <= 2) {
    const n = 1 + (op === 2 ? r.int(5) : 0);
    try {
      const made = await queue.enqueueBatch(Array.from({ length: n }, () => jobInput(r, topic, clock.now)));
      for (const m of made) jobs.set(m.id, m.topic);
    } catch (err) {
      // A cap refused the call: nothing of it was stored.
      if (!(err instanceof FlowKeyFullError || err instanceof TopicFullError)) throw err;
    }
  } else if (op === 3) {
    for (const j of (await queue.claim(topic, { max: 1 + r.int(6), leaseMs: 1_000 })).jobs) inflight.set(j.id, { id: j.id, attempt: j.attempt, topic });
  } else if (op === 4 && inflight.size > 0) {
    const j = r.pick([...inflight.values()]);
    inflight.delete(j.id);
    const kind = r.pick(["ack", "retry", "retry", "dead"] as const);
    const outcome = kind === "retry" ? { kind, at: clock.now + r.int(1_500), error: "again" } : kind === "dead" ? { kind, error: "gone" } : { kind };
    await queue.settle(j.topic, [{ id: j.id, attempt: j.attempt, ...outcome }]);
  } else if (op === 5 && known.length > 0) {
    // One by id, some by ids, or a step of a bulk cancel: a due window, a key's jobs, or both.
    const how = r.int(3);
    if (how === 0) await queue.cancel(r.pick(known));
    else if (how === 1) await queue.cancelIds(topic, [r.pick(known), r.pick(known), r.pick(known)]);
    else {
      const from = clock.now + r.int(1_500);
      await queue.cancelWindow(topic, {
        ...(r.int(2) === 0 ? { flowKey: r.pick(KEYS) } : {}),
        ...(r.int(2) === 0 ? { dueFrom: from, dueTo: from + r.int(500) } : {}),
      });
    }
  } else if (op === 6 && known.length > 0) {
    await queue.reschedule(r.pick(known), clock.now + r.int(2_000));
  } else if (op === 7) {
    const { entries } = await queue.deadLetters(topic, { limit: 5 });
    if (entries.length > 0) await queue.replayDeadLetters(topic, { ids: entries.map((l) => l.id), dueAt: clock.now + r.int(500) });
  } else {
    // Time passes: jobs fall due, and leases (1 s) expire for the next claim to reap.
    clock.now += r.int(800);
  }
}

/** Checks the index against every job read by id, and the dropped counters against the jobs dropped. */
async function expectIndexExact(run: Run, seed: number) {
  const { queue, redis, jobs } = run;
  for (const topic of TOPICS) {
    const expected: string[] = [];
    const perKey = new Map<string, number>();
    const expiring: string[] = [];
    let dropped = 0;
    let expired = 0;
    for (const [id, t] of jobs) {
      if (t !== topic) continue;
      const job = await queue.get(id);
      if (job?.state === "dropped") dropped++;
      if (job?.state === "expired") expired++;
      if (job?.state === "scheduled" && job.expiresAt !== undefined && job.history.length === 0) expiring.push(id);
      if (job?.state !== "scheduled" || job.flowKey === undefined) continue;
      expected.push(`${job.flowKey}\n${String(job.dueAt).padStart(15, "0")}\n${id}`);
      perKey.set(job.flowKey, (perKey.get(job.flowKey) ?? 0) + 1);
    }
    const members = await redis.zrange<string[]>(queue.keys.topic(topic).flow.fkidx, 0, -1);
    expect(members.sort(), `seed ${seed}, topic ${topic}: the index`).toEqual(expected.sort());
    expect(await queue.flowKeyLengths(topic, KEYS), `seed ${seed}, topic ${topic}: each key's length`).toEqual(KEYS.map((k) => perKey.get(k) ?? 0));
    expect((await queue.topicStats(topic)).counters.dropped, `seed ${seed}, topic ${topic}: dropped`).toBe(dropped);
    expect((await queue.topicStats(topic)).counters.expired, `seed ${seed}, topic ${topic}: expired`).toBe(expired);
    const exp = await redis.zrange<string[]>(queue.keys.topic(topic).exp, 0, -1);
    expect(exp.sort(), `seed ${seed}, topic ${topic}: the exp set`).toEqual(expiring.sort());
  }
}

describe("the flow keys' index", () => {
  it("after random runs of enqueues, claims, settles, reaping, cancels, reschedules, replays, drops (a topic's, its keys') and expiry, holds exactly each key's scheduled jobs", {
    timeout: 240_000,
  }, async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const clock = { now: T0 };
      const { queue, redis } = testQueue({ clock });
      await queue.configureTopic("mix", { maxAttempts: 3, maxKeyLength: 6, maxLateness: 1_500, flow: { parallelism: 2 } });
      await queue.configureTopic("ring", { maxAttempts: 2, maxLength: RING_CAP, maxKeyLength: 3, overflow: "dropOldest" });
      await queue.setFlowKey("ring", "k1", { maxKeyLength: 2 });
      const run: Run = { queue, redis, clock, jobs: new Map() };
      const r = random(seed);
      const inflight = new Map<string, { id: string; attempt: number; topic: string }>();
      for (let i = 0; i < 160; i++) {
        await step(run, r, inflight);
        if (i % 40 === 39) await expectIndexExact(run, seed);
      }
      // Everything due and reaped (a reaped lease is retried later), then drained: nothing of any key is left in the index.
      for (let round = 0; round < 20; round++) {
        clock.now += 600_000;
        let left = 0;
        for (const topic of TOPICS) {
          for (;;) {
            const { jobs } = await queue.claim(topic, { max: 50, leaseMs: 1_000 });
            if (jobs.length === 0) break;
            await queue.settle(
              topic,
              jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
            );
          }
          const stats = await queue.topicStats(topic);
          left += stats.scheduled + stats.inflight;
        }
        if (left === 0) break;
      }
      await expectIndexExact(run, seed);
      for (const topic of TOPICS) expect(await redis.exists(queue.keys.topic(topic).flow.fkidx), `seed ${seed}`).toBe(0);
      for (const topic of TOPICS) expect(await redis.exists(queue.keys.topic(topic).exp), `seed ${seed}`).toBe(0);
    }
  });

  it("keyed jobs that expire leave every flow set: fdue, fsched, fready and the keys' index", async () => {
    const clock = { now: T0 };
    const { queue, redis } = testQueue({ clock });
    await queue.configureTopic("gone", { flow: { parallelism: 1 } });
    await queue.enqueue({ topic: "gone", payload: 0, flowKey: "a" });
    // Key a at its parallelism: its next job, due, waits for its turn (fready); key b's is not yet due (fsched).
    const [running] = (await queue.claim("gone", { max: 10, leaseMs: 60_000 })).jobs;
    const made = await queue.enqueueBatch([
      { topic: "gone", payload: 1, flowKey: "a", expiresAt: T0 + 1_000 },
      { topic: "gone", payload: 2, flowKey: "b", delayMs: 5_000, expiresAt: T0 + 1_000 },
      { topic: "gone", payload: 3, priority: 3, delayMs: 500, expiresAt: T0 + 1_000 },
    ]);
    expect((await queue.claim("gone", { max: 10, leaseMs: 60_000 })).jobs).toEqual([]);
    const f = queue.keys.topic("gone").flow;
    expect(await redis.zcard(f.fready)).toBe(1);
    clock.now = T0 + 2_000;
    expect((await queue.claim("gone", { max: 10, leaseMs: 60_000 })).jobs).toEqual([]);
    for (const m of made) expect((await queue.get(m.id))?.state).toBe("expired");
    for (const key of [f.fdue, f.fsched, f.fready, f.fkidx, queue.keys.topic("gone").exp]) expect(await redis.zcard(key), key).toBe(0);
    expect(await queue.flowKeyLengths("gone", ["a", "b"])).toEqual([0, 0]);
    expect((await queue.topicStats("gone")).counters).toMatchObject({ expired: 3, dispatched: 1 });
    expect((await queue.get(running!.id))?.state).toBe("inflight");
  });

  it("a purge drops the keyed jobs through their keys' index, and a deleted topic leaves none", async () => {
    const { queue, redis } = testQueue();
    await queue.enqueueBatch(Array.from({ length: 30 }, (_, i) => ({ topic: "purged", payload: i, flowKey: `k${i % 3}`, delayMs: 60_000 })));
    expect(await queue.flowKeyLengths("purged", ["k0", "k1", "k2"])).toEqual([10, 10, 10]);
    expect(await queue.deleteTopic("purged", { purge: true })).toMatchObject({ result: "deleted", purged: { scheduled: 30 } });
    expect(await redis.exists(queue.keys.topic("purged").flow.fkidx)).toBe(0);
  });
});

describe("maxKeyLength", () => {
  it("dropOldest keeps each key's newest jobs by due time: its oldest end dropped, counted, other keys untouched", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.configureTopic("keep", { maxKeyLength: 3, overflow: "dropOldest" });
    // Due times out of enqueue order: the key's oldest are the earliest due.
    const dues = [50, 10, 40, 20, 30, 60];
    const made = [];
    for (const [i, d] of dues.entries()) made.push(await queue.enqueue({ topic: "keep", payload: i, flowKey: "a", runAt: T0 + 1_000 + d }));
    await queue.enqueue({ topic: "keep", payload: "b", flowKey: "b", runAt: T0 + 1 });
    const state = async (id: string) => (await queue.get(id))!.state;
    expect(await Promise.all(made.map((m) => state(m.id)))).toEqual(["scheduled", "dropped", "scheduled", "dropped", "dropped", "scheduled"]);
    expect(await queue.flowKeyLengths("keep", ["a", "b"])).toEqual([3, 1]);
    expect((await queue.topicStats("keep")).counters.dropped).toBe(3);
    const dropped = await queue.get(made[1]!.id);
    expect(dropped?.history.at(-1)).toMatchObject({ outcome: "dropped" });
    // More than the cap in one call is refused whole.
    await expect(queue.enqueueBatch(Array.from({ length: 4 }, () => ({ topic: "keep", payload: 0, flowKey: "a" })))).rejects.toBeInstanceOf(FlowKeyFullError);
    expect(await queue.flowKeyLengths("keep", ["a"])).toEqual([3]);
  });

  it("a key's own maxKeyLength holds on a topic without one, from the next enqueue of the isolate that set it", async () => {
    const { queue } = testQueue();
    await queue.enqueue({ topic: "own", payload: 0, flowKey: "x" });
    await queue.enqueue({ topic: "own", payload: 1, flowKey: "x" });
    await queue.setFlowKey("own", "x", { maxKeyLength: 2 });
    await expect(queue.enqueue({ topic: "own", payload: 2, flowKey: "x" })).rejects.toMatchObject({ name: "FlowKeyFullError", pending: 2, maxKeyLength: 2 });
    await queue.enqueue({ topic: "own", payload: 3, flowKey: "y" });
    expect(await queue.flowKeyLengths("own", ["x", "y"])).toEqual([2, 1]);
  });
});

describe("listing and cancelling by flow key", () => {
  /** Every page of a listing, `limit` a page. */
  async function pages(queue: ReturnType<typeof testQueue>["queue"], topic: string, options: Omit<ListJobsOptions, "after">) {
    const seen: string[] = [];
    let after: ListPosition | undefined;
    for (let page = 0; page < 100; page++) {
      const { jobs, next } = await queue.listJobs(topic, { ...options, ...(after ? { after } : {}) });
      seen.push(...jobs.map((j) => j.id));
      if (!next) return seen;
      after = next;
    }
    throw new Error("the listing did not end");
  }

  it("a key's scheduled jobs page in due order, exactly, within a due window; in flight, the pages are filtered by the key", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const made: Array<{ id: string; dueAt: number; key: string | undefined }> = [];
    for (let i = 0; i < 60; i++) {
      const key = i % 5 === 0 ? undefined : `k${i % 3}`;
      const job = await queue.enqueue({ topic: "lk", payload: i, runAt: T0 + 1_000 + ((i * 37) % 11) * 100, ...(key ? { flowKey: key } : {}) });
      made.push({ id: job.id, dueAt: job.dueAt!, key });
    }
    const order = (xs: typeof made) => [...xs].sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : 1)).map((j) => j.id);
    expect(await pages(queue, "lk", { state: "scheduled", limit: 4, flowKey: "k1" })).toEqual(order(made.filter((j) => j.key === "k1")));
    const window = { from: T0 + 1_300, to: T0 + 1_700 };
    expect(await pages(queue, "lk", { state: "scheduled", limit: 3, flowKey: "k2", ...window })).toEqual(
      order(made.filter((j) => j.key === "k2" && j.dueAt >= window.from && j.dueAt <= window.to)),
    );
    // A page's position holds when its job leaves and others arrive before it: nothing repeats or is skipped.
    const first = await queue.listJobs("lk", { state: "scheduled", limit: 5, flowKey: "k0" });
    await queue.cancel(first.jobs.at(-1)!.id);
    await queue.enqueue({ topic: "lk", payload: "early", flowKey: "k0", runAt: T0 + 1_000 });
    const rest = await pages(queue, "lk", { state: "scheduled", limit: 5, flowKey: "k0" });
    const after = first.next!;
    const following = (await queue.listJobs("lk", { state: "scheduled", limit: 100, flowKey: "k0", after })).jobs.map((j) => j.id);
    expect(following).toEqual(order(made.filter((j) => j.key === "k0")).filter((id) => rest.includes(id) && !first.jobs.some((f) => f.id === id)));
    // In flight: only the key's jobs, the pages filtered.
    clock.now = T0 + 5_000;
    const taken = (await queue.claim("lk", { max: 100, leaseMs: 60_000 })).jobs;
    const flying = await pages(queue, "lk", { state: "inflight", limit: 7, flowKey: "k1" });
    expect(flying.sort()).toEqual(
      taken
        .filter((j) => j.record.flowKey === "k1")
        .map((j) => j.id)
        .sort(),
    );
  });

  it("a bulk cancel by due window reaches keyed jobs as well as plain ones; by flow key it cancels that key's only", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    const jobs = await queue.enqueueBatch(
      Array.from({ length: 40 }, (_, i) => ({ topic: "bc", payload: i, runAt: T0 + 1_000 + i * 10, ...(i % 4 === 0 ? {} : { flowKey: `k${i % 2}` }) })),
    );
    const state = async (id: string) => (await queue.get(id))!.state;
    // The window [T0+1100, T0+1190]: jobs 10..19, plain and keyed.
    let step = await queue.cancelWindow("bc", { dueFrom: T0 + 1_100, dueTo: T0 + 1_190 });
    while (step.next) step = await queue.cancelWindow("bc", { dueFrom: T0 + 1_100, dueTo: T0 + 1_190, after: step.next });
    const states = await Promise.all(jobs.map((j) => state(j.id)));
    expect(states.map((st, i) => (st === "cancelled") === (i >= 10 && i < 20))).toEqual(jobs.map(() => true));
    // Key k1's jobs from T0+1300 on, by flow key and window; then every job of k0.
    await queue.cancelWindow("bc", { flowKey: "k1", dueFrom: T0 + 1_300 });
    await queue.cancelWindow("bc", { flowKey: "k0" });
    const after = await Promise.all(jobs.map((j) => state(j.id)));
    const expected = jobs.map((_, i) => {
      if (i >= 10 && i < 20) return "cancelled";
      if (i % 4 === 0) return "scheduled";
      if (i % 2 === 0) return "cancelled";
      return i * 10 + 1_000 >= 1_300 ? "cancelled" : "scheduled";
    });
    expect(after).toEqual(expected);
    expect(await queue.flowKeyLengths("bc", ["k0", "k1"])).toEqual([0, expected.filter((st, i) => st === "scheduled" && i % 2 === 1).length]);
    // By ids: a keyed job too.
    const left = jobs.filter((_, i) => expected[i] === "scheduled" && i % 2 === 1).map((j) => j.id);
    expect(await queue.cancelIds("bc", left)).toMatchObject({ cancelled: left.length, notScheduled: 0 });
    expect(await queue.flowKeyLengths("bc", ["k1"])).toEqual([0]);
    // None of them is ever claimed.
    clock.now = T0 + 10_000;
    const taken = (await queue.claim("bc", { max: 100, leaseMs: 60_000 })).jobs.map((j) => j.id);
    expect(taken.sort()).toEqual(
      jobs
        .filter((_, i) => i % 4 === 0 && !(i >= 10 && i < 20))
        .map((j) => j.id)
        .sort(),
    );
  });
});
