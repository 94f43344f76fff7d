/**
 * The one way test/, bench/ and chaos/ start the local stack as `npm start` runs it: `dev/start.ts` unchanged
 * (redis-server, the REST bridge, the Worker in workerd through miniflare, the cron driver), on free ports with a
 * data dir of its own in a temp dir, ready once it logs `[delayline] ready` (which it does only after /healthz
 * answered), stopped with the whole process tree it started.
 *
 * With `countRequests`, harness/count-requests.ts is preloaded into the stack's Node process and counts the HTTP
 * requests the bridge serves (read with {@link NpmStart.bridgeRequests}).
 *
 * With `localShards`, the stack runs that many shards (DELAYLINE_LOCAL_SHARDS, dev/local-shards.ts), each a
 * redis-server and a bridge of its own, listed in {@link NpmStart.shards} as npm start logged them.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../dev/ports.js";
import { descendantsOf, isAlive, signalTree } from "../dev/process-tree.js";
import { Delayline } from "../src/client/index.js";
import { SETTING_NAMES } from "../src/env.js";
import { sleep } from "./util.js";

const root = join(import.meta.dirname, "..");
const READY = "[delayline] ready";

/** Where the stack's Redis is: the caller's bridge (Upstash protocol), or a Redis the stack bridges itself. */
export type StackRedis = { restUrl: string; restToken: string } | { redisUrl: string };

/** One of the stack's own shards, as npm start logged it: its redis-server (stop it to take the shard down) and its bridge. */
export interface StackShard {
  /** `main`, then `s2`, `s3`, … */
  name: string;
  redisPort: number;
  redisPid: number;
  bridgeUrl: string;
}

/** A JSON line the Worker logged (tick round, tick ended, job failed, …), with when the harness read it. */
export interface LoggedLine {
  at: number;
  msg: string;
  [key: string]: unknown;
}

export interface NpmStartOptions {
  /** Names the temp data dir and heads the log file. Default "stack". */
  name?: string;
  /** The stack's environment on top of this shell's: Worker settings (any name of src/env.ts), WRANGLER_LOG_LEVEL, … Default none. */
  settings?: Record<string, string>;
  /**
   * Leaves out the settings and stack variables this shell has set (TICK_*, PORT, REDIS_URL, WRANGLER_CONFIG, …), so
   * only `settings` reach the Worker: a deployment-defaults run must not inherit them. Default false (inherit all).
   */
  onlyGivenSettings?: boolean;
  /** The Worker's wrangler config (WRANGLER_CONFIG), relative to the repository root. Default npm start's own (wrangler.toml). */
  workerConfig?: string;
  /** Redis outside the stack. Default: the stack's own redis-server and bridge, on free ports named in {@link NpmStart}. */
  redis?: StackRedis;
  /**
   * How many shards of its own the stack runs (DELAYLINE_LOCAL_SHARDS, 1–8): `main` on the free ports in
   * {@link NpmStart}, the others on ports npm start picks, all in {@link NpmStart.shards}. Not with `redis`. Default 1.
   */
  localShards?: number;
  /** The API token. Default a fresh random one. */
  token?: string;
  /** The stack's data dir (DELAYLINE_DATA_DIR), removed by stop() all the same. Default a fresh temp dir. */
  dataDir?: string;
  /**
   * "npm" runs `npm start`, as a user does; "node" runs what its script runs (`node --import tsx dev/start.ts`) with
   * nothing in between, which a preload (`countRequests`) needs. Default "npm".
   */
  via?: "npm" | "node";
  /** Preloads harness/count-requests.ts (needs `via: "node"`); with `localShards`, it counts `main`'s bridge alone. Default false. */
  countRequests?: boolean;
  /** Appends everything the stack prints to this file, each line prefixed with when it came (epoch ms). Default none. */
  logFile?: string;
  /** The Worker's log level (WRANGLER_LOG_LEVEL, wrangler's levels); its host prints the tick's JSON lines only at "log". Default npm start's (warn). */
  logLevel?: string;
  /** Collects the Worker's JSON log lines into {@link NpmStart.lines}. Default false. */
  jsonLines?: boolean;
  /** Called with every line the stack prints. Default none. */
  onLine?: (line: string) => void;
  /** How much of the output {@link NpmStart.output} keeps, in characters (the last ones). Default all of it. */
  keepOutputChars?: number;
  /** How long to wait for the ready line. Default 90 000 ms. */
  readyTimeoutMs?: number;
  /** How long stop() waits for the process tree to exit after SIGTERM before it kills what is left. Default 10 000 ms. */
  stopWaitMs?: number;
}

