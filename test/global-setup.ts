import type { TestProject } from "vitest/node";
import { tsImport } from "tsx/esm/api";

/**
 * Starts a real redis-server and the REST bridge on free ports for one test
 * project, and hands their addresses to the tests (and, through `inject`, to
 * the Worker's bindings). Everything stops when the run ends.
 *
 * The stack is loaded by Node itself (through tsx), not through the
 * project's Vite runner: the workers project inlines every dependency for
 * workerd, and ioredis cannot be evaluated that way.
 */
export default async function setup(project: TestProject) {
  const { startRedisBridge } = (await tsImport("../harness/redis-bridge.ts", import.meta.url)) as typeof import("../harness/redis-bridge.js");
  const { startReceiver } = (await tsImport("./receiver.ts", import.meta.url)) as typeof import("./receiver.js");
  const receiver = await startReceiver();
  const stack = await startRedisBridge();
  // A second Redis that only the cost test uses, so its command counts are exact.
  const meter = await startRedisBridge();
  // And one for the fuzz test, which checks that rejected requests write no key at all.
  const fuzz = await startRedisBridge();
  // And one for the abuse test, which checks that refused requests change no byte of Redis.
  const abuse = await startRedisBridge();
  // And one for the bulk-operation test, whose SLOWLOG holds only its own calls:
  // without the record cap, whose MEMORY USAGE of every key a call writes would fill it.
  const slow = await startRedisBridge({ limits: { maxRecordBytes: 0 } });
  // And two more databases for the shards tests (test/workers/api/shards.test.ts): shards "b" and "c" beside the main one.
  const shardB = await startRedisBridge();
  const shardC = await startRedisBridge();
  project.provide("shardBridges", [
    { url: shardB.bridge.url, token: shardB.token },
    { url: shardC.bridge.url, token: shardC.token },
  ]);
  project.provide("bridgeUrl", stack.bridge.url);
  project.provide("bridgeToken", stack.token);
  project.provide("redisUrl", stack.redis.url);
  project.provide("meterBridgeUrl", meter.bridge.url);
  project.provide("meterBridgeToken", meter.token);
  project.provide("fuzzBridgeUrl", fuzz.bridge.url);
  project.provide("fuzzBridgeToken", fuzz.token);
  project.provide("abuseBridgeUrl", abuse.bridge.url);
  project.provide("abuseBridgeToken", abuse.token);
  project.provide("slowBridgeUrl", slow.bridge.url);
  project.provide("slowBridgeToken", slow.token);
  project.provide("receiverUrl", receiver.url);
  return async () => {
    await Promise.all([stack.stop(), meter.stop(), fuzz.stop(), abuse.stop(), slow.stop(), shardB.stop(), shardC.stop(), receiver.close()]);
  };
}
