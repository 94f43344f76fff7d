/**
 * The loopback receiver of the http delivery benchmarks, in a Node process
 * of its own (so a BullMQ worker or the bridge in the bench's process does
 * not share its event loop). Every POST to `/r/<run>` is answered 200 "ok"
 * once its body has arrived, and noted: when, which job
 * (`Delayline-Job-Id`, if any) and whether it came on a new connection.
 * `GET /__count/<run>` says how many a run got so far; `GET /__runs/<run>`
 * returns what it got and forgets it.
 *
 * Started by {@link startDeliveryReceiver}; run as a script it listens on a
 * free loopback port and prints `{"port":…}` once.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** What one run's deliveries looked like at the receiver. */
export interface RunArrivals {
  count: number;
  /** Sockets whose first request was for this run. */
  connections: number;
  /** Arrival times (epoch ms), in order. */
  at: number[];
  /** The Delayline-Job-Id of each arrival ("" without one), in the same order. */
  ids: string[];
}

function serve(): void {
  const runs = new Map<string, RunArrivals>();
  const seen = new WeakSet<Socket>();
  const runOf = (name: string) => {
    let r = runs.get(name);
    if (!r) {
      r = { count: 0, connections: 0, at: [], ids: [] };
      runs.set(name, r);
    }
    return r;
  };
  const server = createServer((req: IncomingMessage, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (req.method === "GET" && path.startsWith("/__count/")) {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ count: runs.get(decodeURIComponent(path.slice("/__count/".length)))?.count ?? 0 }));
      return;
    }
    if (req.method === "GET" && path.startsWith("/__runs/")) {
      const name = decodeURIComponent(path.slice("/__runs/".length));
      const r = runOf(name);
      runs.delete(name);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(r));
      return;
    }
    const name = path.startsWith("/r/") ? decodeURIComponent(path.slice(3)) : "";
    const r = runOf(name);
    if (!seen.has(req.socket)) {
      seen.add(req.socket);
      r.connections++;
    }
    const id = req.headers["delayline-job-id"];
    req.resume();
    req.on("end", () => {
      r.count++;
      r.at.push(Date.now());
      r.ids.push(typeof id === "string" ? id : "");
      res.statusCode = 200;
      res.end("ok");
    });
  });
  // Kept-alive connections stay open between runs, as a web server's would.
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => {
    console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
  });
  process.on("SIGTERM", () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

export interface DeliveryReceiver {
  url: string;
  pid: number;
  /** How many deliveries `run` got so far. */
  count(run: string): Promise<number>;
  /** What `run` got, forgetting it. */
  arrivals(run: string): Promise<RunArrivals>;
  stop(): Promise<void>;
}

/** Starts the receiver in a child process. */
export async function startDeliveryReceiver(): Promise<DeliveryReceiver> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url)], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, DELIVERY_RECEIVER: "1" },
  });
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`the delivery receiver exited (${code}) before listening`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    url,
    pid: child.pid!,
    async count(run) {
      const res = await fetch(`${url}/__count/${encodeURIComponent(run)}`);
      return ((await res.json()) as { count: number }).count;
    },
    async arrivals(run) {
      const res = await fetch(`${url}/__runs/${encodeURIComponent(run)}`);
      return (await res.json()) as RunArrivals;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
    },
  };
}

if (process.env.DELIVERY_RECEIVER === "1" && process.argv[1] === fileURLToPath(import.meta.url)) serve();
