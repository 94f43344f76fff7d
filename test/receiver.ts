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
}

/**
 * A local HTTP receiver for delivery tests. The path says how to answer:
 *   …/ok                  200
 *   …/status/<code>       that status (with ?retryAfter=<s> a Retry-After header)
 *   …/statuses/<a>,<b>,…  the n-th request to this path gets the n-th status (the last one repeats)
 *   …/redirect            302 to http://127.0.0.1/ (?to=<url> elsewhere, ?status=<3xx> another status)
 * Every request is recorded; GET /__deliveries?prefix=<path prefix> lists them.
 */
export async function startReceiver(): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const deliveries: Delivery[] = [];
  const answered = new Map<string, number>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://receiver");
    if (url.pathname === "/__deliveries") {
      const prefix = url.searchParams.get("prefix") ?? "/";
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(deliveries.filter((d) => d.path.startsWith(prefix))));
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
      });
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
