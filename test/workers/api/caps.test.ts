/**
 * A topic's maxLength (issue 36): its pending jobs (scheduled and waiting;
 * not those in flight) are capped, and an enqueue past the cap is refused
 * (overflow reject: 429, nothing stored) or stores its jobs and drops the
 * topic's oldest pending ones (overflow dropOldest: state dropped, a history
 * marker, a counter). Through the HTTP API only.
 */
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../../app/worker.js";
import { Delayline, DelaylineRateLimitError } from "../../../src/client/index.js";
import type { Env } from "../../../src/env.js";
import { seededRandom } from "../tick/sim-clock.js";
import { call, isolatedEnv, TOKEN } from "./helpers.js";

const HOUR_MS = 3_600_000;

async function configure(env: Env, topic: string, body: Record<string, unknown>) {
  const res = await call(env, `/v1/topics/${topic}`, { method: "PUT", body });
  expect(res.status).toBe(200);
  return res.body;
}

async function topicView(env: Env, topic: string) {
  const res = await call(env, `/v1/topics/${topic}`);
  expect(res.status).toBe(200);
  return res.body as { scheduled: number; inflight: number; settings: Record<string, unknown>; counters: Record<string, number> };
}

/** The ids of a topic's scheduled jobs, in due order. */
async function scheduledIds(env: Env, topic: string): Promise<string[]> {
  const res = await call(env, `/v1/topics/${topic}/jobs?state=scheduled&limit=1000`);
  expect(res.status).toBe(200);
  expect(res.body.nextCursor).toBeNull();
  return res.body.jobs.map((j: { id: string }) => j.id);
}

const batchOf = (jobs: Array<Record<string, unknown>>) => ({ body: { jobs } });
const idsOf = (res: { body: { jobs: Array<{ id: string }> } }) => res.body.jobs.map((j) => j.id);

/** The value of a /metrics sample for a topic. */
async function metric(env: Env, name: string, topic: string): Promise<number> {
  const text = (await call(env, "/metrics")).text;
  const m = new RegExp(`^${name}\\{topic="${topic}"\\} (\\d+)$`, "m").exec(text);
  if (!m) throw new Error(`no ${name} for ${topic} in /metrics`);
  return Number(m[1]);
}

