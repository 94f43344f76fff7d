/**
 * On a real 3-master Redis Cluster (harness/redis-cluster.ts) behind the
 * bridge's cluster client: the slot function the tests use is the cluster's
 * own, and every call the Queue makes — each script's KEYS, each command of
 * each pipeline — names keys of one slot. The bridge records every command
 * it is sent; Redis itself says which arguments are keys (`COMMAND GETKEYS`)
 * and in which slot a key lives (`CLUSTER KEYSLOT`). A control call given
 * keys of two hash tags must be caught, and refused by the cluster.
 */
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { hashTagIn, keySlot } from "../../dev/bridge/key-slot.js";
import { type RedisBridge, startRedisBridge } from "../../harness/redis-bridge.js";
import { createRedis } from "../../src/queue/redis.js";
import { runEveryQueueOperation } from "./queue-operations.js";

const PREFIX = `dl:{slots-${process.pid}}`;

let stack: RedisBridge;
let direct: IORedis;
const sent: Array<{ name: string; args: string[] }> = [];

beforeAll(async () => {
  stack = await startRedisBridge({
    cluster: true,
    tokenPrefix: "slots",
    onCommands: (commands) => sent.push(...commands.map((c) => ({ name: c.name, args: [...c.args] }))),
  });
  // CLUSTER KEYSLOT and COMMAND GETKEYS hold no key: any node answers them.
  direct = new IORedis(stack.redis.url);
}, 60_000);
afterAll(async () => {
  direct?.disconnect();
  await stack?.stop();
});

/** The keys of `command`, as Redis finds them (none for a command without keys). */
async function keysOf(command: { name: string; args: string[] }): Promise<string[]> {
  try {
    return (await direct.call("COMMAND", "GETKEYS", command.name, ...command.args)) as string[];
  } catch (err) {
    if (/no key arguments/i.test((err as Error).message)) return [];
    throw err;
  }
}

it("the slot function is the cluster's: CLUSTER KEYSLOT of keys with and without hash tags", async () => {
  const keys = [
    "foo",
    "bar",
    "",
    "{user1000}.following",
    "{user1000}.followers",
    "foo{}{bar}",
    "foo{{bar}}zap",
    "foo{bar}{zap}",
    "{}",
    "{",
    "}{a}",
    "dl:{main}:jobs",
    "t0a1b2c3d:{q}:t:a:due",
    "ключ{标签}x",
  ];
  for (let i = 0; i < 100; i++) keys.push(`k${i}:${crypto.randomUUID()}${i % 3 === 0 ? `{${i}}` : ""}`);
  const slots = await Promise.all(keys.map((k) => direct.cluster("KEYSLOT", k)));
  expect(keys.map(keySlot)).toEqual(slots);
  // Known values from the cluster spec and Redis' own tests.
  expect(keySlot("foo")).toBe(12182);
  expect(keySlot("{user1000}.following")).toBe(keySlot("{user1000}.followers"));
});

it("hashTagIn finds, for each master's slots, a hash tag whose slot (CLUSTER KEYSLOT) is that master's", async () => {
  const masters = await stack.cluster!.masters();
  // The masters' ranges cover every slot, once.
  const covered = masters.flatMap((m) => m.slots.flatMap(([first, last]) => Array.from({ length: last - first + 1 }, (_, i) => first + i)));
  expect(covered.sort((a, b) => a - b)).toEqual(Array.from({ length: 16_384 }, (_, i) => i));
  for (const master of masters) {
    for (const base of ["main-", "b-", "x"]) {
      const tag = hashTagIn(base, master.slots);
      expect(tag.startsWith(base)).toBe(true);
      const slot = await direct.cluster("KEYSLOT", `dl:{${tag}}:t:a:due`);
      expect(master.slots.some(([first, last]) => slot >= first && slot <= last)).toBe(true);
      // The first such tag: none before it lands there.
      for (let n = 0; `${base}${n}` !== tag; n++)
        expect(master.slots.some(([first, last]) => keySlot(`${base}${n}`) >= first && keySlot(`${base}${n}`) <= last)).toBe(false);
    }
  }
  // One slot alone is found too; no slot at all is said, not looped on.
  expect(keySlot(`{${hashTagIn("s", [[42, 42]])}}`)).toBe(42);
  expect(() => hashTagIn("s", [], 1_000)).toThrow(/no hash tag s<n> below n = 1000/);
});

