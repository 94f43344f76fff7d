/**
 * The local stack as `npm start` runs it — redis-server (append-only file,
 * fsync always), the REST bridge, the Worker in workerd through miniflare
 * (dev/worker-host.ts, started by dev/worker-process.ts), a cron driver —
 * on ports and a data dir of its own, with a handle on each part so a
 * scenario can kill, stop and restart it in place: same ports, same data,
 * same token, so the Worker's settings never change.
 */
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { limitsFromEnv } from "../dev/bridge/limits.js";
import { startBridge, type RunningBridge } from "../dev/bridge/server.js";
import { startCronDriver, type CronDriver } from "../dev/cron-driver.js";
import { freePort } from "../dev/ports.js";
import { descendantsOf, isAlive } from "../dev/process-tree.js";
import { startRedis, type RunningRedis } from "../dev/redis-launcher.js";
import { startWorkerProcess, waitForHealthy, type WorkerProcess } from "../dev/worker-process.js";
import { sleep } from "../harness/util.js";
import { startDirectWorker, type DirectWorker } from "./direct-worker.js";

export interface ChaosStackOptions {
  /** Worker settings on top of the defaults (wrangler.toml's vars). */
  settings?: Record<string, string>;
  /** Keep the data dir and the Worker's log after stop (for a failed run). */
  keep?: boolean;
  /** The Worker's log level, in wrangler's levels. Default warn, as npm start: errors (the tick's outage backoff, which stop-bridge reads) and warnings; `log` adds a line per tick round. */
  logLevel?: string;
}

export class ChaosStack {
  readonly apiToken = `chaos-${randomBytes(12).toString("hex")}`;
  readonly dataDir = mkdtempSync(join(tmpdir(), "delayline-chaos-"));
  readonly logFile = join(this.dataDir, "worker.log");
  private readonly bridgeToken = randomBytes(24).toString("hex");
  private redisPort = 0;
  private bridgePort = 0;
  private workerPort = 0;
  redis: RunningRedis | undefined;
  bridge: RunningBridge | undefined;
  worker: WorkerProcess | undefined;
  private readonly crons: CronDriver[] = [];
  private logFd: number | undefined;

  private constructor(private readonly options: ChaosStackOptions) {}

  static async start(options: ChaosStackOptions = {}): Promise<ChaosStack> {
    const stack = new ChaosStack(options);
    try {
      stack.redisPort = await freePort();
      stack.bridgePort = await freePort();
      stack.workerPort = await freePort();
      await stack.startRedis();
      await stack.startBridge();
      await stack.startWorker();
      // Kept from wrangler dev, which could reload once just after starting (it noticed the files the build had just
      // written). The host reloads only when a rebuilt bundle differs, so this wait is likely no longer needed.
      await sleep(5_000);
      await waitForHealthy(stack.url, 60_000, stack.worker?.child);
      return stack;
    } catch (err) {
      await stack.stop();
      throw err;
    }
  }

  get url(): string {
    return `http://127.0.0.1:${this.workerPort}`;
  }

  async startRedis(): Promise<void> {
    this.redis = await startRedis({ port: this.redisPort, dataDir: join(this.dataDir, "redis"), appendfsync: "always" });
  }

  /** kill -9: whatever Redis acknowledged is in the append-only file, fsynced. */
  async killRedis(): Promise<void> {
    if (!this.redis) return;
    process.kill(this.redis.pid, "SIGKILL");
    await this.redis.stop();
    this.redis = undefined;
  }

  async startBridge(): Promise<void> {
    // Upstash's limits, as npm start holds them (BRIDGE_MAX_* and BRIDGE_COMMANDS_PER_SECOND change them).
    this.bridge = await startBridge({
      redisUrl: `redis://127.0.0.1:${this.redisPort}`,
      token: this.bridgeToken,
      port: this.bridgePort,
      limits: limitsFromEnv(process.env),
    });
  }

  /** Stops the bridge at once, as a crash would: open connections are cut, new ones refused. */
  async stopBridge(): Promise<void> {
    await this.bridge?.abort();
    this.bridge = undefined;
  }