export interface NpmStart {
  url: string;
  port: number;
  /** The stack's own redis-server and bridge (0 when `redis` put them elsewhere); with `localShards`, `main`'s. */
  redisPort: number;
  bridgePort: number;
  /** Every shard of the stack's own (with `localShards`, `main` first), or none when `redis` put Redis elsewhere. */
  shards: StackShard[];
  token: string;
  /** Its data dir (DELAYLINE_DATA_DIR). */
  dataDir: string;
  client: Delayline;
  /** The spawned process (every process of the stack descends from it). */
  pid: number;
  /** What the stack printed so far (see `keepOutputChars`). */
  output(): string;
  /** The file the output is appended to, if one was asked for. */
  logFile: string | undefined;
  /** The Worker's JSON log lines so far (needs `jsonLines`). */
  lines: LoggedLine[];
  /** Requests the bridge served since the previous call, each [epoch ms, path, bytes of the answer] (needs `countRequests`). */
  bridgeRequests(): Promise<Array<[number, string, number]>>;
  /** Ends every process the stack started, forcefully if need be, and removes its data dir. */
  stop(): Promise<void>;
}

const STACK_VARIABLES = ["PORT", "REDIS_PORT", "BRIDGE_PORT", "REDIS_URL", "DELAYLINE_DATA_DIR", "DELAYLINE_LOCAL_SHARDS", "WRANGLER_CONFIG", "BRIDGE_LOG"];

