import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createBridgeHandler, type BridgeAppOptions } from "./app.js";
import type { UpstashLimits } from "./limits.js";
import { ClusterPool } from "./cluster-pool.js";
import { type CommandPool, type PoolOptions, RedisPool } from "./pool.js";

/** Options of a running bridge: in front of one Redis (`redisUrl`) or of a Redis Cluster (`redisCluster`). */
export interface BridgeOptions extends Omit<PoolOptions, "redisUrl">, Omit<BridgeAppOptions, "pool"> {
  /** One Redis, e.g. `redis://127.0.0.1:6379/0`. Required unless `redisCluster` is given. */
  redisUrl?: string;
  /**
   * Some nodes of a Redis Cluster (dev/bridge/cluster-pool.ts): the bridge then
   * routes every command to the master owning its keys. Default none (one Redis at `redisUrl`).
   */
  redisCluster?: string[];
  /** Port to listen on; 0 picks a free one. Default 0. */
  port?: number;
  /** Interface to listen on. Default 127.0.0.1 (never exposed beyond the machine). */
  host?: string;
}

export interface RunningBridge {
  /** Base URL for `UPSTASH_REDIS_REST_URL`, e.g. `http://127.0.0.1:43127`. */
  url: string;
  port: number;
  /** Stops accepting requests, lets in-flight ones finish, closes Redis connections. */
  close(): Promise<void>;
  /**
   * Stops at once, as a crash would: every connection is closed, requests in
   * flight included. (A graceful close keeps serving on open keep-alive
   * connections until they fall idle, which a busy client may never let happen.)
   */
  abort(): Promise<void>;
  /** Changes some of Upstash's limits from the next request on (`0` turns one off), e.g. to lower a cap and then lift it. */
  setLimits(change: Partial<UpstashLimits>): void;
  /** The limits in force. */
  readonly limits: Readonly<UpstashLimits>;
}

export async function startBridge(options: BridgeOptions): Promise<RunningBridge> {
  let pool: CommandPool;
  if (options.redisCluster?.length) pool = new ClusterPool({ ...options, redisCluster: options.redisCluster });
  else if (options.redisUrl) pool = new RedisPool({ ...options, redisUrl: options.redisUrl });
  else throw new Error("the bridge needs redisUrl or redisCluster");
  await pool.waitReady(options.connectTimeoutMs ?? 2_000);
  const host = options.host ?? "127.0.0.1";
  const handler = createBridgeHandler({ ...options, pool });
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  const stop = (connections: "idle" | "all") =>
    (closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive sockets would hold close() open; idle ones can go now.
        if (connections === "all") server.closeAllConnections();
        else server.closeIdleConnections();
      });
      await pool.close();
    })());
  return {
    url: `http://${host}:${port}`,
    port,
    close: () => stop("idle"),
    abort: () => stop("all"),
    setLimits: (change) => handler.setLimits(change),
    get limits() {
      return handler.limits;
    },
  };
}
