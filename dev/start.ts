/**
 * `npm start`: the whole pipeline on this machine — redis-server, the REST
 * bridge, the Worker in workerd (through miniflare, dev/worker-host.ts) and a
 * cron driver. Ctrl-C or SIGTERM stops every child; nothing is left running.
 * A redis-server that exits (a crash, `redis-cli shutdown`, a kill) is logged
 * and stays down; npm start keeps running: its shard's calls answer 503 until
 * npm start is restarted (its append-only file keeps what it acknowledged).
 *
 * Environment:
 *   PORT                  Worker port (default 8787)
 *   DELAYLINE_TOKEN       API token (default dev-token)
 *   DELAYLINE_LOCAL_SHARDS  N (1–8, default 1): N shards (dev/local-shards.ts), each a redis-server and a bridge of
 *                         its own: `main` (data in <DELAYLINE_DATA_DIR>/redis, as with one), then s2, s3, … (data in
 *                         <DELAYLINE_DATA_DIR>/redis-<name>, keys under dl:{<name>}); the Worker gets DELAYLINE_SHARDS
 *                         naming their bridges and a token binding each (SHARD_S2_TOKEN, …). Refused with REDIS_URL,
 *                         Upstash or DELAYLINE_SHARDS. The ready banner lists each shard's ports and redis pid.
 *   REDIS_PORT            local redis-server port (default: a free one); with local shards, main's (the others: free ones)
 *   BRIDGE_PORT           REST bridge port (default: a free one); with local shards, main's (the others: free ones)
 *   BRIDGE_MAX_REQUEST_BYTES, BRIDGE_MAX_REPLY_BYTES, BRIDGE_MAX_RECORD_BYTES, BRIDGE_COMMANDS_PER_SECOND,
 *   BRIDGE_MAX_REQUESTS   the bridge's Upstash limits (dev/bridge/main.ts; default Upstash's, 0 turns one off), each
 *                         shard's bridge its own (a lowered request limit is passed to the Worker as REDIS_MAX_REQUEST_BYTES too)
 *   DELAYLINE_DATA_DIR    where Redis keeps its append-only file (default .data); one npm start per
 *                         directory (dev/data-dir-lock.ts): a second one exits at once, naming the first one's pid
 *   REDIS_URL             use this Redis instead of starting one
 *   UPSTASH_REDIS_REST_URL + UPSTASH_REDIS_REST_TOKEN   use Upstash: no local Redis or bridge
 *   WRANGLER_CONFIG       the Worker's wrangler config (default wrangler.toml; the benchmarks run bench/worker/wrangler.toml)
 *   any other setting (TICK_POLL_MS, …) is passed to the Worker's vars.
 *
 * The settings are checked with the Worker's own schema before anything
 * starts; a bad one ends `npm start` at once, naming it and its rule. So does
 * a data directory another npm start holds, and a port (PORT, REDIS_PORT,
 * BRIDGE_PORT) something already listens on.
 */
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { SETTING_NAMES, type SettingProblem, validateSettings } from "../src/env.js";
import { UPSTASH_REQUEST_BYTES } from "../src/limits.js";
import { limitsFromEnv } from "./bridge/limits.js";
import { startCronDriver, type CronDriver } from "./cron-driver.js";
import { lockDataDir, type DataDirLock } from "./data-dir-lock.js";
import { type LocalShard, localShardCount, localShardNames, shardBindings, startLocalShard } from "./local-shards.js";
import { assertPortFree, portFromEnv, portInUse } from "./ports.js";
import type { RunningRedis } from "./redis-launcher.js";
import { startWorkerProcess, waitForHealthy, type WorkerProcess } from "./worker-process.js";

const log = (line: string) => console.log(`[delayline] ${line}`);
const root = resolve(dirname(new URL(import.meta.url).pathname), "..");

/** The shards this stack runs (their redis-servers and bridges); none on Upstash. */
const shards: LocalShard[] = [];
let worker: WorkerProcess | undefined;
let cron: CronDriver | undefined;
let lock: DataDirLock | undefined;
let stopping: Promise<void> | undefined;

async function stopAll(code: number): Promise<never> {
  stopping ??= (async () => {
    cron?.stop();
    await worker?.stop();
    await Promise.all(shards.map((s) => s.stop()));
    // Last: the directory is free only once its redis-server is gone.
    lock?.release();
  })();
  await stopping;
  process.exit(code);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void stopAll(0);
  });
}

