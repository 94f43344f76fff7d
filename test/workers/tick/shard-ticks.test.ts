/**
 * A tick per shard: the cron's scheduled() runs main's tick itself and
 * starts every other shard's through TickChunk.tickShard, each on its own
 * shard's Redis (lock, heartbeat, status); a shard that is down fails only
 * its own tick. The Worker's TICK_RUNNER is the test deployment's own here
 * (a TickChunk on the sharded bindings), as the runtime would make it.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { settings } from "../../../src/env.js";
import { delayline } from "../../../src/index.js";
import { shardsFromSettings } from "../../../src/queue/from-settings.js";
import { freshEnv } from "../fixtures.js";
import { DOWN, SHARDS, threeShardBindings, topicOn } from "../shard-fixtures.js";

/**
 * A deployment on shards main, b and c (`cUrl` moves c), each on a fresh
 * prefix, whose code handlers record the ids they run, with its TICK_RUNNER
 * a TickChunk of its own on these bindings.
 */
function shardedDeployment(tag: string, cUrl?: string) {
  const topics = Object.fromEntries(SHARDS.map((shard) => [shard, topicOn(shard, `${tag}-${crypto.randomUUID().slice(0, 6)}`)]));
  const ran: Record<string, string[]> = { main: [], b: [], c: [] };
  const dl = delayline({ handlers: Object.fromEntries(SHARDS.map((shard) => [topics[shard]!, (job: { id: string }) => void ran[shard]!.push(job.id)])) });
  const env = freshEnv("shardtick", { ...threeShardBindings(cUrl), TICK_POLL_MS: "50" });
  const ctx = createExecutionContext();
  env.TICK_RUNNER = new dl.TickChunk(ctx, env);
  const shards = shardsFromSettings(settings(env));
  /** Runs the cron's scheduled() for a minute whose window (with the overlap) ends `leftMs` from now. */
  const cron = async (leftMs = 4_000) => {
    const scheduledTime = Date.now() - 60_000 - settings(env).tickOverlapMs + leftMs;
    await dl.scheduled({ scheduledTime, cron: "* * * * *", noRetry: () => {} }, env, ctx);
    await waitOnExecutionContext(ctx);
    return scheduledTime;
  };
  return { dl, env, topics, ran, shards, cron };
}

it("scheduled() delivers each shard's jobs exactly once, each shard's tick with its own heartbeat and status", { timeout: 30_000 }, async () => {
  const d = shardedDeployment("all");
  const ids: Record<string, string[]> = {};
  for (const shard of SHARDS) {
    const stored = await d.shards.enqueueBatch(Array.from({ length: 3 }, (_, i) => ({ topic: d.topics[shard]!, payload: i })));
    ids[shard] = stored.results.map((r) => r!.id);
  }
  const scheduledTime = await d.cron();
  for (const shard of SHARDS) {
    const queue = d.shards.queue(shard)!;
    // Each shard's handler ran its own jobs, once each.
    expect([shard, [...d.ran[shard]!].sort()]).toEqual([shard, [...ids[shard]!].sort()]);
    for (const id of ids[shard]!) expect((await queue.get(id))?.state).toBe("succeeded");
    // Each shard's Redis holds its own tick's heartbeat and status: it claimed that shard's jobs alone.
    expect(await queue.health.lastTickAt()).toBe(scheduledTime);
    // With the wake alarm bound (wrangler.toml's TICK_ALARM) a loop left with nothing due may end idle before its window does.
    expect(await queue.tickStatus()).toMatchObject({ startedAt: scheduledTime, claimed: 3, ended: expect.stringMatching(/^(window|idle)$/) });
  }
});