it("every script call's KEYS and every pipelined command's keys hash to one slot; a call given two hash tags is caught", { timeout: 60_000 }, async () => {
  const redis = createRedis({ redisUrl: stack.bridge.url, redisToken: stack.token, redisTimeoutMs: 30_000 });
  sent.length = 0;
  const refusedBefore = await stack.cluster!.crossSlotErrors();
  await runEveryQueueOperation(redis, PREFIX);
  const scriptCalls = sent.filter((c) => /^EVAL(SHA)?$/i.test(c.name)).length;

  // The control: a script given keys of two hash tags. The cluster refuses it; the check below must name it.
  const other = `dl:{slots-other-${process.pid}}:b`;
  await expect(redis.eval("return 1", [`${PREFIX}:a`, other], [])).rejects.toThrow(/CROSSSLOT/);

  const spanning: string[] = [];
  for (const command of sent) {
    const keys = await keysOf(command);
    if (new Set(keys.map(keySlot)).size > 1) spanning.push(`${command.name} ${keys.join(" ")}`);
  }
  expect(spanning).toEqual([`EVAL ${PREFIX}:a ${other}`]);
  // The operations made their calls through scripts, and the cluster refused only the control.
  expect(scriptCalls).toBeGreaterThan(30);
  expect((await stack.cluster!.crossSlotErrors()) - refusedBefore).toBe(1);
});

/** One REST call to the bridge, answered as `[status, body]`. */
async function rest(path: string, body: unknown): Promise<[number, unknown]> {
  const res = await fetch(stack.bridge.url + path, { method: "POST", headers: { authorization: `Bearer ${stack.token}` }, body: JSON.stringify(body) });
  return [res.status, await res.json()];
}

it("the bridge routes each command to its keys' master and refuses across slots only what Redis Cluster refuses, in Redis' words", async () => {
  // One key on each master: a tag of each master's slots.
  const tags = (await stack.cluster!.masters()).map((m) => hashTagIn("n", m.slots));
  const keys = tags.map((t) => `route:{${t}}:${crypto.randomUUID()}`);
  const ranges = await direct.cluster("SLOTS");
  const masterOf = (k: string) => ranges.find(([first, last]) => keySlot(k) >= first && keySlot(k) <= last)![2]![1];
  expect(new Set(keys.map(masterOf)).size).toBe(3);
  // A pipeline across masters: each command on its own, in order.
  expect(await rest("/pipeline", [...keys.map((k, i) => ["SET", k, String(i)]), ...keys.map((k) => ["GET", k])])).toEqual([
    200,
    [...keys.map(() => ({ result: "OK" })), ...keys.map((_, i) => ({ result: String(i) }))],
  ]);
  const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot";
  expect(await rest("/", ["MGET", ...keys])).toEqual([400, { error: crossSlot }]);
  expect(await rest("/", ["EVAL", "return #KEYS", 2, keys[0], keys[1]])).toEqual([400, { error: crossSlot }]);
  expect(
    await rest("/multi-exec", [
      ["GET", keys[0]],
      ["GET", keys[2]],
    ]),
  ).toEqual([400, { error: `EXECABORT ${crossSlot}` }]);
  expect(
    await rest("/multi-exec", [
      ["INCR", keys[2]],
      ["GET", keys[2]],
    ]),
  ).toEqual([200, [{ result: 3 }, { result: "3" }]]);
  // What holds no key reaches every master: a loaded script runs by its digest on any of them; KEYS sees all three.
  const [, sha] = (await rest("/", ["SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])"])) as [number, { result: string }];
  for (const [i, k] of keys.entries()) expect(await rest("/", ["EVALSHA", sha.result, 1, k])).toEqual([200, { result: String(i === 2 ? 3 : i) }]);
  const [, listed] = (await rest("/", ["KEYS", "route:*"])) as [number, { result: string[] }];
  expect(listed.result).toEqual(expect.arrayContaining(keys));
  // A SCAN whose pattern names a hash tag walks that tag's master.
  const [, scanned] = (await rest("/", ["SCAN", "0", "MATCH", `route:{${tags[1]}}:*`, "COUNT", "1000"])) as [number, { result: [string, string[]] }];
  expect(scanned.result[1]).toContain(keys[1]);
  // The record cap measures each key on its own master (MEMORY USAGE routed by the key).
  stack.bridge.setLimits({ maxRecordBytes: 4_096 });
  try {
    for (const k of keys) {
      expect(await rest("/", ["SET", k, "x".repeat(3_000)])).toEqual([200, { result: "OK" }]);
      expect(await rest("/", ["APPEND", k, "y".repeat(2_000)])).toEqual([400, { error: "ERR max single record size exceeded" }]);
    }
  } finally {
    stack.bridge.setLimits({ maxRecordBytes: 100 * 1024 * 1024 });
  }
});
