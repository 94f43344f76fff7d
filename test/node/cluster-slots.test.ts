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
import { keySlot } from "../../dev/bridge/key-slot.js";
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

it("every script call's KEYS and every pipelined command's keys hash to one slot; a call given two hash tags is caught", { timeout: 60_000 }, async () => {
  const redis = createRedis({ redisUrl: stack.bridge.url, redisToken: stack.token, redisTimeoutMs: 30_000 });
  sent.length = 0;
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
  expect(await stack.cluster!.crossSlotErrors()).toBe(1);
});
