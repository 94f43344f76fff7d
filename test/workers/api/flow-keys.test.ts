import { describe, expect, it } from "vitest";
import { call, isolatedEnv } from "./helpers.js";

const isProblem = (r: { headers: Headers; body: any }, status: number) => {
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  expect(r.body).toMatchObject({ status });
};

type Env = ReturnType<typeof isolatedEnv>;

/** Claims (as a pull consumer) until a claim takes nothing; the jobs' flow keys in order. */
async function pullAll(env: Env, topic: string, max: number): Promise<Array<{ id: string; attempt: number; flowKey?: string }>> {
  const out: Array<{ id: string; attempt: number; flowKey?: string }> = [];
  for (;;) {
    const { status, body } = await call(env, `/v1/topics/${topic}/claim`, { body: { max } });
    expect(status).toBe(200);
    if (body.jobs.length === 0) return out;
    for (const j of body.jobs) out.push({ id: j.id, attempt: j.attempt, flowKey: (await call(env, `/v1/jobs/${j.id}`)).body.flowKey });
  }
}

describe("flow keys over HTTP", () => {
  it("a topic's flow settings and a key's own: PUT, GET, list, DELETE; refused input touches nothing", async () => {
    const env = isolatedEnv();
    const put = await call(env, "/v1/topics/t", { method: "PUT", body: { flow: { parallelism: 2, ratePerSec: 5, burst: 5, priorityStepMs: 1_000 } } });
    expect(put.status).toBe(200);
    expect(put.body.settings.flow).toEqual({ parallelism: 2, ratePerSec: 5, burst: 5, priorityStepMs: 1_000 });
    const key = await call(env, "/v1/topics/t/flow-keys/tenant%20A", { method: "PUT", body: { weight: 3, parallelism: 5 } });
    expect(key.status).toBe(200);
    expect(key.body).toEqual({ topic: "t", key: "tenant A", settings: { weight: 3, parallelism: 5 }, length: 0 });
    expect((await call(env, "/v1/topics/t/flow-keys/tenant%20A")).body.settings).toEqual({ weight: 3, parallelism: 5 });
    expect((await call(env, "/v1/topics/t/flow-keys")).body).toEqual({
      keys: [{ topic: "t", key: "tenant A", settings: { weight: 3, parallelism: 5 }, length: 0 }],
      nextCursor: null,
    });
    isProblem(await call(env, "/v1/topics/t/flow-keys/nobody"), 404);
    expect((await call(env, "/v1/topics/t/flow-keys/tenant%20A", { method: "DELETE" })).status).toBe(204);
    isProblem(await call(env, "/v1/topics/t/flow-keys/tenant%20A", { method: "DELETE" }), 404);
    isProblem(await call(env, "/v1/topics/t/flow-keys/k", { method: "PUT", body: { weight: 0 } }), 422);
    isProblem(await call(env, "/v1/topics/t/flow-keys/k", { method: "PUT", body: { burst: 2, nonsense: 1 } }), 422);
    isProblem(await call(env, "/v1/topics/t", { method: "PUT", body: { flow: { parallelism: 0 } } }), 422);
    // A job's key and priority are checked at the edge: nothing is stored.
    isProblem(await call(env, "/v1/jobs", { body: { topic: "t", flowKey: "a\nb" } }), 422);
    isProblem(await call(env, "/v1/jobs", { body: { topic: "t", flowKey: "é".repeat(101) } }), 422);
    isProblem(await call(env, "/v1/jobs", { body: { topic: "t", flowKey: "" } }), 422);
    isProblem(await call(env, "/v1/jobs", { body: { topic: "t", priority: 10 } }), 422);
    expect((await call(env, "/v1/topics/t")).body.scheduled).toBe(0);
    const job = await call(env, "/v1/jobs", { body: { topic: "t", flowKey: "é".repeat(100), priority: 9 } });
    expect(job.status).toBe(201);
    expect((await call(env, `/v1/jobs/${job.body.id}`)).body).toMatchObject({ state: "scheduled", flowKey: "é".repeat(100), priority: 9 });
  });

  it("pull consumers: a flooded key is held to its parallelism while every other key's job is claimed; a paused key waits", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/q", { method: "PUT", body: { mode: "pull", flow: { parallelism: 2 } } });
    const hot = Array.from({ length: 50 }, () => ({ topic: "q", flowKey: "hot" }));
    const cold = Array.from({ length: 20 }, (_, i) => ({ topic: "q", flowKey: `cold-${i}` }));
    expect((await call(env, "/v1/jobs/batch", { body: { jobs: [...hot, ...cold] } })).status).toBe(201);
    await call(env, "/v1/topics/q/flow-keys/cold-0", { method: "PUT", body: { paused: true } });
    const first = await pullAll(env, "q", 10);
    expect(first.filter((j) => j.flowKey === "hot")).toHaveLength(2);
    expect(
      first
        .filter((j) => j.flowKey !== "hot")
        .map((j) => j.flowKey)
        .sort(),
    ).toEqual(Array.from({ length: 19 }, (_, i) => `cold-${i + 1}`).sort());
    // The topic's view: the hot key parked at its parallelism with its jobs waiting, cold-0 paused.
    const view = (await call(env, "/v1/topics/q")).body;
    expect(view.flowKeys).toMatchObject({ inTurn: 0, waitingForRate: 0, atParallelism: 1, paused: 1 });
    expect(view.flowKeys.busiest[0]).toEqual({ key: "hot", inFlight: 2, waiting: 48, state: "parallelism" });
    expect(view.flowKeys.busiest).toContainEqual({ key: "cold-0", inFlight: 0, waiting: 1, state: "paused" });
    expect((await call(env, "/v1/topics")).body.topics[0].flowKeys).toEqual({ inTurn: 0, waitingForRate: 0, atParallelism: 1, paused: 1 });
    expect((await call(env, "/v1/stats?minutes=0")).body.topics[0].flowKeys).toEqual({ inTurn: 0, waitingForRate: 0, atParallelism: 1, paused: 1 });
    const metrics = await call(env, "/metrics");
    expect(metrics.text).toContain('delayline_flow_keys{topic="q",state="at_parallelism"} 1');
    expect(metrics.text).toContain('delayline_flow_keys{topic="q",state="paused"} 1');
    // An ack frees a slot of the hot key: one more of its jobs, no more.
    const h = first.find((j) => j.flowKey === "hot")!;
    expect((await call(env, `/v1/jobs/${h.id}/ack`, { body: { attempt: h.attempt } })).status).toBe(200);
    expect((await pullAll(env, "q", 10)).map((j) => j.flowKey)).toEqual(["hot"]);
    // Unpausing the key lets its job go.
    await call(env, "/v1/topics/q/flow-keys/cold-0", { method: "DELETE" });
    expect((await pullAll(env, "q", 10)).map((j) => j.flowKey)).toEqual(["cold-0"]);
  });

  it("maxKeyLength: the 11th job into a key of 10 gets 429 flow-key-full and stores nothing, other keys still take jobs; a key's own cap overrides", async () => {
    const env = isolatedEnv();
    expect((await call(env, "/v1/topics/k", { method: "PUT", body: { maxKeyLength: 10 } })).body.settings.maxKeyLength).toBe(10);
    const ten = Array.from({ length: 10 }, (_, i) => ({ topic: "k", flowKey: "full", payload: i, delay: "1h" }));
    expect((await call(env, "/v1/jobs/batch", { body: { jobs: ten } })).status).toBe(201);
    const refused = await call(env, "/v1/jobs", { body: { topic: "k", flowKey: "full", payload: 10, delay: "1h" } });
    expect(refused.status).toBe(429);
    isProblem(refused, 429);
    expect(refused.body).toMatchObject({ type: "urn:delayline:flow-key-full", topic: "k", flowKey: "full", pending: 10, maxKeyLength: 10 });
    // A batch is all or nothing: the other key's job in it is not stored either.
    const batch = await call(env, "/v1/jobs/batch", {
      body: {
        jobs: [
          { topic: "k", flowKey: "other" },
          { topic: "k", flowKey: "full" },
        ],
      },
    });
    expect(batch.body).toMatchObject({ status: 429, type: "urn:delayline:flow-key-full", flowKey: "full" });
    expect((await call(env, "/v1/topics/k")).body.scheduled).toBe(10);
    // Other keys, and jobs without a key, still enqueue.
    expect((await call(env, "/v1/jobs", { body: { topic: "k", flowKey: "other", delay: "1h" } })).status).toBe(201);
    expect((await call(env, "/v1/jobs", { body: { topic: "k", delay: "1h" } })).status).toBe(201);
    expect((await call(env, "/v1/topics/k/flow-keys/full")).body).toEqual({ topic: "k", key: "full", settings: {}, length: 10 });
    expect((await call(env, "/v1/topics/k/flow-keys/other")).body.length).toBe(1);
    // The key's own cap overrides the topic's: room for two more.
    expect((await call(env, "/v1/topics/k/flow-keys/full", { method: "PUT", body: { maxKeyLength: 12 } })).body.length).toBe(10);
    for (const status of [201, 201, 429]) expect((await call(env, "/v1/jobs", { body: { topic: "k", flowKey: "full", delay: "1h" } })).status).toBe(status);
    expect((await call(env, "/v1/topics/k/flow-keys")).body.keys).toEqual([{ topic: "k", key: "full", settings: { maxKeyLength: 12 }, length: 12 }]);
    isProblem(await call(env, "/v1/topics/k/flow-keys/full", { method: "PUT", body: { maxKeyLength: 0 } }), 422);
    isProblem(await call(env, "/v1/topics/k", { method: "PUT", body: { maxKeyLength: 0 } }), 422);
  });

  it("a topic's jobs listed and cancelled by flow key: GET ?flowKey pages the key's jobs; POST …/jobs/cancel with flowKey cancels them only", async () => {
    const env = isolatedEnv();
    const jobs = Array.from({ length: 12 }, (_, i) => ({
      topic: "lc",
      payload: i,
      delay: 60_000 + i * 1_000,
      ...(i % 3 === 0 ? {} : { flowKey: `k${i % 3}` }),
    }));
    const made = (await call(env, "/v1/jobs/batch", { body: { jobs } })).body.jobs.map((j: { id: string }) => j.id);
    const k1 = made.filter((_: string, i: number) => i % 3 === 1);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { jobs: Array<{ id: string }>; nextCursor: string | null } } = await call(
        env,
        `/v1/topics/lc/jobs?flowKey=k1&limit=3${cursor ? `&cursor=${cursor}` : ""}`,
      );
      seen.push(...page.body.jobs.map((j) => j.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(k1);
    isProblem(await call(env, "/v1/topics/lc/jobs?flowKey=a%0Ab"), 422);
    const cancelled = await call(env, "/v1/topics/lc/jobs/cancel", { body: { flowKey: "k1" } });
    expect(cancelled.body).toMatchObject({ cancelled: 4, nextCursor: null });
    expect((await call(env, "/v1/topics/lc/jobs?flowKey=k1")).body.jobs).toEqual([]);
    expect((await call(env, "/v1/topics/lc/flow-keys/k2")).body.length).toBe(4);
    // A due window reaches keyed jobs too.
    expect((await call(env, "/v1/topics/lc/jobs/cancel", { body: { all: true } })).body).toMatchObject({ cancelled: 8 });
    expect((await call(env, "/v1/topics/lc")).body.scheduled).toBe(0);
    isProblem(await call(env, "/v1/topics/lc/jobs/cancel", { body: { flowKey: "k1", all: true } }), 422);
  });
});
