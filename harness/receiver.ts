/**
 * One loopback HTTP receiver for deliveries, made of parts: each part may serve control paths (`GET /__…`, read by
 * a caller in another process), note what arrives, and answer it. The first part that answers a request answers it;
 * with none, it gets 200 "ok". The parts here are what test/, bench/ and chaos/ deliver to.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A request as the parts see it. */
interface Arrival {
  req: IncomingMessage;
  url: URL;
  /** When its headers arrived (epoch ms). */
  at: number;
  /** When its body had arrived (epoch ms). */
  endedAt: number;
  /** The body, if a part asked for it ({@link ReceiverPart.wantsBody}); else empty. */
  body: Buffer;
  /** Whether it is the first request on its connection. */
  newConnection: boolean;
}

export interface ReceiverPart {
  /** The body is read into {@link Arrival.body} (else it is drained unread). */
  wantsBody?: boolean;
  /** Serves a control path, before any body is read; true if it did. */
  control?(url: URL, res: ServerResponse): boolean;
  /** Notes a request once its body has arrived, before it is answered. */
  note?(arrival: Arrival): void;
  /** Answers a request (now or later); true if it did (or will). */
  answer?(arrival: Arrival, res: ServerResponse): boolean;
}

export interface ReceiverOptions {
  /** How long an idle kept-alive connection stays open, ms. Default Node's (5 000). */
  keepAliveTimeoutMs?: number;
}

export interface Receiver {
  url: string;
  server: Server;
  close(): Promise<void>;
}

function json(res: ServerResponse, value: unknown): true {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(value));
  return true;
}