// Whoever reads our output may go first; a closed pipe must not abort a clean stop.
process.stdout.on("error", () => {});
process.stderr.on("error", () => {});

// npm does not always pass SIGTERM on to its script; when whoever started us
// is gone, stop as if signalled, so no orphaned Redis or workerd stays behind.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent && !stopping) {
    log("parent process exited: stopping");
    void stopAll(0);
  }
}, 250).unref();

/**
 * Checks the settings the Worker will get with its own schema, before
 * anything starts: a bad one would otherwise surface only as /healthz
 * failing, after a minute of waiting for it.
 */
function checkSettings(fromEnvironment: Record<string, string>, apiToken: string, upstash: boolean, local: ReturnType<typeof localShardCount>): void {
  const count = local.problems.length > 0 ? 1 : local.count;
  // Without Upstash the local bridges supply these once they run; they always give valid ones.
  const placeholders = localShardNames(count).map((name) => ({ name, url: "http://127.0.0.1:1", token: "local-bridge" }));
  const made = (p: SettingProblem) =>
    count > 1 && p.setting === "DELAYLINE_SHARDS" ? { ...p, setting: `DELAYLINE_SHARDS (as DELAYLINE_LOCAL_SHARDS=${count} writes it)` } : p;
  const problems = [
    ...local.problems,
    ...validateSettings({
      ALLOW_PRIVATE_TARGETS: "true",
      ...fromEnvironment,
      DELAYLINE_TOKEN: apiToken,
      ...(upstash ? {} : shardBindings(placeholders)),
    }).map(made),
  ];
  if (problems.length === 0) return;
  throw new Error(
    `invalid settings, nothing started:\n${problems.map((p) => `  ${p.setting} ${p.message}`).join("\n")}\n(docs/configuration.md lists every setting with its bounds)`,
  );
}

/**
 * The Worker told of its own bridge's lowered request limit (BRIDGE_MAX_REQUEST_BYTES), so it refuses a batch past
 * it with its own 413 before sending it, as against Upstash; REDIS_MAX_REQUEST_BYTES, when set, wins. Nothing for a
 * limit that is off, Upstash's own, or below what the setting takes.
 */
function bridgeRequestLimit(maxRequestBytes: number | undefined): Record<string, string> {
  if (maxRequestBytes === undefined || maxRequestBytes < 65_536 /* the setting's least */ || maxRequestBytes >= UPSTASH_REQUEST_BYTES) return {};
  return { REDIS_MAX_REQUEST_BYTES: String(maxRequestBytes) };
}

