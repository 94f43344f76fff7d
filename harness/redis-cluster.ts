import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { freePort } from "../dev/ports.js";
import type { SlotRange } from "../dev/bridge/key-slot.js";
import { type RunningRedis, startRedis } from "../dev/redis-launcher.js";

const run = promisify(execFile);

/** A throwaway Redis Cluster of masters on loopback (Debian's redis-server in cluster mode), for tests and benchmarks. */
export interface RunningRedisCluster {
  /** Each master, in the order `redis-cli --cluster create` was given them (slots split evenly in that order). */
  nodes: RunningRedis[];
  /** The masters' URLs, `redis://127.0.0.1:<port>`: what a cluster client starts from. */
  urls: string[];
  /** How many commands the masters refused with CROSSSLOT since they started (their `INFO errorstats`). */
  crossSlotErrors(): Promise<number>;
  /** Each master's URL and the slots it serves, in the order of {@link nodes}, as the cluster says now (`CLUSTER NODES`). */
  masters(): Promise<ClusterMaster[]>;
  /** Stops every node and removes their temp dirs. */
  stop(): Promise<void>;
}

/** A master of the cluster and the slots it serves. */
interface ClusterMaster {
  url: string;
  slots: SlotRange[];
}

export interface RedisClusterOptions {
  /** How many masters (no replicas). Default 3, the fewest `redis-cli --cluster create` accepts. */
  masters?: number;
  /** How long to wait for `cluster_state:ok` once created. Default 20,000 ms. */
  readyTimeoutMs?: number;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args]);
  return stdout;
}

async function crossSlotErrors(nodes: RunningRedis[]): Promise<number> {
  const counts = await Promise.all(nodes.map(async (n) => Number(/errorstat_CROSSSLOT:count=(\d+)/.exec(await cli(n.port, "INFO", "errorstats"))?.[1] ?? 0)));
  return counts.reduce((a, b) => a + b, 0);
}

/** The masters' slots from `CLUSTER NODES` (a line per node: id, `ip:port@bus`, flags, …, then its slots, `first-last` or one). */
async function masters(nodes: RunningRedis[]): Promise<ClusterMaster[]> {
  const lines = (await cli(nodes[0]!.port, "CLUSTER", "NODES")).trim().split("\n");
  const slotsByPort = new Map<number, SlotRange[]>();
  for (const fields of lines.map((l) => l.trim().split(" "))) {
    if (!fields[2]?.split(",").includes("master")) continue;
    const port = Number(/:(\d+)@/.exec(fields[1]!)?.[1]);
    // Past the eighth field, each is a slot or a range; one in brackets is a slot being moved.
    const ranges = fields
      .slice(8)
      .filter((f) => !f.startsWith("["))
      .map((f): SlotRange => {
        const [first, last = first] = f.split("-").map(Number);
        return [first!, last!];
      });
    slotsByPort.set(port, ranges);
  }
  return nodes.map((n) => ({ url: n.url, slots: slotsByPort.get(n.port) ?? [] }));
}

/**
 * Starts `masters` redis-servers with `--cluster-enabled yes`, each in its own
 * temp dir with its own node config file and a free bus port, joins them with
 * `redis-cli --cluster create`, and resolves once every node reports
 * `cluster_state:ok`. `cluster-require-full-coverage no` keeps the slots of
 * the live masters served when one is stopped.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RunningRedisCluster> {
  const nodes: RunningRedis[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < (options.masters ?? 3); i++) {
      const extraArgs = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-require-full-coverage", "no"];
      nodes.push(await startRedis({ appendfsync: "no", extraArgs: [...extraArgs, "--cluster-port", String(await freePort())] }));
    }
    const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
    await run("redis-cli", ["--cluster", "create", ...addresses, "--cluster-replicas", "0", "--cluster-yes"]);
    const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000);
    for (const n of nodes) {
      while (!(await cli(n.port, "CLUSTER", "INFO")).includes("cluster_state:ok")) {
        if (Date.now() > deadline) throw new Error(`the Redis Cluster on ${addresses.join(", ")} did not reach cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return { nodes, urls: nodes.map((n) => n.url), crossSlotErrors: () => crossSlotErrors(nodes), masters: () => masters(nodes), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
