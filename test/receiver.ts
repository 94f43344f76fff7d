import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Delivery {
  path: string;
  method: string;
  headers: Record<string, string>;
  /** Header names and values as they arrived, in order: shows a header sent twice, which `headers` would join. */
  rawHeaders: string[];
  body: string;
  at: number;
  /** The client's port: deliveries on one kept-alive connection share it. */
  remotePort: number;
}

/** How much of a streamed answer (…/huge, …/slow) the receiver wrote, and whether it wrote all of it before the client went away. */
export interface Streamed {
  bytes: number;
  finished: boolean;
  closed: boolean;
}

/**
 * A local HTTP receiver for delivery tests. The path says how to answer:
 *   …/ok                  200
 *   …/status/<code>       that status (with ?retryAfter=<s> a Retry-After header)
 *   …/statuses/<a>,<b>,…  the n-th request to this path gets the n-th status (the last one repeats)
 *   …/redirect            302 to http://127.0.0.1/ (?to=<url> elsewhere, ?status=<3xx> another status)
 *   …/huge/<code>         that status with a chunked body of 256 MB ("x"), written as fast as the client reads
 *   …/slow/<code>         that status with a body of 600 bytes, one byte every 100 ms (?chunked=1: no Content-Length;
 *                         ?retryAfter=<s> a Retry-After header)
 *   …/hang                no answer at all, until the client goes away
 * Every request is recorded; GET /__deliveries?prefix=<path prefix> lists them, and
 * GET /__streamed?path=<path> says how much of a streamed answer to that path was written.
 */
export async function startReceiver(): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const deliveries: Delivery[] = [];
  const answered = new Map<string, number>();
  const streamed = new Map<string, Streamed>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://receiver");
    if (url.pathname === "/__deliveries") {
      const prefix = url.searchParams.get("prefix") ?? "/";
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(deliveries.filter((d) => d.path.startsWith(prefix))));
      return;
    }
    if (url.pathname === "/__streamed") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(streamed.get(url.searchParams.get("path") ?? "") ?? null));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({
        path: url.pathname,
        method: req.method ?? "",
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
        remotePort: req.socket.remotePort ?? 0,
      });
      if (url.pathname.endsWith("/hang")) return;
      const huge = /\/huge\/(\d{3})$/.exec(url.pathname);
      const slow = /\/slow\/(\d{3})$/.exec(url.pathname);
      if (huge || slow) {
        const state: Streamed = { bytes: 0, finished: false, closed: false };
        streamed.set(url.pathname, state);
        res.on("close", () => (state.closed = true));
        res.statusCode = Number((huge ?? slow)![1]);
        const retryAfter = url.searchParams.get("retryAfter");
        if (retryAfter) res.setHeader("retry-after", retryAfter);
        if (huge) {
          const chunk = Buffer.alloc(64 * 1024, "x");
          const write = () => {
            while (!state.closed && state.bytes < 256 * 1024 * 1024) {
              state.bytes += chunk.length;
              if (!res.write(chunk)) return void res.once("drain", write);
            }
            if (!state.closed) {
              state.finished = true;
              res.end();
            }
          };
          write();
        } else {
          if (url.searchParams.get("chunked") !== "1") res.setHeader("content-length", "600");
          res.flushHeaders();
          const timer = setInterval(() => {
            if (state.closed) return void clearInterval(timer);
            res.write("x");
            if (++state.bytes === 600) {
              clearInterval(timer);
              state.finished = true;
              res.end();
            }
          }, 100);
        }
        return;
      }
      const status = /\/status\/(\d{3})$/.exec(url.pathname);
      const statuses = /\/statuses\/(\d{3}(?:,\d{3})*)$/.exec(url.pathname);
      if (statuses) {
        const codes = statuses[1]!.split(",").map(Number);
        const n = answered.get(url.pathname) ?? 0;
        answered.set(url.pathname, n + 1);
        res.statusCode = codes[Math.min(n, codes.length - 1)]!;
        res.end(`status ${res.statusCode} from the receiver`);
      } else if (status) {
        const retryAfter = url.searchParams.get("retryAfter");
        if (retryAfter) res.setHeader("retry-after", retryAfter);
        res.statusCode = Number(status[1]);
        res.end(`status ${status[1]} from the receiver`);
      } else if (url.pathname.endsWith("/redirect")) {
        res.statusCode = Number(url.searchParams.get("status") ?? 302);
        res.setHeader("location", url.searchParams.get("to") ?? "http://127.0.0.1/");
        res.end();
      } else {
        res.end("ok");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
