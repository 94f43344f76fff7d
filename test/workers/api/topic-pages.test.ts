/**
 * Topic listings at many topics: GET /v1/topics and GET /v1/stats page with
 * `cursor` / `nextCursor` and a bounded `limit`, `total` counts every topic,
 * /metrics keeps series of the busiest METRICS_TOPICS topics and sums the
 * rest, and a Redis that does not answer in time is not called unreachable.
 * A few dozen topics and small pages prove the paging (bench/topics-10k.ts
 * measures 10,000).
 */
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../../app/worker.js";
import { Delayline } from "../../../src/client/index.js";
import { call, isolatedEnv, TOKEN } from "./helpers.js";

const TOPICS = 23;
const names = Array.from({ length: TOPICS }, (_, i) => `p-${String(i).padStart(2, "0")}`);

async function withTopics() {
  const env = isolatedEnv({ METRICS_TOPICS: "3" });
  // Busier topics hold more scheduled jobs: p-05 most, then p-11, then p-17.
  const jobs = [
    ...names.map((topic) => ({ topic, payload: 0, delay: "1h" })),
    ...Array.from({ length: 6 }, () => ({ topic: "p-05", payload: 1, delay: "1h" })),
    ...Array.from({ length: 4 }, () => ({ topic: "p-11", payload: 1, delay: "1h" })),
    ...Array.from({ length: 2 }, () => ({ topic: "p-17", payload: 1, delay: "1h" })),
  ];
  expect((await call(env, "/v1/jobs/batch", { body: { jobs } })).status).toBe(201);
  return env;
}

