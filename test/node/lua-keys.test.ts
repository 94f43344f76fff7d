/**
 * Every script may run under Upstash's key-based locking (`#!lua
 * flags=allow-key-locking`), which locks only the keys passed in KEYS: so
 * every key a script touches must be in its KEYS, and (for a Redis Cluster
 * too) all of them in one hash slot.
 *
 * Two checks. Statically, on each script as built: the first line is the
 * flag, and no `redis.call` names its key by building it in Lua (a `..`
 * concatenation or a string literal in the key's place). At run time: the
 * queue's operations run against a Redis of their own with `MONITOR`
 * recording every command, those inside scripts too (Redis logs a script's
 * call, then each command it runs, with nothing between); each command a
 * script runs must name a key of that call's KEYS, and the KEYS of every
 * call must hash to one slot (CRC16 of the hash tag, as Redis Cluster does).
 */
import { createHash } from "node:crypto";
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { stripKeyLocking } from "../../dev/bridge/scripts.js";
import { type RedisBridge, startRedisBridge } from "../../harness/redis-bridge.js";
import { TickLock } from "../../src/queue/lock.js";
import * as lua from "../../src/queue/lua.generated.js";
import { Queue } from "../../src/queue/queue.js";
import { createRedis } from "../../src/queue/redis.js";

const scripts = Object.values(lua).filter((s): s is lua.LuaScript => typeof s === "object" && s !== null && "sha1" in s);

it("every script's first line is #!lua flags=allow-key-locking, and no redis.call builds its key in Lua", () => {
  const built: string[] = [];
  for (const s of scripts) {
    expect(s.source.split("\n")[0], s.name).toBe("#!lua flags=allow-key-locking");
    for (const m of s.source.matchAll(/redis\.p?call\(\s*("[A-Za-z]+"|\w+)\s*,\s*([^,)]+)/g)) {
      const keyExpr = m[2]!.trim();
      if (keyExpr.includes("..") || /^["']/.test(keyExpr)) built.push(`${s.name}: redis.call(${m[1]}, ${keyExpr}`);
    }
  }
  expect(built).toEqual([]);
});

// CRC16/XMODEM, Redis Cluster's key hash.
function crc16(bytes: Buffer): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
function slot(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) return crc16(Buffer.from(key.slice(open + 1, close))) % 16384;
  }
  return crc16(Buffer.from(key)) % 16384;
}

/** A prefix with a hash tag, as every deployment's must be (src/env.ts: KEY_PREFIX). */
const PREFIX = `dl:{keys-${process.pid}}`;

let stack: RedisBridge;
let monitor: Awaited<ReturnType<IORedis["monitor"]>>;
const lines: Array<{ source: string; args: string[] }> = [];

beforeAll(async () => {
  stack = await startRedisBridge({ tokenPrefix: "keys" });
  monitor = await new IORedis(stack.redis.url).monitor();
  monitor.on("monitor", (_time: string, args: string[], source: string) => lines.push({ source, args }));
});
afterAll(async () => {
  monitor?.disconnect();
  await stack?.stop();
});

