/**
 * A deployment on three shards (three Redis databases, each behind its own
 * bridge): each topic's jobs land on its shard's Redis, ids name their shard
 * and by-id calls go there, and a shard that is down fails only what is its.
 */
import { describe, expect, it } from "vitest";
import { settings, type Env } from "../../../src/env.js";
import { shardsFromSettings } from "../../../src/queue/from-settings.js";
import { createRedis } from "../../../src/queue/redis.js";
import { DOWN, SHARDS, threeShardBindings, topicOn } from "../shard-fixtures.js";
import { call, isolatedEnv } from "./helpers.js";

/** A deployment on shards main, b and c; `cUrl` moves shard c. */
const shardedEnv = (cUrl?: string): Env => isolatedEnv(threeShardBindings(cUrl));

describe("a deployment on three shards", () => {
  it("stores each topic's jobs on its own shard's Redis, and ids name the shard (none for main)", async () => {
    const env = shardedEnv();
    const shards = shardsFromSettings(settings(env));
    for (const shard of SHARDS) {
      const topic = topicOn(shard);
      const r = await call(env, "/v1/jobs", { body: { topic, delay: 60_000, payload: { shard } } });
      expect(r.status).toBe(201);
      expect(r.body.id).toMatch(shard === "main" ? new RegExp(`^${topic}\\.[0-9A-Z]{26}$`) : new RegExp(`^${shard}~${topic}\\.[0-9A-Z]{26}$`));
      // Read from each shard's own queue: only its shard holds it.
      for (const other of SHARDS) expect((await shards.queue(other)!.get(r.body.id))?.payload ?? null).toEqual(other === shard ? { shard } : null);
      // And the API reads it back by id, from the shard the id names.
      const got = await call(env, `/v1/jobs/${r.body.id}`);
      expect([got.status, got.body.topic, got.body.state]).toEqual([200, topic, "scheduled"]);
      // A topic's own routes read its shard.
      expect((await call(env, `/v1/topics/${topic}`)).body.scheduled).toBe(1);
      // Its record is among its topic's keys on that shard: the shard the id names is the database, not part of the key.
      const sh = settings(env).shards.find((x) => x.name === shard)!;
      const record = `${sh.prefix}:t:${topic}:j:${String(r.body.id).slice(-26)}`;
      expect([shard, await createRedis({ ...sh, redisTimeoutMs: 5_000 }).exists(record)]).toEqual([shard, 1]);
    }
  });

  it("sends by-id changes to the shard the id names: reschedule, cancel, ack, nack, a dead letter's drop", async () => {
    const env = shardedEnv();
    const topic = topicOn("b");
    const { body: job } = await call(env, "/v1/jobs", { body: { topic, delay: 60_000 } });
    const patched = await call(env, `/v1/jobs/${job.id}`, { method: "PATCH", body: { delay: 120_000 } });
    expect(patched.status).toBe(200);
    expect((await call(env, `/v1/jobs/${job.id}`, { method: "DELETE" })).body).toEqual({ id: job.id, state: "cancelled" });
    expect((await call(env, `/v1/jobs/${job.id}`)).body.state).toBe("cancelled");

    const pull = topicOn("c", "pull");
    expect((await call(env, `/v1/topics/${pull}`, { method: "PUT", body: { mode: "pull" } })).status).toBe(200);
    await call(env, "/v1/jobs/batch", { body: { jobs: [{ topic: pull }, { topic: pull }] } });
    const claimed = await call(env, `/v1/topics/${pull}/claim`, { body: { max: 2 } });
    const [acked, nacked] = claimed.body.jobs;
    expect([acked.id, nacked.id].every((id: string) => id.startsWith(`c~${pull}.`))).toBe(true);
    expect((await call(env, `/v1/jobs/${acked.id}/ack`, { body: { attempt: 1 } })).body).toEqual({ id: acked.id, state: "succeeded" });
    const nack = await call(env, `/v1/jobs/${nacked.id}/nack`, { body: { attempt: 1, error: "no", permanent: true } });
    expect(nack.body).toEqual({ id: nacked.id, state: "dead" });
    expect((await call(env, `/v1/topics/${pull}/dead/${nacked.id}`, { method: "DELETE" })).body).toEqual({ id: nacked.id, deleted: true });
  });

  it("answers 404, not 5xx, for an id naming a shard the deployment does not have", async () => {
    const env = shardedEnv();
    const id = `nope~${topicOn("b")}.01JD8X3Q5T4W9Y7ZC2B6N0M1KR`;
    for (const [method, path, body] of [
      ["GET", `/v1/jobs/${id}`, undefined],
      ["DELETE", `/v1/jobs/${id}`, undefined],
      ["PATCH", `/v1/jobs/${id}`, { delay: 1_000 }],
      ["POST", `/v1/jobs/${id}/ack`, { attempt: 1 }],
      ["POST", `/v1/jobs/${id}/nack`, { attempt: 1, error: "no" }],
    ] as const) {
      const r = await call(env, path, { method, ...(body ? { body } : {}) });
      expect([method, path, r.status, r.body.detail]).toEqual([method, path, 404, expect.stringContaining('shard "nope"')]);
    }
  });

  it("with one shard down, an enqueue to it answers 503 naming it, and the others' enqueues are stored", async () => {
    const env = shardedEnv(DOWN);
    const down = await call(env, "/v1/jobs", { body: { topic: topicOn("c") } });
    expect(down.status).toBe(503);
    expect(down.body.detail).toMatch(/^shard "c": /);
    expect((await call(env, "/v1/jobs", { body: { topic: topicOn("b") } })).status).toBe(201);
    expect((await call(env, "/v1/jobs", { body: { topic: topicOn("main") } })).status).toBe(201);
  });

  it("splits a batch per shard: with one shard down, the reply names it and lists the jobs stored and the ones not", async () => {
    const env = shardedEnv(DOWN);
    const topics = [topicOn("main"), topicOn("c"), topicOn("b"), topicOn("c", "u"), topicOn("main", "u")];
    const r = await call(env, "/v1/jobs/batch", { body: { jobs: topics.map((topic, i) => ({ topic, delay: 60_000, payload: i })) } });
    expect(r.status).toBe(503);
    expect(r.headers.get("content-type")).toBe("application/problem+json");
    expect(r.body.detail).toMatch(/^the batch's jobs on shard "c" were not stored; 3 of 5 were \(see stored and notStored\): shard "c": /);
    expect(r.body.notStored).toEqual([1, 3]);
    expect(r.body.stored.map((j: { index: number; topic: string }) => [j.index, j.topic])).toEqual([
      [0, topics[0]],
      [2, topics[2]],
      [4, topics[4]],
    ]);
    // What it says was stored was stored, on its shard.
    for (const j of r.body.stored) expect((await call(env, `/v1/jobs/${j.id}`)).body.payload).toBe(j.index);
  });

  it("stores a batch whose shards all answer, in order, each part on its shard", async () => {
    const env = shardedEnv();
    const topics = [topicOn("c"), topicOn("main"), topicOn("b")];
    const r = await call(env, "/v1/jobs/batch", { body: { jobs: topics.map((topic) => ({ topic })) } });
    expect(r.status).toBe(201);
    expect(r.body.jobs.map((j: { id: string }) => j.id.split(".")[0])).toEqual([`c~${topics[0]}`, topics[1], `b~${topics[2]}`]);
  });
});
