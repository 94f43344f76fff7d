/**
 * The {@link runArrivals} receiver in a Node process of its own, so that a BullMQ worker or a bridge in the
 * caller's process does not share its event loop (the http delivery benchmarks). Kept-alive connections stay open
 * a minute between runs, as a web server's would.
 *
 * Started by {@link startReceiverProcess}; run as a script it listens on a free loopback port and prints
 * `{"port":…}` once.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { runArrivals, startReceiver, type RunArrivals } from "./receiver.js";
import { sleep } from "./util.js";

export interface ReceiverProcess {
  url: string;
  pid: number;
  /** How many deliveries `run` got so far. */
  count(run: string): Promise<number>;
  /** What `run` got, forgetting it. */
  arrivals(run: string): Promise<RunArrivals>;
  stop(): Promise<void>;
}

async function serve(): Promise<void> {
  const receiver = await startReceiver([runArrivals()], { keepAliveTimeoutMs: 60_000 });
  console.log(JSON.stringify({ port: Number(new URL(receiver.url).port) }));
  process.on("SIGTERM", () => void receiver.close().then(() => process.exit(0)));
  // The parent holds the other end of stdin: when it goes, even by a crash
  // that never reached stop(), the pipe ends and so does this process.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}

/** Starts the receiver in a child process; deliveries for a run go to `${url}/r/<run>`. */
export async function startReceiverProcess(): Promise<ReceiverProcess> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url)], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, DELAYLINE_RECEIVER_PROCESS: "1" },
  });
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`the receiver process exited (${code}) before listening`)));
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
        await Promise.race([exited, sleep(5_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
    },
  };
}

if (process.env.DELAYLINE_RECEIVER_PROCESS === "1" && process.argv[1] === fileURLToPath(import.meta.url)) await serve();
