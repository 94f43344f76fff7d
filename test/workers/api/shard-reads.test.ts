/**
 * Reads across shards: the topic listing, /v1/stats, /metrics and /healthz
 * read every shard at once and merge them; a shard that is down, or that
 * takes connections and never answers, is left out and named (`partial`,
 * `missingShards`, `delayline_shard_up`), and the others still answer.
 */
import { inject, describe, expect, it } from "vitest";
import type { Env } from "../../../src/env.js";
import { DOWN, SHARDS, threeShardBindings, topicOn } from "../shard-fixtures.js";
import { call, isolatedEnv } from "./helpers.js";

/** A deployment on shards main, b and c; `cUrl` moves shard c, `bUrl` shard b. */
const shardedEnv = (cUrl?: string, bUrl?: string, more: Partial<Env> = {}): Env => isolatedEnv({ ...threeShardBindings(cUrl, bUrl), ...more });

/** Two topics on each shard, made by a delayed job each; the names in name order, and those on shards main and b. */
async function twoTopicsPerShard(env: Env, tag: string): Promise<{ all: string[]; notOnC: string[] }> {
  const on = (shard: string) => [topicOn(shard, `${tag}1`), topicOn(shard, `${tag}2`)];
  const all = SHARDS.flatMap(on).sort();
  for (const topic of all) expect((await call(env, "/v1/jobs", { body: { topic, delay: 60_000 } })).status).toBe(201);
  return { all, notOnC: [...on("main"), ...on("b")].sort() };
}

/** The same deployment (same shards and prefixes) with shard `name` at `url`. */
function moved(env: Env, name: string, url: string): Env {
  const shards = JSON.parse(env.DELAYLINE_SHARDS!) as Array<{ name: string; url?: string }>;
  return { ...env, DELAYLINE_SHARDS: JSON.stringify(shards.map((s) => (s.name === name ? { ...s, url } : s))) };
}

/** The value of a sample of the Prometheus text, by its name and labels as written; null when absent. */
function sample(text: string, series: string): number | null {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

describe("reads across three shards", () => {
  it("lists every shard's topics in name order, page after page, with no topic repeated or skipped", async () => {
    const env = shardedEnv();
    const topics = (await twoTopicsPerShard(env, "list")).all;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = (await call(env, `/v1/topics?limit=4${cursor ? `&cursor=${cursor}` : ""}`)).body;
      expect([page.total, page.partial, page.missingShards]).toEqual([6, false, []]);
      expect(page.topics.length).toBeLessThanOrEqual(4);
      seen.push(...page.topics.map((t: { topic: string }) => t.topic));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(topics);
  });

  it("/v1/stats shows every shard's topics and each shard's tick; /metrics every shard's topics, up", async () => {
    const env = shardedEnv();
    const topics = (await twoTopicsPerShard(env, "stats")).all;
    const stats = await call(env, "/v1/stats?minutes=0");
    expect(stats.status).toBe(200);
    expect(stats.body.topics.map((t: { topic: string }) => t.topic)).toEqual(topics);
    expect(stats.body.topics.every((t: { scheduled: number }) => t.scheduled === 1)).toBe(true);
    expect(stats.body.shards.map((s: { shard: string }) => s.shard)).toEqual(SHARDS);
    expect([stats.body.total, stats.body.partial, stats.body.missingShards]).toEqual([6, false, []]);

    const metrics = await call(env, "/metrics");
    expect(metrics.status).toBe(200);
    for (const shard of SHARDS) expect(sample(metrics.text, `delayline_shard_up{shard="${shard}"}`)).toBe(1);
    for (const topic of topics) expect(sample(metrics.text, `delayline_jobs_scheduled{topic="${topic}"}`)).toBe(1);
    expect(sample(metrics.text, "delayline_topics")).toBe(6);
  });

  it("with one shard down: the listing, /v1/stats, /metrics and /healthz answer 200 from the others and name it", async () => {
    const up = shardedEnv();
    const onUpShards = (await twoTopicsPerShard(up, "down")).notOnC;
    const env = moved(up, "c", DOWN);
    const list = await call(env, "/v1/topics");
    expect([list.status, list.body.partial, list.body.missingShards, list.body.total]).toEqual([200, true, ["c"], 4]);
    expect(list.body.topics.map((t: { topic: string }) => t.topic)).toEqual(onUpShards);

    const stats = await call(env, "/v1/stats?minutes=5");
    expect([stats.status, stats.body.partial, stats.body.missingShards]).toEqual([200, true, ["c"]]);
    expect(stats.body.shards.map((s: { shard: string }) => s.shard)).toEqual(["main", "b"]);
    expect(stats.body.topics.map((t: { topic: string }) => t.topic)).toEqual(onUpShards);
    expect(stats.body.tick).not.toBeNull();

    const metrics = await call(env, "/metrics");
    expect(metrics.status).toBe(200);
    expect([SHARDS.map((s) => sample(metrics.text, `delayline_shard_up{shard="${s}"}`))]).toEqual([[1, 1, 0]]);
    expect(sample(metrics.text, "delayline_topics")).toBe(4);

    const health = await call(env, "/healthz", { token: null });
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ ok: false, redis: "partial", partial: true, missingShards: ["c"] });
    expect(health.body.shards.map((s: { shard: string }) => s.shard)).toEqual(["main", "b"]);
  });

  it("with main down, /v1/stats still answers: its tick is null and main is named", async () => {
    const env = shardedEnv(undefined, undefined, { UPSTASH_REDIS_REST_URL: DOWN });
    const stats = await call(env, "/v1/stats?minutes=0");
    expect([stats.status, stats.body.tick, stats.body.partial, stats.body.missingShards]).toEqual([200, null, true, ["main"]]);
  });

  it("answers 503 when no shard answers, as with one shard", async () => {
    const env = shardedEnv(DOWN, DOWN, { UPSTASH_REDIS_REST_URL: DOWN });
    for (const path of ["/v1/stats", "/v1/topics", "/metrics"]) expect([path, (await call(env, path)).status]).toEqual([path, 503]);
    const health = await call(env, "/healthz", { token: null });
    expect([health.status, health.body.redis, health.body.missingShards]).toEqual([503, "down", SHARDS]);
  });

  it("does not wait on a shard that takes the connection and answers only after 10 s (REDIS_TIMEOUT_MS 60 s)", async () => {
    // Only the deadline of reads across shards (1.5 s) ends these reads before shard c answers; without it each would take 10 s, past the test's timeout.
    const env = shardedEnv(inject("silentUrl"), undefined, { REDIS_TIMEOUT_MS: "60000" } as Partial<Env>);
    await call(env, "/v1/jobs", { body: { topic: topicOn("b", "silent"), delay: 60_000 } });
    const stats = await call(env, "/v1/stats?minutes=0");
    expect([stats.status, stats.body.partial, stats.body.missingShards]).toEqual([200, true, ["c"]]);
    expect(stats.body.topics.map((t: { topic: string }) => t.topic)).toEqual([topicOn("b", "silent")]);
    const list = await call(env, "/v1/topics");
    expect([list.status, list.body.missingShards]).toEqual([200, ["c"]]);
    const health = await call(env, "/healthz", { token: null });
    expect([health.status, health.body.missingShards]).toEqual([200, ["c"]]);
    const metrics = await call(env, "/metrics");
    expect([metrics.status, sample(metrics.text, 'delayline_shard_up{shard="c"}'), sample(metrics.text, 'delayline_shard_up{shard="b"}')]).toEqual([200, 0, 1]);
  });
});