export async function startReceiver(parts: ReceiverPart[], options: ReceiverOptions = {}): Promise<Receiver> {
  const wantsBody = parts.some((p) => p.wantsBody);
  const seen = new WeakSet<Socket>();
  const server = createServer((req, res) => {
    const at = Date.now();
    const url = new URL(req.url ?? "/", "http://receiver");
    if (req.method === "GET" && url.pathname.startsWith("/__") && parts.some((p) => p.control?.(url, res))) return;
    const newConnection = !seen.has(req.socket);
    seen.add(req.socket);
    const chunks: Buffer[] = [];
    if (wantsBody) req.on("data", (c: Buffer) => chunks.push(c));
    else req.resume();
    req.on("end", () => {
      const arrival: Arrival = { req, url, at, endedAt: Date.now(), body: Buffer.concat(chunks), newConnection };
      for (const p of parts) p.note?.(arrival);
      if (parts.some((p) => p.answer?.(arrival, res))) return;
      res.statusCode = 200;
      res.end("ok");
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** One request as {@link requestLog} keeps it. */
export interface Delivery {
  path: string;
  method: string;
  headers: Record<string, string>;
  /** Header names and values as they arrived, in order: shows a header sent twice, which `headers` would join. */
  rawHeaders: string[];
  body: string;
  /** When its body had arrived. */
  at: number;
  /** The client's port: deliveries on one kept-alive connection share it. */
  remotePort: number;
}

/** Keeps every request whole; `GET /__deliveries?prefix=<path prefix>` lists them. */
export function requestLog(): ReceiverPart & { deliveries: Delivery[] } {
  const deliveries: Delivery[] = [];
  return {
    deliveries,
    wantsBody: true,
    control(url, res) {
      if (url.pathname !== "/__deliveries") return false;
      const prefix = url.searchParams.get("prefix") ?? "/";
      return json(
        res,
        deliveries.filter((d) => d.path.startsWith(prefix)),
      );
    },
    note({ req, url, body, endedAt }) {
      deliveries.push({
        path: url.pathname,
        method: req.method ?? "",
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        rawHeaders: req.rawHeaders,
        body: body.toString("utf8"),
        at: endedAt,
        remotePort: req.socket.remotePort ?? 0,
      });
    },
  };
}

/** How much of a streamed answer (…/huge, …/slow) was written, and whether all of it was before the client went away. */
interface Streamed {
  bytes: number;
  finished: boolean;
  closed: boolean;
}

/**
 * Answers by the path:
 *   …/ok                  200
 *   …/status/<code>       that status (with ?retryAfter=<s> a Retry-After header)
 *   …/statuses/<a>,<b>,…  the n-th request to this path gets the n-th status (the last one repeats)
 *   …/redirect            302 to http://127.0.0.1/ (?to=<url> elsewhere, ?status=<3xx> another status)
 *   …/huge/<code>         that status with a chunked body of 256 MB ("x"), written as fast as the client reads
 *   …/slow/<code>         that status with a body of 600 bytes, one byte every 100 ms (?chunked=1: no Content-Length;
 *                         ?retryAfter=<s> a Retry-After header)
 *   …/hang                no answer at all, until the client goes away
 *   anything else         200 "ok"
 * `GET /__streamed?path=<path>` says how much of a streamed answer to that path was written.
 */
export function answersByPath(): ReceiverPart {
  const answered = new Map<string, number>();
  const streamed = new Map<string, Streamed>();
  return {
    control(url, res) {
      if (url.pathname !== "/__streamed") return false;
      return json(res, streamed.get(url.searchParams.get("path") ?? "") ?? null);
    },
    answer({ url }, res) {
      if (url.pathname.endsWith("/hang")) return true;
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
        return true;
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
      return true;
    },
  };
}

/** One answered attempt as {@link failingAttempts} records it. */
export interface Attempt {
  attempt: number;
  /** When it was answered. */
  at: number;
  ok: boolean;
}

/**
 * Whether this attempt of this job fails: a hash of id and attempt under `percent`, so a run's failures are decided
 * by the ids alone and every count that follows from them can be predicted exactly.
 */
export function failsAttempt(id: string, attempt: number, percent: number): boolean {
  if (percent <= 0) return false;
  if (percent >= 100) return true;
  const h = createHash("sha256").update(`${id}:${attempt}`).digest().readUInt32BE(0);
  return h % 10_000 < percent * 100;
}

/**
 * Answers `/<anything>?fail=<percent>&delay=<ms>`: 500 for the attempts {@link failsAttempt} picks (by
 * Delayline-Job-Id and Delayline-Attempt), else 200, after `delay` ms; records each as answered, by job id.
 */
export function failingAttempts(): ReceiverPart & { byId: Map<string, Attempt[]> } {
  const byId = new Map<string, Attempt[]>();
  return {
    byId,
    answer({ req, url }, res) {
      const id = String(req.headers["delayline-job-id"] ?? "");
      const attempt = Number(req.headers["delayline-attempt"] ?? 0);
      const ok = !failsAttempt(id, attempt, Number(url.searchParams.get("fail") ?? 0));
      const delay = Number(url.searchParams.get("delay") ?? 0);
      const answer = () => {
        // Recorded as answered: a delivery the Worker may or may not have seen settle.
        const list = byId.get(id) ?? [];
        list.push({ attempt, at: Date.now(), ok });
        byId.set(id, list);
        res.statusCode = ok ? 200 : 500;
        res.end(ok ? "ok" : "chaos says no");
      };
      if (delay > 0) setTimeout(answer, delay);
      else answer();
      return true;
    },
  };
}

/**
 * Notes when each request's headers arrived, by Delayline-Job-Id (`arrivals`, every arrival of a job in order) and
 * in order with its headers (`requests`).
 */
export function jobArrivals(): ReceiverPart & { arrivals: Map<string, number[]>; requests: Array<{ at: number; headers: IncomingMessage["headers"] }> } {
  const arrivals = new Map<string, number[]>();
  const requests: Array<{ at: number; headers: IncomingMessage["headers"] }> = [];
  return {
    arrivals,
    requests,
    note({ req, at }) {
      const id = String(req.headers["delayline-job-id"]);
      const seen = arrivals.get(id);
      if (seen) seen.push(at);
      else arrivals.set(id, [at]);
      requests.push({ at, headers: req.headers });
    },
  };
}

/** What one run's deliveries looked like at the receiver ({@link runArrivals}). */
export interface RunArrivals {
  count: number;
  /** Connections whose first request was for this run. */
  connections: number;
  /** When each body had arrived (epoch ms), in order. */
  at: number[];
  /** The Delayline-Job-Id of each arrival ("" without one), in the same order. */
  ids: string[];
}

/**
 * Notes every request to `/r/<run>` under its run: when, which job and whether it came on a new connection.
 * `GET /__count/<run>` says how many a run got so far; `GET /__runs/<run>` returns what it got and forgets it.
 */
export function runArrivals(): ReceiverPart {
  const runs = new Map<string, RunArrivals>();
  const runOf = (name: string) => {
    let r = runs.get(name);
    if (!r) {
      r = { count: 0, connections: 0, at: [], ids: [] };
      runs.set(name, r);
    }
    return r;
  };
  return {
    control(url, res) {
      const path = url.pathname;
      if (path.startsWith("/__count/")) return json(res, { count: runs.get(decodeURIComponent(path.slice("/__count/".length)))?.count ?? 0 });
      if (!path.startsWith("/__runs/")) return false;
      const name = decodeURIComponent(path.slice("/__runs/".length));
      const r = runOf(name);
      runs.delete(name);
      return json(res, r);
    },
    note({ req, url, endedAt, newConnection }) {
      const r = runOf(url.pathname.startsWith("/r/") ? decodeURIComponent(url.pathname.slice(3)) : "");
      if (newConnection) r.connections++;
      const id = req.headers["delayline-job-id"];
      r.count++;
      r.at.push(endedAt);
      r.ids.push(typeof id === "string" ? id : "");
    },
  };
}