describe("maxLength with overflow reject", () => {
  it("the 1,001st enqueue into a maxLength 1000 topic gets 429 and stores nothing", async () => {
    const env = isolatedEnv();
    const put = await configure(env, "capped", { maxLength: 1000 });
    expect(put.settings).toMatchObject({ maxLength: 1000, overflow: "reject" });
    const first = await call(env, "/v1/jobs/batch", batchOf(Array.from({ length: 1000 }, (_, i) => ({ topic: "capped", payload: i, delay: "1h" }))));
    expect(first.status).toBe(201);
    const stored = idsOf(first);

    for (const body of [
      { topic: "capped", payload: "one more", delay: "1h" },
      { topic: "capped", payload: "one more, keyed", delay: "1h", idempotencyKey: "k-1001" },
    ]) {
      const res = await call(env, "/v1/jobs", { body });
      expect(res.status).toBe(429);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(res.body).toMatchObject({ type: "urn:delayline:topic-full", status: 429, topic: "capped", pending: 1000, maxLength: 1000 });
      expect(res.body.detail).toContain("holds 1000 pending jobs");
      expect(res.body.detail).toContain("maxLength is 1000");
    }
    const view = await topicView(env, "capped");
    expect(view.scheduled).toBe(1000);
    expect(view.counters.dropped).toBe(0);
    expect(new Set(await scheduledIds(env, "capped"))).toEqual(new Set(stored));

    // The refused keyed job took no key: once room is made, the same key stores a new job.
    expect((await call(env, `/v1/jobs/${stored[0]}`, { method: "DELETE" })).status).toBe(200);
    const retried = await call(env, "/v1/jobs", { body: { topic: "capped", payload: "one more, keyed", delay: "1h", idempotencyKey: "k-1001" } });
    expect(retried.status).toBe(201);
    expect(retried.body.deduplicated).toBe(false);
    expect((await topicView(env, "capped")).scheduled).toBe(1000);
    // A repeat of a stored job's key adds nothing, so a full topic still answers it.
    const repeat = await call(env, "/v1/jobs", { body: { topic: "capped", payload: "again", idempotencyKey: "k-1001" } });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ id: retried.body.id, deduplicated: true });
  });

  it("a batch that would cross a cap stores nothing, on any of its topics, and names the topic", async () => {
    const env = isolatedEnv();
    await configure(env, "small", { maxLength: 5, overflow: "reject" });
    const before = idsOf(await call(env, "/v1/jobs/batch", batchOf([1, 2, 3].map((i) => ({ topic: "small", payload: i, delay: "1h" })))));
    const crossing = await call(
      env,
      "/v1/jobs/batch",
      batchOf([
        { topic: "free", payload: "a", delay: "1h" },
        ...[4, 5, 6].map((i) => ({ topic: "small", payload: i, delay: "1h" })),
        { topic: "free", payload: "b", delay: "1h" },
      ]),
    );
    expect(crossing.status).toBe(429);
    expect(crossing.body).toMatchObject({ type: "urn:delayline:topic-full", topic: "small", pending: 3, maxLength: 5 });
    expect(crossing.body.detail).toContain("the 3 job(s) the request adds would pass it");
    expect(await scheduledIds(env, "small")).toEqual(before);
    expect(await scheduledIds(env, "free")).toEqual([]);
    // Up to the cap is taken.
    expect((await call(env, "/v1/jobs/batch", batchOf([4, 5].map((i) => ({ topic: "small", payload: i, delay: "1h" }))))).status).toBe(201);
    expect((await topicView(env, "small")).scheduled).toBe(5);
  });

  it("jobs in flight do not count, and claims free room for new enqueues", async () => {
    const env = isolatedEnv();
    await configure(env, "pulled", { mode: "pull", maxLength: 3 });
    for (const i of [1, 2, 3]) expect((await call(env, "/v1/jobs", { body: { topic: "pulled", payload: i } })).status).toBe(201);
    expect((await call(env, "/v1/jobs", { body: { topic: "pulled", payload: 4 } })).status).toBe(429);
    const claimed = (await call(env, "/v1/topics/pulled/claim", { body: { max: 2, leaseMs: 60_000 } })).body.jobs as Array<{ id: string; attempt: number }>;
    expect(claimed).toHaveLength(2);
    for (const i of [4, 5]) expect((await call(env, "/v1/jobs", { body: { topic: "pulled", payload: i } })).status).toBe(201);
    const full = await call(env, "/v1/jobs", { body: { topic: "pulled", payload: 6 } });
    expect(full.status).toBe(429);
    expect(full.body).toMatchObject({ pending: 3, maxLength: 3 });
    expect(await topicView(env, "pulled")).toMatchObject({ scheduled: 3, inflight: 2 });
    // Acking frees nothing (the jobs were not pending); the next claim does.
    for (const j of claimed) expect((await call(env, `/v1/jobs/${j.id}/ack`, { body: { attempt: j.attempt } })).status).toBe(200);
    expect((await call(env, "/v1/jobs", { body: { topic: "pulled", payload: 6 } })).status).toBe(429);
    expect((await call(env, "/v1/topics/pulled/claim", { body: { max: 1, leaseMs: 60_000 } })).body.jobs).toHaveLength(1);
    expect((await call(env, "/v1/jobs", { body: { topic: "pulled", payload: 6 } })).status).toBe(201);
  });

  it("a cap set on a topic this isolate already enqueued to holds from the next enqueue; clearing it lifts it", async () => {
    const env = isolatedEnv();
    // Keyless single enqueues of a known uncapped topic take the pipeline: the cap must not be skipped by it.
    for (const i of [1, 2, 3]) expect((await call(env, "/v1/jobs", { body: { topic: "late", payload: i, delay: "1h" } })).status).toBe(201);
    await configure(env, "late", { maxLength: 3 });
    expect((await call(env, "/v1/jobs", { body: { topic: "late", payload: 4, delay: "1h" } })).status).toBe(429);
    expect((await call(env, "/v1/jobs", { body: { topic: "late", payload: 4, delay: "1h" } })).status).toBe(429);
    const cleared = await configure(env, "late", { maxLength: null });
    expect(cleared.settings.maxLength).toBeUndefined();
    expect((await call(env, "/v1/jobs", { body: { topic: "late", payload: 4, delay: "1h" } })).status).toBe(201);
    expect((await call(env, "/v1/jobs", { body: { topic: "late", payload: 5, delay: "1h" } })).status).toBe(201);
    expect((await topicView(env, "late")).scheduled).toBe(5);
  });

  it("webhook ingest is refused the same way; the client surfaces the 429 with its type and does not retry it", async () => {
    const env = isolatedEnv();
    await configure(env, "hooked", { maxLength: 1 });
    expect((await call(env, "/v1/hooks/hooked", { raw: '{"n":1}', headers: { "content-type": "application/json" } })).status).toBe(202);
    const hook = await call(env, "/v1/hooks/hooked", { raw: '{"n":2}', headers: { "content-type": "application/json" } });
    expect(hook.status).toBe(429);
    expect(hook.body).toMatchObject({ type: "urn:delayline:topic-full", topic: "hooked", pending: 1, maxLength: 1 });

    let requests = 0;
    const dl = new Delayline({
      baseUrl: "http://delayline.test",
      token: TOKEN,
      fetch: (r) => {
        requests++;
        return worker.fetch(r, env, createExecutionContext());
      },
    });
    // Keyed (the client gives every enqueue a key), so a 429 from anything else would be retried.
    const err = await dl.jobs.enqueue({ topic: "hooked", payload: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DelaylineRateLimitError);
    expect((err as DelaylineRateLimitError).type).toBe("urn:delayline:topic-full");
    expect((err as DelaylineRateLimitError).problem).toMatchObject({ topic: "hooked", pending: 1, maxLength: 1 });
    expect((err as DelaylineRateLimitError).attempts).toBe(1);
    expect(requests).toBe(1);
    expect((await dl.topics.get("hooked")).scheduled).toBe(1);
  });

  it("refuses settings out of range with 422", async () => {
    const env = isolatedEnv();
    for (const body of [{ maxLength: 0 }, { maxLength: 1.5 }, { maxLength: 1_000_001 }, { overflow: "dropNewest" }]) {
      expect((await call(env, "/v1/topics/t", { method: "PUT", body })).status).toBe(422);
    }
  });
});

