import { describe, expect, it } from "vitest";
import { call, isolatedEnv } from "./helpers.js";

describe("DELETE /v1/topics/:topic", () => {
  it("deletes an empty topic with its settings; refuses one that holds jobs unless purging", async () => {
    const env = isolatedEnv();
    expect((await call(env, "/v1/topics/old", { method: "PUT", body: { maxAttempts: 3 } })).status).toBe(200);
    const empty = await call(env, "/v1/topics/old", { method: "DELETE" });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ topic: "old", deleted: true, purged: { scheduled: 0, dead: 0 } });
    expect((await call(env, "/v1/topics")).body.topics).toEqual([]);
    expect((await call(env, "/v1/topics/old")).body.settings.maxAttempts).toBe(5);

    const job = await call(env, "/v1/jobs", { body: { topic: "busy", payload: 1, delay: "1h" } });
    const refused = await call(env, "/v1/topics/busy", { method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(refused.body.detail).toMatch(/1 scheduled job.*purge=true/);
    expect((await call(env, `/v1/jobs/${job.body.id}`)).status).toBe(200);

    const purged = await call(env, "/v1/topics/busy?purge=true", { method: "DELETE" });
    expect(purged.body).toEqual({ topic: "busy", deleted: true, purged: { scheduled: 1, dead: 0 } });
    expect((await call(env, `/v1/jobs/${job.body.id}`)).status).toBe(404);
  });

  it("a purge frees the idempotency keys of the jobs it dropped; a key used after the purge deduplicates again; another topic's keys are kept", async () => {
    const env = isolatedEnv();
    const enqueue = (topic: string, key: string) => call(env, "/v1/jobs", { body: { topic, payload: key, delay: "1h" }, headers: { "idempotency-key": key } });
    const first = await enqueue("keyed", "order-1");
    const dead = await enqueue("keyed", "order-2");
    const other = await enqueue("kept", "order-1");
    expect([first.status, dead.status, other.status]).toEqual([201, 201, 201]);
    expect((await enqueue("keyed", "order-1")).body).toMatchObject({ id: first.body.id, deduplicated: true });

    const purged = await call(env, "/v1/topics/keyed?purge=true", { method: "DELETE" });
    expect(purged.body).toEqual({ topic: "keyed", deleted: true, purged: { scheduled: 2, dead: 0 } });
    expect((await call(env, `/v1/jobs/${first.body.id}`)).status).toBe(404);

    // The same key makes a new job, which is there to read, and then deduplicates to it.
    const again = await enqueue("keyed", "order-1");
    expect(again.status).toBe(201);
    expect(again.body.deduplicated).toBe(false);
    expect(again.body.id).not.toBe(first.body.id);
    expect((await call(env, `/v1/jobs/${again.body.id}`)).status).toBe(200);
    const repeat = await enqueue("keyed", "order-1");
    expect(repeat.body).toMatchObject({ id: again.body.id, deduplicated: true });
    expect((await call(env, `/v1/jobs/${repeat.body.id}`)).status).toBe(200);
    // A batch takes the same script: the other dropped job's key is free there too.
    const batch = await call(env, "/v1/jobs/batch", { body: { jobs: [{ topic: "keyed", payload: 2, delay: "1h", idempotencyKey: "order-2" }] } });
    expect(batch.body.jobs[0]).toMatchObject({ deduplicated: false });
    expect(batch.body.jobs[0].id).not.toBe(dead.body.id);
    // Another topic's key with the same name still answers its job.
    expect((await enqueue("kept", "order-1")).body).toMatchObject({ id: other.body.id, deduplicated: true });
  });

  it("purges thousands of scheduled jobs in bounded calls", async () => {
    const env = isolatedEnv();
    for (let i = 0; i < 3; i++) {
      const batch = await call(env, "/v1/jobs/batch", {
        body: { jobs: Array.from({ length: 1_000 }, (_, j) => ({ topic: "many", payload: j, delay: "1h" })) },
      });
      expect(batch.status).toBe(201);
    }
    const purged = await call(env, "/v1/topics/many?purge=true", { method: "DELETE" });
    expect(purged.status).toBe(200);
    expect(purged.body.purged).toEqual({ scheduled: 3_000, dead: 0 });
    expect((await call(env, "/v1/topics/many")).body.scheduled).toBe(0);
  });

  it("refuses a topic with jobs in flight, even when purging", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/pulled", { method: "PUT", body: { mode: "pull" } });
    await call(env, "/v1/jobs", { body: { topic: "pulled", payload: 1 } });
    expect((await call(env, "/v1/topics/pulled/claim", { body: { max: 1 } })).body.jobs).toHaveLength(1);
    const refused = await call(env, "/v1/topics/pulled?purge=true", { method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/in flight/);
  });

  it("a bad purge value is a 422 that touches nothing", async () => {
    const env = isolatedEnv();
    const bad = await call(env, "/v1/topics/x?purge=yes", { method: "DELETE" });
    expect(bad.status).toBe(422);
  });
});

describe("MAX_TOPICS", () => {
  it("answers 422 for a topic past the cap, from enqueue, batch, webhook ingest and PUT; existing topics go on", async () => {
    const env = isolatedEnv({ MAX_TOPICS: "2" });
    expect((await call(env, "/v1/jobs", { body: { topic: "a", payload: 1 } })).status).toBe(201);
    expect((await call(env, "/v1/topics/b", { method: "PUT", body: { maxAttempts: 2 } })).status).toBe(200);
    const over = await call(env, "/v1/jobs", { body: { topic: "c", payload: 1 } });
    expect(over.status).toBe(422);
    expect(over.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(over.body.detail).toMatch(/2 topics exist and the limit is 2 \(MAX_TOPICS\)/);
    const batch = await call(env, "/v1/jobs/batch", {
      body: {
        jobs: [
          { topic: "a", payload: 1 },
          { topic: "d", payload: 2 },
        ],
      },
    });
    expect(batch.status).toBe(422);
    expect((await call(env, "/v1/topics/a")).body.scheduled).toBe(1);
    expect((await call(env, "/v1/topics/e", { method: "PUT", body: { maxAttempts: 2 } })).status).toBe(422);
    expect((await call(env, "/v1/hooks/f", { raw: "{}", headers: { "content-type": "application/json" } })).status).toBe(422);
    expect((await call(env, "/v1/jobs", { body: { topic: "b", payload: 1 } })).status).toBe(201);
    // Deleting one makes room.
    expect((await call(env, "/v1/topics/b?purge=true", { method: "DELETE" })).status).toBe(200);
    expect((await call(env, "/v1/jobs", { body: { topic: "c", payload: 1 } })).status).toBe(201);
    expect((await call(env, "/v1/topics")).body.topics.map((t: { topic: string }) => t.topic)).toEqual(["a", "c"]);
  });
});