it("with one shard down, scheduled() still delivers the others' jobs, and does not throw", { timeout: 30_000 }, async () => {
  const d = shardedDeployment("down", DOWN);
  const ids: Record<string, string[]> = {};
  for (const shard of ["main", "b"]) ids[shard] = (await d.shards.queue(shard)!.enqueueBatch([{ topic: d.topics[shard]!, payload: shard }])).map((r) => r.id);
  const errors: string[] = [];
  const original = console.error;
  console.error = (line: string) => void errors.push(line);
  let scheduledTime: number;
  try {
    scheduledTime = await d.cron();
  } finally {
    console.error = original;
  }
  for (const shard of ["main", "b"]) {
    expect(d.ran[shard]).toEqual(ids[shard]);
    expect(await d.shards.queue(shard)!.health.lastTickAt()).toBe(scheduledTime);
  }
  // c's tick alone complains: its look fails, so its loop runs and waits out the outage until its window ends (or it fails).
  const lines = errors.map((e) => JSON.parse(e) as { msg: string; shard?: string });
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.filter((l) => l.shard !== "c")).toEqual([]);
});

it("a shard's fanned-out chunk and drain work on that shard", async () => {
  const d = shardedDeployment("chunk");
  const [one, two] = await d.shards.queue("b")!.enqueueBatch([
    { topic: d.topics.b!, payload: 1 },
    { topic: d.topics.b!, payload: 2 },
  ]);
  const runner = d.env.TICK_RUNNER!;
  // On main the topic holds nothing: the id is b's.
  expect((await runner.run(d.topics.b!, 1)).claimed).toBe(0);
  expect((await runner.run(d.topics.b!, 1, "b")).claimed).toBe(1);
  expect((await runner.drain(d.topics.b!, 2_000, 0, "b")).claimed).toBe(1);
  expect([...d.ran.b!].sort()).toEqual([one!.id, two!.id].sort());
});

it("while a shard's tick sleeps, a producer starts that shard's job due soon on that shard", { timeout: 30_000 }, async () => {
  const d = shardedDeployment("wake");
  Object.assign(d.env, { TICK_IDLE_PEEK_MS: "20000" });
  const b = d.shards.queue("b")!;
  const ticking = d.env.TICK_RUNNER!.tickShard("b", Date.now() - 60_000 - settings(d.env).tickOverlapMs + 6_000);
  for (let i = 0; i < 100 && !(await b.tickAsleep()); i++) await new Promise((r) => setTimeout(r, 50));
  expect(await b.tickAsleep()).toBe(true);
  // Past SLEEP_MARK_STALENESS_MS, so the producer has seen the mark.
  await new Promise((r) => setTimeout(r, 1_500));
  const ctx = createExecutionContext();
  const res = await d.dl.fetch(
    new Request("http://delayline.test/v1/jobs", {
      method: "POST",
      headers: { authorization: "Bearer test-api-token-0123456789", "content-type": "application/json" },
      body: JSON.stringify({ topic: d.topics.b, delay: 300 }),
    }),
    d.env,
    ctx,
  );
  const { id } = (await res.json()) as { id: string };
  expect(id.startsWith(`b~${d.topics.b}.`)).toBe(true);
  // The producer's drain (on b) ran it while b's tick still slept.
  await waitOnExecutionContext(ctx);
  expect(d.ran.b).toEqual([id]);
  await ticking;
});

it("a schedule whose topic lives on b is fired by b's tick: its occurrence's job is stored on b and run by b's handler", { timeout: 30_000 }, async () => {
  const d = shardedDeployment("sched");
  const res = await d.dl.fetch(
    new Request("http://delayline.test/v1/schedules/every-b", {
      method: "PUT",
      headers: { authorization: "Bearer test-api-token-0123456789", "content-type": "application/json" },
      body: JSON.stringify({ topic: d.topics.b, every: "1h", startAt: Date.now() + 500 }),
    }),
    d.env,
    createExecutionContext(),
  );
  expect(res.status).toBe(201);
  await d.cron();
  const b = d.shards.queue("b")!;
  const fired = await b.schedules.get("every-b");
  expect(fired?.state.runs).toBe(1);
  // The occurrence's job: on b (its id names b), run once by b's handler; main's and c's handlers ran nothing.
  expect(fired!.state.lastJobId!.startsWith(`b~${d.topics.b}.`)).toBe(true);
  expect(d.ran).toEqual({ main: [], b: [fired!.state.lastJobId], c: [] });
  expect((await b.get(fired!.state.lastJobId!))?.state).toBe("succeeded");
});