describe("maxLength with overflow dropOldest", () => {
  it("keeps the newest N: the earliest-due pending jobs end dropped, with a history marker, counted", async () => {
    const env = isolatedEnv();
    const put = await configure(env, "ring", { maxLength: 5, overflow: "dropOldest" });
    expect(put.settings).toMatchObject({ maxLength: 5, overflow: "dropOldest" });
    // Due an hour apart, in enqueue order.
    const at = (i: number) => new Date(Date.now() + (i + 1) * HOUR_MS).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call(env, "/v1/jobs", { body: { topic: "ring", payload: i, runAt: at(i) } })).body.id);
    const more = await call(env, "/v1/jobs/batch", batchOf([5, 6, 7].map((i) => ({ topic: "ring", payload: i, runAt: at(i) }))));
    expect(more.status).toBe(201);
    ids.push(...idsOf(more));
    const single = await call(env, "/v1/jobs", { body: { topic: "ring", payload: 8, runAt: at(8) } });
    expect(single.status).toBe(201);
    ids.push(single.body.id);

    expect(await scheduledIds(env, "ring")).toEqual(ids.slice(4));
    for (const id of ids.slice(0, 4)) {
      const job = (await call(env, `/v1/jobs/${id}`)).body;
      expect(job).toMatchObject({ id, state: "dropped", dueAt: null, attempts: 0, finishedAt: expect.any(String) });
      expect(job.history).toEqual([{ attempt: 0, run: 1, startedAt: job.finishedAt, durationMs: null, outcome: "dropped" }]);
    }
    const view = await topicView(env, "ring");
    expect(view.scheduled).toBe(5);
    expect(view.counters.dropped).toBe(4);
    expect(await metric(env, "delayline_jobs_dropped_total", "ring")).toBe(4);
    const stats = (await call(env, "/v1/stats")).body.topics.find((t: { topic: string }) => t.topic === "ring");
    expect(stats.counters.dropped).toBe(4);
  });

  it("drops by due time, ties in id order, never the request's own jobs; keeps a dropped job's attempts and history", async () => {
    const env = isolatedEnv();
    await configure(env, "ring", { mode: "pull", maxLength: 3, overflow: "dropOldest", backoff: { type: "fixed", delay: 0 } });
    // One job tried and back for a retry: its attempts and history stay when it is dropped.
    const tried = (await call(env, "/v1/jobs", { body: { topic: "ring", payload: "tried" } })).body.id as string;
    const claim = (await call(env, "/v1/topics/ring/claim", { body: { max: 1 } })).body.jobs[0];
    expect((await call(env, `/v1/jobs/${tried}/nack`, { body: { attempt: claim.attempt, error: "busy" } })).body.state).toBe("scheduled");
    const same = new Date(Date.now() + HOUR_MS).toISOString();
    const later = idsOf(await call(env, "/v1/jobs/batch", batchOf([1, 2].map((i) => ({ topic: "ring", payload: i, runAt: same })))));
    // Due before every job there: kept all the same, as the request's own.
    const early = (await call(env, "/v1/jobs", { body: { topic: "ring", payload: "early" } })).body.id as string;
    expect(new Set(await scheduledIds(env, "ring"))).toEqual(new Set([...later, early]));
    const dropped = (await call(env, `/v1/jobs/${tried}`)).body;
    expect(dropped).toMatchObject({ state: "dropped", attempts: 1, lastError: "busy" });
    expect(dropped.history.map((h: { outcome: string }) => h.outcome)).toEqual(["retry", "dropped"]);
    // The earliest due goes next, then of two due at once the first enqueued.
    const last = new Date(Date.now() + 2 * HOUR_MS).toISOString();
    await call(env, "/v1/jobs", { body: { topic: "ring", payload: "next", runAt: last } });
    expect((await call(env, `/v1/jobs/${early}`)).body.state).toBe("dropped");
    await call(env, "/v1/jobs", { body: { topic: "ring", payload: "last", runAt: last } });
    expect((await call(env, `/v1/jobs/${later[0]}`)).body.state).toBe("dropped");
    expect((await call(env, `/v1/jobs/${later[1]}`)).body.state).toBe("scheduled");
    expect((await topicView(env, "ring")).counters.dropped).toBe(3);
  });

  it("a request adding more jobs than maxLength is refused with 429, nothing stored", async () => {
    const env = isolatedEnv();
    await configure(env, "ring", { maxLength: 2, overflow: "dropOldest" });
    const kept = idsOf(await call(env, "/v1/jobs/batch", batchOf([1, 2].map((i) => ({ topic: "ring", payload: i, delay: "1h" })))));
    const res = await call(env, "/v1/jobs/batch", batchOf([3, 4, 5].map((i) => ({ topic: "ring", payload: i, delay: "1h" }))));
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ type: "urn:delayline:topic-full", topic: "ring", maxLength: 2 });
    expect(res.body.detail).toContain("adds 3 jobs to topic ring, more than its maxLength of 2");
    expect(await scheduledIds(env, "ring")).toEqual(kept);
    expect((await topicView(env, "ring")).counters.dropped).toBe(0);
  });

  it("concurrent enqueues keep the cap: the topic holds maxLength jobs, and every other job ended dropped and counted", async () => {
    const env = isolatedEnv();
    // A cap above what all of them drop: each enqueue is stored at its first or second read of the oldest jobs.
    await configure(env, "busy", { maxLength: 40, overflow: "dropOldest" });
    const at = (i: number) => new Date(Date.now() + HOUR_MS + i * 1_000).toISOString();
    const requests = Array.from({ length: 40 }, (_, i) =>
      i % 4 === 0
        ? call(env, "/v1/jobs/batch", batchOf([0, 1, 2].map((j) => ({ topic: "busy", payload: [i, j], runAt: at(i * 3 + j) }))))
        : call(env, "/v1/jobs", { body: { topic: "busy", payload: [i], runAt: at(i * 3) } }),
    );
    const answers = await Promise.all(requests);
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(201);
    const all = answers.flatMap((a) => (a.body.jobs ? idsOf(a) : [a.body.id as string]));
    expect(all).toHaveLength(60);
    const states = await Promise.all(all.map(async (id) => [id, (await call(env, `/v1/jobs/${id}`)).body.state as string] as const));
    const kept = await scheduledIds(env, "busy");
    expect(kept).toHaveLength(40);
    expect(new Set(states.filter(([, s]) => s === "scheduled").map(([id]) => id))).toEqual(new Set(kept));
    expect(states.filter(([, s]) => s === "dropped")).toHaveLength(20);
    expect((await topicView(env, "busy")).counters.dropped).toBe(20);
  });
});

