import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createBridgeApp, type BridgeAppOptions } from "./app.js";
import { RedisPool, type PoolOptions } from "./pool.js";

/** Options of a running bridge. */
export interface BridgeOptions extends PoolOptions, Omit<BridgeAppOptions, "pool"> {
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
}

export async function startBridge(options: BridgeOptions): Promise<RunningBridge> {
  const pool = new RedisPool(options);
  await pool.waitReady(options.connectTimeoutMs ?? 2_000);
  const app = createBridgeApp({ ...options, pool });
  const host = options.host ?? "127.0.0.1";
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port ?? 0, hostname: host }, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  const stop = (connections: "idle" | "all") =>
    (closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive sockets would hold close() open; idle ones can go now.
        const http = server as unknown as { closeIdleConnections?: () => void; closeAllConnections?: () => void };
        if (connections === "all") http.closeAllConnections?.();
        else http.closeIdleConnections?.();
      });
      await pool.close();
    })());
  return {
    url: `http://${host}:${port}`,
    port,
    close: () => stop("idle"),
    abort: () => stop("all"),
  };
}