/** npm start's lines naming a shard's redis-server and its bridge (dev/start.ts); without `shard "…": `, the one shard, main. */
const REDIS_LINE = /^\[delayline\] (?:shard "([a-z0-9-]+)": )?redis-server on redis:\/\/127\.0\.0\.1:(\d+) \(pid (\d+)/;
const BRIDGE_LINE = /^\[delayline\] (?:shard "([a-z0-9-]+)": )?REST bridge on (\S+)/;

/** Notes in `shards` what `line` says of a shard of the stack's own, if it is one of those lines. */
function noteShard(shards: Map<string, StackShard>, line: string): void {
  const shard = (name = "main") => shards.get(name) ?? shards.set(name, { name, redisPort: 0, redisPid: 0, bridgeUrl: "" }).get(name)!;
  const redis = REDIS_LINE.exec(line);
  if (redis) Object.assign(shard(redis[1]), { redisPort: Number(redis[2]), redisPid: Number(redis[3]) });
  const bridge = BRIDGE_LINE.exec(line);
  if (bridge) shard(bridge[1]).bridgeUrl = bridge[2]!;
}

export async function startNpmStart(options: NpmStartOptions = {}): Promise<NpmStart> {
  const name = options.name ?? "stack";
  const via = options.via ?? "npm";
  if (options.countRequests && via !== "node") throw new Error("countRequests preloads into dev/start.ts's process: it needs via: node");
  const own = options.redis === undefined;
  if (options.localShards !== undefined && !own) throw new Error("localShards runs the stack's own redis-servers: it cannot go with redis");
  const port = await freePort();
  const [redisPort, bridgePort] = own ? [await freePort(), await freePort()] : [0, 0];
  const token = options.token ?? `stack-${randomUUID()}`;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), `delayline-${name}-`));
  const requestLog = join(dataDir, "bridge-requests.json");

  const env: NodeJS.ProcessEnv = {};
  const drop = new Set<string>(options.onlyGivenSettings ? [...SETTING_NAMES, ...STACK_VARIABLES] : []);
  for (const [k, v] of Object.entries(process.env)) if (!drop.has(k)) env[k] = v;
  Object.assign(env, { PORT: String(port), DELAYLINE_DATA_DIR: dataDir, DELAYLINE_TOKEN: token });
  const redis = options.redis;
  if (redis === undefined) Object.assign(env, { REDIS_PORT: String(redisPort), BRIDGE_PORT: String(bridgePort) });
  else if ("restUrl" in redis) Object.assign(env, { UPSTASH_REDIS_REST_URL: redis.restUrl, UPSTASH_REDIS_REST_TOKEN: redis.restToken });
  else {
    env.REDIS_URL = redis.redisUrl;
    delete env.UPSTASH_REDIS_REST_URL;
    delete env.UPSTASH_REDIS_REST_TOKEN;
  }
  if (options.localShards !== undefined) env.DELAYLINE_LOCAL_SHARDS = String(options.localShards);
  if (options.workerConfig) env.WRANGLER_CONFIG = options.workerConfig;
  if (options.logLevel) env.WRANGLER_LOG_LEVEL = options.logLevel;
  Object.assign(env, options.settings);

  const args = ["--import", "tsx"];
  if (options.countRequests) {
    args.push("--import", "./harness/count-requests.ts");
    env.BENCH_COUNT_PORT = String(bridgePort);
    env.BENCH_REQUEST_LOG = requestLog;
  }
  const { logFile } = options;
  if (logFile) appendFileSync(logFile, `# ${name}: settings ${JSON.stringify(options.settings ?? {})}\n`);
  const child =
    via === "npm"
      ? spawn("npm", ["start"], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(process.execPath, [...args, "dev/start.ts"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });

  const lines: LoggedLine[] = [];
  const shards = new Map<string, StackShard>();
  const keep = options.keepOutputChars ?? Number.POSITIVE_INFINITY;
  let output = "";
  let partial = "";
  let ready = false;
  const onData = (c: Buffer) => {
    const at = Date.now();
    const text = c.toString();
    output += text;
    if (output.length > keep) output = output.slice(-keep);
    if (logFile) appendFileSync(logFile, text.replace(/^(?=.)/gm, `${at} `));
    const parts = (partial + text).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) {
      if (line.includes(READY)) ready = true;
      else if (!ready) noteShard(shards, line);
      options.onLine?.(line);
      if (!options.jsonLines) continue;
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

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const tree = [child.pid!, ...descendantsOf(child.pid!).map((p) => p.pid)];
      if (child.exitCode === null && child.signalCode === null) signalTree(child.pid!, "SIGTERM");
      const waitMs = options.stopWaitMs ?? 10_000;
      for (let waited = 0; waited < waitMs && tree.some(isAlive); waited += 100) await sleep(100);
      const left = tree.filter(isAlive);
      if (left.length > 0 && logFile) appendFileSync(logFile, `# ${left.length} process(es) still running ${waitMs} ms after SIGTERM: killed\n`);
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone meanwhile */
        }
      }
      rmSync(dataDir, { recursive: true, force: true });
    })());

  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const deadline = Date.now() + readyTimeoutMs;
  while (!ready) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`npm start (${name}) did not become ready within ${readyTimeoutMs / 1000} s:\n${output.slice(-20_000)}`);
    }
    await sleep(100);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    redisPort,
    bridgePort,
    shards: own ? [...shards.values()] : [],
    token,
    dataDir,
    client: new Delayline({ baseUrl: url, token }),
    pid: child.pid!,
    output: () => output,
    logFile,
    lines,
    async bridgeRequests() {
      if (!options.countRequests) throw new Error("started without countRequests");
      rmSync(requestLog, { force: true });
      // The preload listens in dev/start.ts's process, which via "node" is the child itself.
      child.kill("SIGUSR2");
      for (let i = 0; i < 100 && !existsSync(requestLog); i++) await sleep(50);
      return JSON.parse(readFileSync(requestLog, "utf8")) as Array<[number, string, number]>;
    },
    stop,
  };
}

/**
 * Runs `npm start` with `env` over this process's environment for a start that is meant to refuse (a bad setting, a
 * data directory or port in use): resolves with its exit code and everything it printed once it exits, or with
 * "still running" after `waitMs` (default 25 s), when its process tree is killed.
 */
export async function startExpectingExit(env: Record<string, string>, waitMs = 25_000): Promise<{ code: number | null | "still running"; output: string }> {
  const child = spawn("npm", ["start"], { cwd: root, env: { ...process.env, ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c));
  child.stderr!.on("data", (c: Buffer) => (output += c));
  try {
    const code = await Promise.race([
      new Promise<number | null>((r) => child.once("exit", (c) => r(c))),
      new Promise<"still running">((r) => setTimeout(() => r("still running"), waitMs)),
    ]);
    return { code, output };
  } finally {
    if (child.exitCode === null && child.signalCode === null) signalTree(child.pid!, "SIGKILL");
  }
}
