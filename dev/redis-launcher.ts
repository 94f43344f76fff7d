import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "./ports.js";

/** Options of a local redis-server. */
export interface RedisLauncherOptions {
  /** Port; 0 or unset picks a free one. */
  port?: number;
  /**
   * Directory for the append-only file. Unset means a fresh temp dir removed
   * on stop (tests); `npm start` passes `.data/redis` so a restart loses nothing.
   */
  dataDir?: string;
  /** `always` makes an acknowledged write survive a crash. Default `always`. */
  appendfsync?: "always" | "everysec" | "no";
  /** How long to wait for the first PONG. Default 10,000 ms. */
  startTimeoutMs?: number;
  /** More `--name value` arguments for redis-server (a cluster node's settings). Default none. */
  extraArgs?: string[];
}

export interface RunningRedis {
  url: string;
  port: number;
  pid: number;
  dataDir: string;
  /**
   * Resolves once redis-server has exited, however it did (its stop, `SHUTDOWN`, a kill), with how: `code 0`,
   * `SIGKILL`, … Never rejects.
   */
  exited: Promise<string>;
  /** SIGTERM (SIGKILL after 5 s), then removes a temp data dir. */
  stop(): Promise<void>;
}

const INSTALL_HELP = [
  "redis-server was not found on PATH.",
  "Install it:           sudo apt-get install -y redis-server   (or: brew install redis)",
  "or use an existing one: REDIS_URL=redis://host:port npm start",
  "or use Upstash:       UPSTASH_REDIS_REST_URL=… UPSTASH_REDIS_REST_TOKEN=… npm start (skips local Redis and the bridge)",
].join("\n");

function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Makes sure `redis-server` exists: as root with apt available it installs
 * Debian's package; otherwise it fails with what to do instead.
 */
export function ensureRedisServer(log: (line: string) => void = console.log): void {
  if (hasRedisServer()) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const hasApt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (!isRoot || !hasApt) throw new Error(INSTALL_HELP);
  log("redis-server is missing; installing Debian's redis-server package (apt-get)…");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const install = spawnSync("apt-get", ["install", "-y", "-qq", "redis-server"], { stdio: "inherit", env });
  if (update.status !== 0 || install.status !== 0 || !hasRedisServer()) {
    throw new Error(`installing redis-server with apt-get failed.\n${INSTALL_HELP}`);
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolvePing) => {
    const socket = connect({ port, host: "127.0.0.1" });
    let answer = "";
    const done = (ok: boolean) => {
      socket.destroy();
      resolvePing(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.on("data", (chunk) => {
      answer += chunk.toString("latin1");
      // -LOADING means the AOF is still being replayed: not ready yet.
      if (answer.includes("\r\n")) done(answer.startsWith("+PONG"));
    });
    socket.once("connect", () => socket.write("PING\r\n"));
  });
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((res) => {
    const timer = setTimeout(() => res(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      res(true);
    });
  });
}

/** Starts redis-server on 127.0.0.1 and resolves once it answers PING. */
export async function startRedis(options: RedisLauncherOptions = {}): Promise<RunningRedis> {
  ensureRedisServer();
  const temp = options.dataDir === undefined;
  const dataDir = temp ? mkdtempSync(join(tmpdir(), "delayline-redis-")) : resolve(options.dataDir!);
  mkdirSync(dataDir, { recursive: true });
  const port = options.port || (await freePort());
  const child = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dataDir,
      "--appendonly",
      "yes",
      "--appendfsync",
      options.appendfsync ?? "always",
      "--save",
      "",
      "--daemonize",
      "no",
      "--logfile",
      "",
      "--loglevel",
      "warning",
      ...(options.extraArgs ?? []),
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const exited = new Promise<string>((r) => child.once("exit", (code, signal) => r(signal ?? `code ${code}`)));
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  // A crash of the parent must not leave redis-server behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const stop = async () => {
    process.off("exit", killOnExit);
    child.kill("SIGTERM");
    if (!(await waitForExit(child, 5_000))) {
      child.kill("SIGKILL");
      await waitForExit(child, 5_000);
    }
    if (temp) rmSync(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 10_000);
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not start on port ${port}: ${stderr.trim() || "no answer to PING"}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `redis://127.0.0.1:${port}`, port, pid: child.pid!, dataDir, exited, stop };
}
