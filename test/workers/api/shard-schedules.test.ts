/**
 * Schedules on three shards: a schedule lives on its topic's shard (so the
 * script that fires it stores the occurrence's job beside the topic's other
 * jobs), calls by id find it on whichever shard holds it, a change of topic
 * moves it, and the listing merges every shard's in id order.
 */
import { describe, expect, it } from "vitest";
import { settings, type Env } from "../../../src/env.js";
import { shardsFromSettings } from "../../../src/queue/from-settings.js";
import { DOWN, SHARDS, threeShardBindings, topicOn } from "../shard-fixtures.js";
import { call, isolatedEnv } from "./helpers.js";

const shardedEnv = (cUrl?: string): Env => isolatedEnv(threeShardBindings(cUrl));
const put = (env: Env, id: string, body: unknown) => call(env, `/v1/schedules/${id}`, { method: "PUT", body });

/** Which shards hold schedule `id`, read from each shard's own Redis. */
async function holders(env: Env, id: string): Promise<string[]> {
  const shards = shardsFromSettings(settings(env));
  const found = await Promise.all(SHARDS.map(async (s) => ((await shards.queue(s)!.schedules.get(id)) ? [s] : [])));
  return found.flat();
}

describe("schedules on three shards", () => {
  it("stores a schedule on its topic's shard; get, pause, resume and delete find it there", async () => {
    const env = shardedEnv();
    const topic = topicOn("b", "sched");
    const created = await put(env, "nightly", { topic, cron: "0 3 * * *" });
    expect([created.status, created.body.topic]).toEqual([201, topic]);
    expect(await holders(env, "nightly")).toEqual(["b"]);
    expect((await call(env, "/v1/schedules/nightly")).body.topic).toBe(topic);
    expect((await call(env, "/v1/schedules/nightly/pause", { method: "POST" })).body.paused).toBe(true);
    expect((await call(env, "/v1/schedules/nightly/resume", { method: "POST" })).body.paused).toBe(false);
    expect((await call(env, "/v1/schedules/nightly", { method: "DELETE" })).status).toBe(204);
    expect(await holders(env, "nightly")).toEqual([]);
    expect((await call(env, "/v1/schedules/nightly")).status).toBe(404);
    expect((await call(env, "/v1/schedules/nightly", { method: "DELETE" })).status).toBe(404);
  });

  it("moves a schedule when its topic moves to another shard, keeping its runs, pause and creation time", async () => {
    const env = shardedEnv();
    const first = await put(env, "move", { topic: topicOn("b", "from"), every: "1h" });
    await call(env, "/v1/schedules/move/pause", { method: "POST" });
    const moved = await put(env, "move", { topic: topicOn("c", "to"), every: "1h" });
    expect(moved.status).toBe(200);
    expect(await holders(env, "move")).toEqual(["c"]);
    expect(moved.body).toMatchObject({ topic: topicOn("c", "to"), paused: true, runs: 0, createdAt: first.body.createdAt });
  });

  it("lists every shard's schedules in id order, page after page", async () => {
    const env = shardedEnv();
    const ids = ["a1", "a2", "b1", "b2", "c1", "c2"];
    for (const [i, id] of ids.entries()) expect((await put(env, id, { topic: topicOn(SHARDS[i % 3]!, id), every: "1h" })).status).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = (await call(env, `/v1/schedules?limit=4${cursor ? `&cursor=${cursor}` : ""}`)).body;
      expect([page.partial, page.missingShards]).toEqual([false, []]);
      seen.push(...page.schedules.map((s: { id: string }) => s.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(ids);
  });

  it("with one shard down: the listing answers partial, and a call by id is 503 naming the shard that may hold it", async () => {
    const up = shardedEnv();
    expect((await put(up, "kept", { topic: topicOn("main", "kept"), every: "1h" })).status).toBe(201);
    const shards = JSON.parse(up.DELAYLINE_SHARDS!) as Array<{ name: string; url?: string }>;
    const env = { ...up, DELAYLINE_SHARDS: JSON.stringify(shards.map((s) => (s.name === "c" ? { ...s, url: DOWN } : s))) };
    const list = await call(env, "/v1/schedules");
    expect([list.status, list.body.partial, list.body.missingShards]).toEqual([200, true, ["c"]]);
    expect(list.body.schedules.map((s: { id: string }) => s.id)).toEqual(["kept"]);
    for (const [method, path, body] of [
      ["GET", "/v1/schedules/kept", undefined],
      ["PUT", "/v1/schedules/kept", { topic: topicOn("main", "kept"), every: "2h" }],
      ["DELETE", "/v1/schedules/kept", undefined],
    ] as const) {
      const r = await call(env, path, { method, ...(body ? { body } : {}) });
      expect([method, r.status, r.body.detail]).toEqual([method, 503, expect.stringContaining('shard "c"')]);
    }
  });
});