/** Every page of a listing, following nextCursor; each page's size. */
async function walk(env: ReturnType<typeof isolatedEnv>, path: string) {
  const sizes: number[] = [];
  const topics: string[] = [];
  let cursor: string | null = null;
  let total = -1;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const r = await call(env, cursor === null ? path : `${path}${sep}cursor=${encodeURIComponent(cursor)}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    sizes.push(r.body.topics.length);
    topics.push(...r.body.topics.map((t: { topic: string }) => t.topic));
    total = r.body.total;
    cursor = r.body.nextCursor;
  } while (cursor !== null);
  return { sizes, topics, total };
}

describe("topic listings page", () => {
  it("GET /v1/topics pages in name order with cursor and limit; total counts every topic; the last page's nextCursor is null", async () => {
    const env = await withTopics();
    const all = await walk(env, "/v1/topics?limit=5");
    expect(all.topics).toEqual(names);
    expect(all.sizes).toEqual([5, 5, 5, 5, 3]);
    expect(all.total).toBe(TOPICS);
    // Without a limit: one page of up to 100.
    const one = await call(env, "/v1/topics");
    expect(one.body.topics).toHaveLength(TOPICS);
    // Plain topics: no flow keys to count.
    expect(one.body.topics.filter((t: object) => "flowKeys" in t)).toEqual([]);
    expect(one.body.nextCursor).toBeNull();
    // A topic deleted between pages is not listed, and none is skipped or repeated.
    const first = await call(env, "/v1/topics?limit=5");
    const purge = await call(env, "/v1/topics/p-06?purge=true", { method: "DELETE" });
    expect(purge.status).toBe(200);
    const second = await call(env, `/v1/topics?limit=5&cursor=${first.body.nextCursor}`);
    expect(second.body.topics.map((t: { topic: string }) => t.topic)).toEqual(["p-05", "p-07", "p-08", "p-09", "p-10"]);
    expect(second.body.total).toBe(TOPICS - 1);
  });

  it("refuses a limit out of bounds and a cursor it did not give, with a 422 naming the field", async () => {
    const env = isolatedEnv();
    for (const q of ["limit=0", "limit=501", "limit=x", "cursor=%25%25", `cursor=${btoa("s:1:x")}`]) {
      const r = await call(env, `/v1/topics?${q}`);
      expect(r.status, q).toBe(422);
      expect(JSON.stringify(r.body.errors), q).toMatch(q.startsWith("limit") ? /limit/ : /cursor/);
    }
    expect((await call(env, "/v1/stats?limit=101")).status).toBe(422);
    expect((await call(env, `/v1/stats?cursor=${btoa("d:1:x")}`)).status).toBe(422);
  });

  it("GET /v1/stats pages the same way; a long series makes pages shorter (minutes × topics ≤ 3,000) and the walk still lists every topic", async () => {
    const env = await withTopics();
    const byLimit = await walk(env, "/v1/stats?minutes=0&limit=10");
    expect(byLimit.topics).toEqual(names);
    expect(byLimit.sizes).toEqual([10, 10, 3]);
    expect(byLimit.total).toBe(TOPICS);
    const first = await call(env, "/v1/stats?minutes=5&limit=4");
    expect(first.body.tick).toBeDefined();
    expect(first.body.topics[0].series).toHaveLength(5);
    // 1,440 minutes: at most floor(3,000 / 1,440) = 2 topics a page, whatever the limit asked.
    const day = await walk(env, "/v1/stats?minutes=1440&limit=100");
    expect(day.topics).toEqual(names);
    expect(Math.max(...day.sizes)).toBe(2);
    // 200 minutes: floor(3,000 / 200) = 15 a page although 100 were asked (at 60 minutes, 50).
    expect((await walk(env, "/v1/stats?minutes=200&limit=100")).sizes).toEqual([15, 8]);
    // Default: 50 topics a page, so 23 fit on one.
    const one = await call(env, "/v1/stats");
    expect(one.body.topics).toHaveLength(TOPICS);
    // Plain topics: no flow keys to count.
    expect(one.body.topics.filter((t: object) => "flowKeys" in t)).toEqual([]);
    expect(one.body.nextCursor).toBeNull();
  });
});

describe("the client follows the pages", () => {
  it("topics.list is a page; topics.all reads every page; stats.pages yields each stats page", async () => {
    const env = await withTopics();
    const dl = new Delayline({ baseUrl: "http://delayline.test/", token: TOKEN, fetch: (r) => worker.fetch(r, env, createExecutionContext()) });
    const first = await dl.topics.list({ limit: 4 });
    expect(first.topics.map((t) => t.topic)).toEqual(names.slice(0, 4));
    expect(first.total).toBe(TOPICS);
    const second = await dl.topics.list({ limit: 4, cursor: first.nextCursor! });
    expect(second.topics.map((t) => t.topic)).toEqual(names.slice(4, 8));
    const walked: string[] = [];
    for await (const t of dl.topics.all({ limit: 4 })) walked.push(t.topic);
    expect(walked).toEqual(names);
    const pages: number[] = [];
    for await (const page of dl.stats.pages({ minutes: 0, limit: 10 })) pages.push(page.topics.length);
    expect(pages).toEqual([10, 10, 3]);
  });
});

describe("/metrics at many topics", () => {
  it('keeps series of the METRICS_TOPICS busiest topics and sums the rest under topic="(others)"', async () => {
    const env = await withTopics();
    const r = await call(env, "/metrics");
    expect(r.status).toBe(200);
    const text: string = r.body;
    const scheduled = [...text.matchAll(/^delayline_jobs_scheduled\{topic="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    // Busiest first: 7, 5 and 3 scheduled; the other 20 topics hold one each.
    expect(scheduled).toEqual([
      ["p-05", 7],
      ["p-11", 5],
      ["p-17", 3],
      ["(others)", TOPICS - 3],
    ]);
    expect(text).toContain("\ndelayline_topics 23\n");
    expect(text).toContain('delayline_lateness_seconds_count{topic="(others)"} 0');
    expect(text).not.toContain('topic="p-00"');
  });
});

describe("a slow Redis is not an unreachable one", () => {
  it("a Redis that takes the request and never answers is a 503 saying it did not answer in time; a refused connection says unreachable", async () => {
    // The receiver's …/hang takes the request and never answers: Redis up but too slow.
    const slow = isolatedEnv({ UPSTASH_REDIS_REST_URL: `${inject("receiverUrl")}/hang`, REDIS_TIMEOUT_MS: "300" });
    const hung = await call(slow, "/v1/topics/t", { method: "PUT", body: { maxAttempts: 2 } });
    expect(hung.status).toBe(503);
    expect(hung.body.detail).toMatch(/did not answer before the request's deadline \(REDIS_TIMEOUT_MS\)/);
    expect(hung.body.detail).not.toMatch(/unreachable/);
    // Nothing listens on port 9 of loopback: the connection is refused.
    const down = isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "300" });
    const refused = await call(down, "/v1/topics/t", { method: "PUT", body: { maxAttempts: 2 } });
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/^Redis is unreachable/);
  });
});