  /** The Worker's settings and secrets: this stack's bridge and token. */
  private vars(): Record<string, string> {
    return {
      ALLOW_PRIVATE_TARGETS: "true",
      ...this.options.settings,
      UPSTASH_REDIS_REST_URL: `http://127.0.0.1:${this.bridgePort}`,
      UPSTASH_REDIS_REST_TOKEN: this.bridgeToken,
      DELAYLINE_TOKEN: this.apiToken,
    };
  }

  async startWorker(): Promise<void> {
    this.logFd ??= openSync(this.logFile, "a");
    this.worker = await startWorkerProcess({
      port: this.workerPort,
      dataDir: join(this.dataDir, "worker"),
      stdio: ["ignore", this.logFd, this.logFd],
      logLevel: this.options.logLevel ?? "warn",
      vars: this.vars(),
    });
    await waitForHealthy(this.url, 90_000, this.worker.child);
  }

  /**
   * A second instance of the Worker, as deployed, in workerd through
   * miniflare with nothing around it (see direct-worker.ts), on the same
   * bridge, prefix and token: what the load is aimed at. The caller stops it.
   */
  async startDirectWorker(): Promise<DirectWorker> {
    const worker = await startDirectWorker({ vars: this.vars(), outDir: join(this.dataDir, "bundle"), port: await freePort() });
    await waitForHealthy(worker.url, 60_000);
    return worker;
  }

  async stopWorker(): Promise<void> {
    await this.worker?.stop();
    this.worker = undefined;
  }

  /** The workerd processes running the Worker (under its host process). */
  workerdPids(): number[] {
    const pid = this.worker?.child.pid;
    if (pid === undefined) return [];
    return descendantsOf(pid)
      .filter((p) => /workerd/.test(p.args))
      .map((p) => p.pid);
  }

  /** Open file descriptors of the workerd processes (sockets, mostly): a leak shows here first. */
  workerdOpenFds(): number {
    let n = 0;
    for (const pid of this.workerdPids()) {
      try {
        n += readdirSync(`/proc/${pid}/fd`).length;
      } catch {
        /* gone, or no /proc */
      }
    }
    return n;
  }

  /** Waits (up to `ms`) for workerd's sockets to be reaped below `limit`, so one scenario's leftovers do not starve the next. */
  async settleFds(limit: number, ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    let n = this.workerdOpenFds();
    while (n > limit && Date.now() < deadline) {
      await sleep(1_000);
      n = this.workerdOpenFds();
    }
    return n;
  }

  /** SIGKILL of every workerd under the Worker's host, mid-whatever-it-is-doing; the host then exits too. */
  killWorkerd(): number[] {
    const pids = this.workerdPids();
    for (const pid of pids) process.kill(pid, "SIGKILL");
    return pids;
  }

  /** Whether the Worker answers /healthz within `ms`. */
  async healthy(ms: number): Promise<boolean> {
    try {
      await waitForHealthy(this.url, ms, this.worker?.child);
      return true;
    } catch {
      return false;
    }
  }

  /** A cron trigger: fires scheduled() at once and at every minute boundary, overlapping as Cloudflare's do. */
  startCron(): CronDriver {
    const cron = startCronDriver({ workerUrl: this.url });
    this.crons.push(cron);
    return cron;
  }

  stopCrons(): void {
    for (const c of this.crons.splice(0)) c.stop();
  }

  /** The Worker's log so far (its host's and workerd's output). */
  log(): string {
    try {
      return readFileSync(this.logFile, "utf8");
    } catch {
      return "";
    }
  }

  async stop(): Promise<void> {
    this.stopCrons();
    await this.stopWorker().catch(() => {});
    await this.stopBridge().catch(() => {});
    await this.redis?.stop().catch(() => {});
    if (this.logFd !== undefined) closeSync(this.logFd);
    if (!this.options.keep) rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** Processes of this stack still alive (for the cleanup check). */
  leftovers(): number[] {
    return [this.redis?.pid, this.worker?.child.pid, ...this.workerdPids()].filter((p): p is number => p !== undefined && isAlive(p));
  }
}