async function main() {
  const apiToken = process.env.DELAYLINE_TOKEN || "dev-token";
  const fromEnvironment = Object.fromEntries(SETTING_NAMES.flatMap((name) => (process.env[name] ? [[name, process.env[name]!]] : [])));
  const restUrl = process.env.UPSTASH_REDIS_REST_URL;
  const restToken = process.env.UPSTASH_REDIS_REST_TOKEN;
  const local = localShardCount(process.env);
  checkSettings(fromEnvironment, apiToken, Boolean(restUrl && restToken), local);
  // The bridge's limits are checked before anything starts too.
  const bridgeLimits = limitsFromEnv(process.env);
  const port = portFromEnv("PORT", 8787);
  const dataDir = resolve(process.env.DELAYLINE_DATA_DIR || join(root, ".data"));

  // Before anything starts: this data directory is ours alone, and the ports we were told to use are free
  // (on the host the Worker, Redis and the bridge bind), so nothing else can answer in their place.
  lock = lockDataDir(dataDir, port);
  await assertPortFree("PORT", port);
  const ownRedis = !(restUrl && restToken) && !process.env.REDIS_URL;
  if (ownRedis) await assertPortFree("REDIS_PORT", portFromEnv("REDIS_PORT", 0));
  if (!(restUrl && restToken)) await assertPortFree("BRIDGE_PORT", portFromEnv("BRIDGE_PORT", 0));

  // The Worker imports generated files (Lua scripts, API reference); rebuild them in case a source changed.
  const built = spawnSync(process.execPath, [join(root, "scripts/build.mjs")], { stdio: "inherit" });
  if (built.status !== 0) throw new Error("generating the Lua module and the API reference failed");

  // The Worker's host starts first and bundles the Worker while Redis and the bridge come up; its bindings follow.
  let bindingsReady!: (vars: Record<string, string>) => void;
  const running = await startWorkerProcess({
    port,
    vars: new Promise((r) => (bindingsReady = r)),
    dataDir,
    ...(process.env.WRANGLER_CONFIG ? { config: process.env.WRANGLER_CONFIG } : {}),
  });
  worker = running;
  running.child.once("exit", (code, signal) => {
    if (!stopping) {
      log(`the Worker's process exited (${signal ?? code}); stopping`);
      void stopAll(1);
    }
  });

  let redisBindings: Record<string, string>;
  if (restUrl && restToken) {
    log(`using Upstash at ${new URL(restUrl).host} (no local Redis or bridge)`);
    redisBindings = { UPSTASH_REDIS_REST_URL: restUrl, UPSTASH_REDIS_REST_TOKEN: restToken };
  } else {
    if (process.env.REDIS_URL) log("using the Redis at REDIS_URL");
    await startShards(localShardNames(local.count), dataDir, bridgeLimits);
    redisBindings = shardBindings(shards);
  }

  bindingsReady({
    ALLOW_PRIVATE_TARGETS: "true",
    ...bridgeRequestLimit(shards.length > 0 ? bridgeLimits.maxRequestBytes : undefined),
    ...fromEnvironment,
    ...redisBindings,
    DELAYLINE_TOKEN: apiToken,
  });

  const workerUrl = running.url;
  // Only once our own workerd listens does an answer on the port come from our Worker.
  await running.listening.catch(async (err: Error) => {
    throw (await portInUse(port)) ? new Error(`PORT ${port} was taken while the Worker started: set PORT=… to a free port`) : err;
  });
  await waitForHealthy(workerUrl, 60_000, running.child);
  cron = startCronDriver({ workerUrl, log: (l) => log(`cron: ${l}`) });
  log("ready");
  console.log(`
  API        ${workerUrl}
  token      ${apiToken}
  dashboard  ${workerUrl}/dashboard
  docs       ${workerUrl}/docs
  health     curl ${workerUrl}/healthz
  data       ${dataDir}
${shards.length > 1 ? shardsBanner() : ""}`);
}

/**
 * Starts each shard's redis-server (none over REDIS_URL) and bridge, one after the other: `main` on REDIS_PORT and
 * BRIDGE_PORT, the others on free ports. A redis-server that exits later is logged, and npm start goes on.
 */
async function startShards(names: string[], dataDir: string, limits: ReturnType<typeof limitsFromEnv>): Promise<void> {
  for (const [i, name] of names.entries()) {
    const label = names.length > 1 ? `shard "${name}": ` : "";
    const shard = await startLocalShard({
      name,
      dataDir,
      redisPort: i === 0 ? portFromEnv("REDIS_PORT", 0) : 0,
      bridgePort: i === 0 ? portFromEnv("BRIDGE_PORT", 0) : 0,
      limits,
      redisUrl: process.env.REDIS_URL,
      onRedis: (redis) => {
        lock!.recordRedis(redis.pid);
        log(`${label}redis-server on ${redis.url} (pid ${redis.pid}, append-only file in ${redis.dataDir})`);
        void redis.exited.then((how) => !stopping && log(`${label}${redisExited(redis, how, names.length > 1 ? name : undefined)}`));
      },
    });
    shards.push(shard);
    log(`${label}REST bridge on ${shard.url}`);
  }
}

/** What a redis-server's exit means for the stack, which keeps running: its shard's calls fail until a restart. */
function redisExited(redis: RunningRedis, how: string, shard: string | undefined): string {
  const down = shard
    ? `its topics' calls answer 503 naming shard "${shard}", the other shards keep delivering`
    : "the API answers 503 and nothing is delivered";
  return `redis-server (port ${redis.port}, pid ${redis.pid}) exited (${how}): ${down}; npm start keeps running (restart it to bring the redis-server back: its append-only file keeps what it acknowledged)`;
}

/** The banner's list of shards: where each one's redis-server and bridge are, and how to stop one. */
function shardsBanner(): string {
  const width = Math.max(...shards.map((s) => s.name.length));
  const rows = shards.map(
    (s, i) => `${i === 0 ? "  shards     " : "             "}${s.name.padEnd(width)}  redis port ${s.redis!.port} pid ${s.redis!.pid}  bridge ${s.url}`,
  );
  return `${rows.join("\n")}
  stop one   redis-cli -p <port> shutdown nosave (or kill <pid>): its topics answer 503, the others keep delivering
`;
}

main().catch((err: Error) => {
  console.error(`[delayline] ${err.message}`);
  void stopAll(1);
});
