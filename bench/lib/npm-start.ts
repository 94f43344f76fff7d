/**
 * `npm start` as the deployment-default benchmarks run it: `dev/start.ts`
 * exactly (redis-server, the REST bridge, the Worker of wrangler.toml in
 * workerd through miniflare, the cron driver), started fresh with its own data dir in a
 * temp dir and the given settings in its environment, stopped with SIGTERM.
 * Unlike bench/lib/delayline.ts it runs the production Worker (no bench
 * handlers) with its own Redis and bridge, so deliveries go over http to a
 * loopback receiver ({@link startReceiver}).
 *
 * With `countRequests`, bench/lib/count-requests.ts is preloaded into the
 * stack's Node process and counts the HTTP requests the bridge serves
 * (read with {@link NpmStart.bridgeRequests}).
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../dev/ports.js";
import { Delayline } from "../../src/client/index.js";
import { SETTING_NAMES } from "../../src/env.js";

const root = join(import.meta.dirname, "../..");
export const TOKEN = "bench-token-123";
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A JSON line the Worker logged (tick round, tick ended, job failed, …), with when the bench read it. */
export interface LoggedLine {
  at: number;
  msg: string;
  [key: string]: unknown;
}

export interface NpmStart {
  url: string;
  port: number;
  redisPort: number;
  bridgePort: number;
  client: Delayline;
  /** Everything the stack printed, timestamped (bench/results/tmp/, git-ignored). */
  logFile: string;
  /** The Worker's JSON log lines so far. */
  lines: LoggedLine[];
  /** Requests the bridge served since the previous call, each [epoch ms, path] (needs `countRequests`). */
  bridgeRequests(): Promise<Array<[number, string]>>;
  stop(): Promise<void>;
}

export async function startNpmStart(options: {
  /** Names the log file. */
  name: string;
  /** Settings for the Worker (any name of src/env.ts). */
  settings: Record<string, string>;
  countRequests?: boolean;
}): Promise<NpmStart> {
  const [port, redisPort, bridgePort] = [await freePort(), await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), `delayline-${options.name}-`));
  const tmp = join(root, "bench/results/tmp");
  mkdirSync(tmp, { recursive: true });
  const logFile = join(tmp, `${options.name}-${new Date().toISOString().replace(/[:.]/g, "-")}.log`);
  const requestLog = join(dataDir, "bridge-requests.json");
  // Only the settings asked for: anything else set in this shell (TICK_*, …) must not leak into a deployment-defaults run.
  const env: NodeJS.ProcessEnv = {};
  const drop = new Set<string>([...SETTING_NAMES, "PORT", "REDIS_PORT", "BRIDGE_PORT", "REDIS_URL", "DELAYLINE_DATA_DIR", "WRANGLER_CONFIG", "BRIDGE_LOG"]);
  for (const [k, v] of Object.entries(process.env)) if (!drop.has(k)) env[k] = v;
  Object.assign(env, options.settings, {
    PORT: String(port),
    REDIS_PORT: String(redisPort),
    BRIDGE_PORT: String(bridgePort),
    DELAYLINE_DATA_DIR: dataDir,
    DELAYLINE_TOKEN: TOKEN,
  });
  const args = ["--import", "tsx"];
  if (options.countRequests) {
    args.push("--import", "./bench/lib/count-requests.ts");
    env.BENCH_COUNT_PORT = String(bridgePort);
    env.BENCH_REQUEST_LOG = requestLog;
  }
  appendFileSync(logFile, `# ${options.name}: settings ${JSON.stringify(options.settings)}\n`);
  // The Worker's host prints its console output (the tick's JSON lines) only at log level "log" (wrangler's levels).
  env.WRANGLER_LOG_LEVEL = process.env.WRANGLER_LOG_LEVEL || "log";
  const child = spawn(process.execPath, [...args, "dev/start.ts"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  const lines: LoggedLine[] = [];
  let tail = "";
  let partial = "";
  let ready = false;
  const onData = (c: Buffer) => {
    const at = Date.now();
    const text = c.toString();
    tail = (tail + text).slice(-20_000);
    appendFileSync(logFile, text.replace(/^(?=.)/gm, `${at} `));
    if (text.includes("[delayline] ready")) ready = true;
    const parts = (partial + text).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) {
      const i = line.indexOf('{"level"');
      if (i < 0) continue;
      try {
        const parsed = JSON.parse(line.slice(i)) as { msg?: string };
        if (typeof parsed.msg === "string") lines.push({ ...parsed, at, msg: parsed.msg });
      } catch {
        // not one of ours
      }
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(20_000)]);
      if (child.exitCode === null && child.signalCode === null) appendFileSync(logFile, `# did not exit within 20 s of SIGTERM\n`);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 120_000;
  while (!ready) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`npm start (${options.name}) did not become ready:\n${tail}`);
    }
    await sleep(100);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    redisPort,
    bridgePort,
    client: new Delayline({ baseUrl: url, token: TOKEN }),
    logFile,
    lines,
    async bridgeRequests() {
      if (!options.countRequests) throw new Error("started without countRequests");
      rmSync(requestLog, { force: true });
      child.kill("SIGUSR2");
      for (let i = 0; i < 100 && !existsSync(requestLog); i++) await sleep(50);
      return JSON.parse(readFileSync(requestLog, "utf8")) as Array<[number, string]>;
    },
    stop,
  };
}

/**
 * A loopback HTTP receiver that notes when each delivery (by Delayline-Job-Id)
 * arrived, and every request's arrival with its headers.
 */
export async function startReceiver() {
  const arrivals = new Map<string, number[]>();
  const requests: Array<{ at: number; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    const at = Date.now();
    const id = String(req.headers["delayline-job-id"]);
    req.resume();
    req.on("end", () => {
      const seen = arrivals.get(id);
      if (seen) seen.push(at);
      else arrivals.set(id, [at]);
      requests.push({ at, headers: req.headers });
      res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** The machine and its load (uptime's load averages), for the results. */
export function machine() {
  const [l1, l5, l15] = loadavg().map((l) => Math.round(l * 100) / 100);
  return { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadavg: { "1m": l1!, "5m": l5!, "15m": l15! } };
}

/** Runs `f` with at most `n` in flight over `items`. */
export async function pool<T>(items: T[], n: number, f: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await f(items[i]!, i);
      }
    }),
  );
}
