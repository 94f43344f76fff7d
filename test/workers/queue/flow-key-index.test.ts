/**
 * The flow keys' index (lua/lib/flow.lua's fkidx): every job of a flow key
 * scheduled or waiting, by key and due time, and the caps it counts
 * (maxKeyLength). Random runs of enqueues (some refused at a cap), claims,
 * settles (ack, retry, dead), reaped leases, cancels, reschedules, replays
 * and a dropOldest topic's drops for its own cap and its keys', each seeded
 * (a failure names its seed); after each, every job is read by id and the
 * index must hold exactly the scheduled jobs of each key at their due times,
 * and each topic's `dropped` counter the jobs its caps dropped.
 */
import { describe, expect, it } from "vitest";
import { FlowKeyFullError, TopicFullError } from "../../../src/queue/errors.js";
import type { EnqueueInput } from "../../../src/queue/views.js";
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
function jobInput(r: ReturnType<typeof random>, topic: string): EnqueueInput {
  const kind = r.int(6);
  const input: EnqueueInput = { topic, payload: r.int(1_000), delayMs: r.int(3) === 0 ? 0 : r.int(2_000) };
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
      const made = await queue.enqueueBatch(Array.from({ length: n }, () => jobInput(r, topic)));
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
    await queue.cancel(r.pick(known));
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
    let dropped = 0;
    for (const [id, t] of jobs) {
      if (t !== topic) continue;
      const job = await queue.get(id);
      if (job?.state === "dropped") dropped++;
      if (job?.state !== "scheduled" || job.flowKey === undefined) continue;
      expected.push(`${job.flowKey}\n${String(job.dueAt).padStart(15, "0")}\n${id}`);
      perKey.set(job.flowKey, (perKey.get(job.flowKey) ?? 0) + 1);
    }
    const members = await redis.zrange<string[]>(queue.keys.topic(topic).flow.fkidx, 0, -1);
    expect(members.sort(), `seed ${seed}, topic ${topic}: the index`).toEqual(expected.sort());
    expect(await queue.flowKeyLengths(topic, KEYS), `seed ${seed}, topic ${topic}: each key's length`).toEqual(KEYS.map((k) => perKey.get(k) ?? 0));
    expect((await queue.topicStats(topic)).counters.dropped, `seed ${seed}, topic ${topic}: dropped`).toBe(dropped);
  }
}

describe("the flow keys' index", () => {
  it("after random runs of enqueues, claims, settles, reaping, cancels, reschedules, replays and drops (a topic's, its keys'), holds exactly each key's scheduled jobs", {
    timeout: 240_000,
  }, async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const clock = { now: T0 };
      const { queue, redis } = testQueue({ clock });
      await queue.configureTopic("mix", { maxAttempts: 3, maxKeyLength: 6, flow: { parallelism: 2 } });
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
    }
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
