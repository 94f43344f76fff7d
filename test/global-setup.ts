import { createServer, type AddressInfo, type Socket } from "node:net";
import type { TestProject } from "vitest/node";
import { tsImport } from "tsx/esm/api";

/**
 * Starts a real redis-server and the REST bridge on free ports for one test
 * project, and hands their addresses to the tests (and, through `inject`, to
 * the Worker's bindings). Everything stops when the run ends.
 *
 * In cluster mode (`TEST_REDIS=cluster`, or a project named `*-cluster`) the
 * bridge the tests and the Worker share fronts a 3-master Redis Cluster
 * instead (harness/redis-cluster.ts): every key of a test must then share its
 * prefix's hash tag, or Redis refuses the call with CROSSSLOT. The shards
 * tests' shards b and c are then on that cluster too, beside main, each on a
 * master of its own (test/shard-tags.ts picks their hash tags by slot). The other
 * bridges stay on a redis-server each: their tests read one server's own
 * state (INFO commandstats, SLOWLOG, DBSIZE, KEYS *), which a cluster spreads
 * over three.
 *
 * The stack is loaded by Node itself (through tsx), not through the
 * project's Vite runner: the workers project inlines every dependency for
 * workerd, and ioredis cannot be evaluated that way.
 */
export default async function setup(project: TestProject) {
  const { startRedisBridge } = (await tsImport("../harness/redis-bridge.ts", import.meta.url)) as typeof import("../harness/redis-bridge.js");
  const { startReceiver } = (await tsImport("./receiver.ts", import.meta.url)) as typeof import("./receiver.js");
  const receiver = await startReceiver();
  const cluster = process.env.TEST_REDIS === "cluster" || project.name.endsWith("-cluster");
  const stack = await startRedisBridge({ cluster });
  // A second Redis that only the cost test uses, so its command counts are exact.
  const meter = await startRedisBridge();
  // And one for the fuzz test, which checks that rejected requests write no key at all.
  const fuzz = await startRedisBridge();
  // And one for the abuse test, which checks that refused requests change no byte of Redis.
  const abuse = await startRedisBridge();
  // And one for the bulk-operation test, whose SLOWLOG holds only its own calls:
  // without the record cap, whose MEMORY USAGE of every key a call writes would fill it.
  const slow = await startRedisBridge({ limits: { maxRecordBytes: 0 } });
  // And one for the dry runs' test, which checks that a dry run makes Redis run no write command.
  const dry = await startRedisBridge();
  // And one for the flow keys' scale test, which counts commands and reads SLOWLOG beside the cost and bulk tests (likewise without the record cap).
  const flow = await startRedisBridge({ limits: { maxRecordBytes: 0 } });
  // And one for the labels' scale test, which counts the commands of listing and cancelling by label.
  const labels = await startRedisBridge({ limits: { maxRecordBytes: 0 } });
  // And two more databases for the shards tests (test/workers/api/shards.test.ts): shards "b" and "c" beside the main
  // one; on a cluster, the cluster itself, where their hash tags put them on masters of their own.
  const [shardB, shardC] = cluster ? [stack, stack] : [await startRedisBridge(), await startRedisBridge()];
  // A shard that takes connections and answers only after 10 s, for the deadline of reads across shards.
  const silent = await startSilentServer();
  project.provide("silentUrl", silent.url);
  project.provide("shardBridges", [
    { url: shardB.bridge.url, token: shardB.token },
    { url: shardC.bridge.url, token: shardC.token },
  ]);
  project.provide("clusterMasters", (await stack.cluster?.masters()) ?? []);
  project.provide("bridgeUrl", stack.bridge.url);
  project.provide("bridgeToken", stack.token);
  project.provide("redisUrl", stack.redis.url);
  project.provide("redisCluster", cluster);
  project.provide("meterBridgeUrl", meter.bridge.url);
  project.provide("meterBridgeToken", meter.token);
  project.provide("fuzzBridgeUrl", fuzz.bridge.url);
  project.provide("fuzzBridgeToken", fuzz.token);
  project.provide("abuseBridgeUrl", abuse.bridge.url);
  project.provide("abuseBridgeToken", abuse.token);
  project.provide("slowBridgeUrl", slow.bridge.url);
  project.provide("slowBridgeToken", slow.token);
  project.provide("flowBridgeUrl", flow.bridge.url);
  project.provide("flowBridgeToken", flow.token);
  project.provide("labelBridgeUrl", labels.bridge.url);
  project.provide("labelBridgeToken", labels.token);
  project.provide("dryBridgeUrl", dry.bridge.url);
  project.provide("dryBridgeToken", dry.token);
  project.provide("receiverUrl", receiver.url);
  return async () => {
    // Every call of the run in one slot: a CROSSSLOT anywhere (even one a test expected and passed on) fails the run.
    const crossSlot = (await stack.cluster?.crossSlotErrors()) ?? 0;
    if (cluster) console.log(`redis cluster (${project.name}): ${crossSlot} CROSSSLOT errors`);
    const shards = cluster ? [] : [shardB, shardC];
    await Promise.all([stack, meter, fuzz, abuse, slow, flow, labels, dry, ...shards].map((s) => s.stop()).concat(receiver.close(), silent.close()));
    if (crossSlot > 0) {
      // Vitest reports an error thrown here but exits 0 for it: the exit code is set too.
      process.exitCode = 1;
      throw new Error(`the Redis Cluster refused ${crossSlot} commands with CROSSSLOT: some call's keys span hash slots`);
    }
  };
}

/**
 * A loopback server that takes connections and answers each only after 10 s
 * (a 503), far past the deadline of reads across shards: an answer, late, so
 * the requests a test gave up on end as failures their callers hear, not as
 * connections cut under them when the run ends.
 */
async function startSilentServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    const late = setTimeout(() => socket.end("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"), 10_000);
    socket.on("close", () => clearTimeout(late));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