describe("a randomized run against a dropOldest and a reject topic", () => {
  interface Pending {
    id: string;
    dueAt: string;
  }

  it("20 rounds of enqueues, batches, claims, acks and cancels: every answer as predicted, the pending count within the cap, the counter the dropped jobs", async () => {
    const env = isolatedEnv();
    const random = seededRandom(36);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const CAP = 6;
    const topics = { ring: "dropOldest", gate: "reject" } as const;
    type Topic = keyof typeof topics;
    for (const [topic, overflow] of Object.entries(topics)) await configure(env, topic, { mode: "pull", maxLength: CAP, overflow });

    // The model: each topic's pending jobs, the jobs in flight, the keys stored, the jobs dropped.
    const pending: Record<Topic, Pending[]> = { ring: [], gate: [] };
    const inflight: Array<{ id: string; attempt: number }> = [];
    // Idempotency keys are a topic's own: by topic and key.
    const keys = new Map<string, string>();
    const keyOf = (j: { topic: Topic; key?: string }) => `${j.topic} ${j.key}`;
    const dropped = new Set<string>();
    const everyId = new Set<string>();
    let refused = 0;
    const byAge = (a: Pending, b: Pending) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

    /** Enqueues `jobs` (one alone, or a batch) and checks the answer against the model's prediction. */
    async function enqueue(jobs: Array<{ topic: Topic; key?: string; now: boolean }>, asBatch: boolean) {
      const adding: Record<Topic, number> = { ring: 0, gate: 0 };
      const seenKeys = new Set<string>();
      for (const j of jobs) {
        const repeat = j.key !== undefined && (keys.has(keyOf(j)) || seenKeys.has(keyOf(j)));
        if (j.key !== undefined) seenKeys.add(keyOf(j));
        if (!repeat) adding[j.topic]++;
      }
      const refusing = (Object.keys(topics) as Topic[]).filter((t) =>
        topics[t] === "reject" ? adding[t] > 0 && pending[t].length + adding[t] > CAP : adding[t] > CAP,
      );
      const bodies = jobs.map((j) => ({
        topic: j.topic,
        payload: null,
        ...(j.now ? {} : { delay: `${1 + Math.floor(random() * 100)}m` }),
        ...(j.key === undefined ? {} : { idempotencyKey: j.key }),
      }));
      const res = asBatch ? await call(env, "/v1/jobs/batch", batchOf(bodies)) : await call(env, "/v1/jobs", { body: bodies[0] });
      if (refusing.length > 0) {
        expect(res.status, JSON.stringify(res.body)).toBe(429);
        expect(refusing).toContain(res.body.topic);
        refused++;
        return;
      }
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
      const answers: Array<{ id: string; dueAt: string | null; deduplicated: boolean }> = asBatch ? res.body.jobs : [res.body];
      const before: Record<Topic, Pending[]> = { ring: [...pending.ring], gate: [...pending.gate] };
      for (const [i, a] of answers.entries()) {
        const j = jobs[i]!;
        if (j.key !== undefined && keys.has(keyOf(j))) {
          expect(a).toMatchObject({ id: keys.get(keyOf(j)), deduplicated: true });
          continue;
        }
        expect(a.deduplicated).toBe(false);
        if (j.key !== undefined) keys.set(keyOf(j), a.id);
        everyId.add(a.id);
        pending[j.topic].push({ id: a.id, dueAt: a.dueAt! });
      }
      // dropOldest: the oldest of those pending before, as many as bring the topic to the cap, at most as many as were added.
      const over = Math.min(before.ring.length + adding.ring - CAP, adding.ring);
      if (over > 0) {
        const gone = new Set(
          before.ring
            .sort(byAge)
            .slice(0, over)
            .map((p) => p.id),
        );
        for (const id of gone) dropped.add(id);
        pending.ring = pending.ring.filter((p) => !gone.has(p.id));
      }
    }

    const key = (topic: Topic) => {
      const used = [...keys.keys()].filter((k) => k.startsWith(`${topic} `)).map((k) => k.slice(topic.length + 1));
      return random() < 0.3 && used.length > 0 ? pick(used) : `k${Math.floor(random() * 1e9)}`;
    };
    const newJob = () => {
      const topic = pick(["ring", "gate"] as const);
      return { topic, now: random() < 0.6, ...(random() < 0.4 ? { key: key(topic) } : {}) };
    };

    for (let round = 0; round < 20; round++) {
      for (let step = 0; step < 8; step++) {
        const op = random();
        if (op < 0.35) await enqueue([newJob()], false);
        else if (op < 0.55) await enqueue(Array.from({ length: 1 + Math.floor(random() * 5) }, newJob), true);
        else if (op < 0.7) {
          const topic = pick(["ring", "gate"] as const);
          const claim = await call(env, `/v1/topics/${topic}/claim`, { body: { max: 1 + Math.floor(random() * 3), leaseMs: 600_000 } });
          expect(claim.status).toBe(200);
          for (const j of claim.body.jobs as Array<{ id: string; attempt: number }>) {
            const at = pending[topic].findIndex((p) => p.id === j.id);
            expect(at, `claimed ${j.id}, which the model has not pending`).toBeGreaterThanOrEqual(0);
            pending[topic].splice(at, 1);
            inflight.push(j);
          }
        } else if (op < 0.85 && inflight.length > 0) {
          const j = inflight.splice(Math.floor(random() * inflight.length), 1)[0]!;
          expect((await call(env, `/v1/jobs/${j.id}/ack`, { body: { attempt: j.attempt } })).status).toBe(200);
        } else {
          const topic = pick(["ring", "gate"] as const);
          if (pending[topic].length === 0) continue;
          const victim = pending[topic].splice(Math.floor(random() * pending[topic].length), 1)[0]!;
          expect((await call(env, `/v1/jobs/${victim.id}`, { method: "DELETE" })).status).toBe(200);
        }
      }
      for (const topic of Object.keys(topics) as Topic[]) {
        const view = await topicView(env, topic);
        expect(view.scheduled, `${topic} after round ${round}`).toBe(pending[topic].length);
        expect(view.scheduled).toBeLessThanOrEqual(CAP);
      }
    }

    // The run did reach both caps.
    expect(refused).toBeGreaterThan(0);
    expect(dropped.size).toBeGreaterThan(0);
    for (const topic of Object.keys(topics) as Topic[]) {
      expect(new Set(await scheduledIds(env, topic))).toEqual(new Set(pending[topic].map((p) => p.id)));
    }
    const states = await Promise.all([...everyId].map(async (id) => [id, (await call(env, `/v1/jobs/${id}`)).body.state as string] as const));
    const inStateDropped = states.filter(([, s]) => s === "dropped").map(([id]) => id);
    expect(new Set(inStateDropped)).toEqual(dropped);
    expect((await topicView(env, "ring")).counters.dropped).toBe(inStateDropped.length);
    expect((await topicView(env, "gate")).counters.dropped).toBe(0);
    expect(await metric(env, "delayline_jobs_dropped_total", "ring")).toBe(inStateDropped.length);
  });
});