it("every command a script runs names a key of its KEYS, and each call's KEYS share one hash slot", { timeout: 60_000 }, async () => {
  const redis = createRedis({ redisUrl: stack.bridge.url, redisToken: stack.token, redisTimeoutMs: 30_000 });
  const queue = new Queue({ redis, prefix: PREFIX });
  const now = Date.now();

  // Data of an earlier version, so its migration runs: a job in the hash model's record hash.
  const old = new IORedis(stack.redis.url);
  await old.hset(`${PREFIX}:jobs`, "a.01MCC6XZVQJSVFFC77WBAJDD34", JSON.stringify({ payload: 1, createdAt: now }));
  await old.zadd(`${PREFIX}:t:a:due`, now, "a.01MCC6XZVQJSVFFC77WBAJDD34");
  old.disconnect();

  // The operations of a job's life, and the admin ones around it.
  await queue.configureTopic("a", { maxAttempts: 2, ratePerSec: 1000 });
  const jobs = await Promise.all(Array.from({ length: 6 }, (_, i) => queue.enqueue({ topic: "a", payload: { i }, idempotencyKey: `k${i}` })));
  await queue.enqueue({ topic: "a", payload: { i: 0 }, idempotencyKey: "k0" });
  await queue.enqueueBatch([
    { topic: "b", payload: 1, delayMs: 60_000 },
    { topic: "b", payload: 2, delayMs: 120_000 },
  ]);
  await queue.get(jobs[0]!.id);
  await queue.reschedule(jobs[5]!.id, now + 3_600_000);
  await queue.cancel(jobs[4]!.id);
  await queue.listJobs("a", { state: "scheduled", limit: 10 });
  const claimed = await queue.claim("a", { max: 3, leaseMs: 60_000, now: now + 1_000 });
  await queue.settle("a", [...claimed.jobs.slice(0, 1).map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const }))]);
  for (const j of claimed.jobs.slice(1)) await queue.nack(j.id, j.attempt, { error: "boom", permanent: true });
  await queue.deadLetters("a", { limit: 10 });
  const dead = claimed.jobs[1];
  if (dead) await queue.deadLetter(dead.id);
  if (dead) await queue.replayDeadLetters("a", { ids: [dead.id] });
  await queue.replayDeadLettersMatching("a", {});
  // A letter for the purges to drop (the replays above took the others back).
  await queue.enqueue({ topic: "a", payload: "doomed" });
  for (const j of (await queue.claim("a", { max: 10, leaseMs: 60_000, now: now + 2_000 })).jobs)
    await queue.nack(j.id, j.attempt, { error: "x", permanent: true });
  await queue.purgeDeadLettersStep("a", {});
  await queue.purgeDeadLetters("a", {});
  // Past the retention window and the sweep's slack: the claim names the acked job and its caller sweeps it.
  await queue.claim("a", { max: 1, leaseMs: 60_000, now: Date.now() + 3_600_000 + 120_000 });
  await queue.cancelIds("b", ["nope"]);
  await queue.cancelWindow("b", {});
  await queue.configureTopic("p", { mode: "pull" });
  await queue.enqueue({ topic: "p", payload: "pulled" });
  await queue.claim("p", { max: 5, leaseMs: 30_000, mode: "pull", now: now + 1_000 });
  await queue.topicStats("a");
  await queue.topicSeries("a", { minutes: 5, now });
  await queue.topicCount();
  await queue.listTopicsPage({ limit: 10 });
  await queue.listTopics();
  await queue.peek({ now: now + 1_000, limit: 10 });
  await queue.tickStatus();
  await queue.look(now);
  await queue.deleteTopic("b", { purge: true });

  // The recurring schedules and the tick's lock.
  const definition = { every: 60_000, timezone: "UTC", grace: 60_000, anchor: now, createdAt: now, updatedAt: now, job: { topic: "s", payload: "tick" } };
  const state = { rev: 1, next: now, runs: 0, lastRunAt: null, lastJobId: null, paused: false };
  await queue.schedules.write("sch", 0, definition, state);
  await queue.schedules.due(now + 1_000);
  await queue.schedules.delete("sch");
  const lock = new TickLock(redis, PREFIX);
  await lock.acquire(10_000, now + 10_000);
  await lock.release();

  // A control: a script that builds its key in Lua must be caught.
  const control = `${PREFIX}:control`;
  await redis.eval("--[[\n  control: reads a key it was not given\n]]\nreturn redis.call('GET', KEYS[1] .. ':x')", [control], []);

  // MONITOR's feed lags the replies a little; a last command of our own marks its end.
  const marker = `keys-end-${crypto.randomUUID()}`;
  const direct = new IORedis(stack.redis.url);
  await direct.echo(marker);
  direct.disconnect();
  for (let i = 0; i < 200 && !lines.some((l) => l.args[1] === marker); i++) await new Promise((r) => setTimeout(r, 10));

  // Which script a call ran: by the digest Redis got (the flag taken out by the bridge), or for an EVAL the
  // name its header opens with (MONITOR shows the text escaped: a newline as \\n).
  const byDigest = new Map<string, string>();
  const headerName = (text: string) => /^(?:\\n)?--\[\[\\n\s*([\w-]+):/.exec(text)?.[1];
  for (const s of scripts) {
    const stripped = stripKeyLocking(s.source) ?? s.source;
    byDigest.set(createHash("sha1").update(stripped).digest("hex"), s.name);
    // A first EVALSHA of the flagged digest, before the bridge has seen the text (Redis answers NOSCRIPT).
    byDigest.set(s.sha1, s.name);
  }

  const problems: string[] = [];
  const multiSlot = new Set<string>();
  const seen = new Set<string>();
  let current: { name: string; keys: Set<string> } | undefined;
  for (const line of lines) {
    if (line.source !== "lua") {
      const cmd = line.args[0]?.toLowerCase();
      current = undefined;
      if (cmd !== "eval" && cmd !== "evalsha") continue;
      const name = (cmd === "evalsha" ? byDigest.get(line.args[1]!.toLowerCase()) : headerName(line.args[1]!)) ?? "(another script)";
      const keys = line.args.slice(3, 3 + Number(line.args[2]));
      seen.add(name);
      current = { name, keys: new Set(keys) };
      if (new Set(keys.map(slot)).size > 1) multiSlot.add(name);
      continue;
    }
    if (!current) continue;
    // Every command the scripts run takes one key, as its first argument.
    const key = line.args[1];
    if (key !== undefined && !current.keys.has(key)) problems.push(`${current.name}: ${line.args[0]} ${key} is not in KEYS`);
  }
  expect(problems).toEqual([`control: GET ${control}:x is not in KEYS`]);
  expect(seen.has("(another script)")).toBe(false);
  expect([...multiSlot]).toEqual([]);
  // The slot function is Redis Cluster's (CLUSTER KEYSLOT foo is 12182), and a key without the tag is elsewhere.
  expect(slot("foo")).toBe(12182);
  expect(slot(`${PREFIX}:jobs`)).toBe(slot(`${PREFIX}:t:a:due`));
  expect(slot(`keys-${process.pid}:jobs`)).not.toBe(slot(`keys-${process.pid}:t:a:due`));
  // The scripts this run reached; schedule-fire needs a tick's firing (its keys are checked statically above).
  const missed = scripts.map((s) => s.name).filter((n) => !seen.has(n));
  expect(missed.sort()).toEqual(["schedule-fire"]);
});
