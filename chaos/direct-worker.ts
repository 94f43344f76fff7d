/**
 * The Worker as `wrangler deploy` would upload it, served by workerd through
 * miniflare's API with nothing else around it: no static assets, no source
 * watching, no cron driver.
 *
 * `npm start` serves the same bundle through miniflare too
 * (dev/worker-host.ts), with its static assets on a Worker beside it and a
 * reload when a source file changes. This is the Worker alone, as
 * Cloudflare's edge calls it, for the chaos load test and the benchmarks'
 * Workers (delayline's and the floor's), so what they measure is the Worker
 * and not the development server around it.
 */
import { spawn } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { descendantsOf } from "../dev/process-tree.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");

export interface DirectWorkerOptions {
  /** Settings and secrets on top of wrangler.toml's vars. */
  vars: Record<string, string>;
  /** Where the bundle is written. */
  outDir: string;
  port: number;
  /** The Worker's wrangler config, relative to the repository. Default `wrangler.toml` (the benchmarks' Worker is bench/worker/wrangler.toml). */
  config?: string;
  /** Serve the bundle already in `outDir` (another instance built it) instead of bundling again. Default false. */
  reuseBundle?: boolean;
  /** Appends workerd's output (the Worker's console) here instead of this process' console. Default the console. */
  logFile?: string;
  /** Where workerd's V8 inspector listens (for a CPU profile). Default none. */
  inspectorPort?: number;
}

export interface DirectWorker {
  url: string;
  /** The workerd process serving this Worker (its CPU time is the Worker's), when it could be told apart. */
  workerdPid: number | undefined;
  /**
   * Runs the Worker's scheduled handler for a cron invocation at
   * `scheduledTime`, as Cloudflare's cron would; resolves when that
   * invocation ends (a tick runs for its minute and overlap).
   */
  scheduled(scheduledTime: number, cron?: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * wrangler's own bundle of the config's main module (`deploy --dry-run`)
 * into `outDir`, without blocking this process's event loop (the bridge
 * lives here). {@link startDirectWorker} does it unless told to reuse one.
 */
export function bundle(outDir: string, config: string): Promise<void> {
  const wranglerBin = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin/wrangler.js");
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [wranglerBin, "deploy", "--dry-run", "--outdir", outDir, "--config", resolve(root, config)], {
      cwd: root,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    let err = "";
    child.stderr.on("data", (c: Buffer) => (err += c));
    child.once("exit", (code) => (code === 0 ? res() : rej(new Error(`wrangler deploy --dry-run exited ${code}: ${err.slice(-500)}`))));
  });
}

const workerdPids = () => new Set(descendantsOf(process.pid).flatMap((p) => (/workerd/.test(p.args) ? [p.pid] : [])));

export async function startDirectWorker(options: DirectWorkerOptions): Promise<DirectWorker> {
  const config = resolve(root, options.config ?? "wrangler.toml");
  const wrangler = unstable_getMiniflareWorkerOptions(config);
  // wrangler names the bundle after the main module.
  const scriptPath = join(options.outDir, `${basename(wrangler.main ?? "index.ts").replace(/\.[cm]?[jt]s$/, "")}.js`);
  if (!options.reuseBundle || !existsSync(scriptPath)) await bundle(options.outDir, config);
  // Without the static pages (/docs, /dashboard answer 404 here): miniflare
  // routes every request through its asset router, JavaScript on the
  // Worker's own workerd thread, which halved the enqueues it took under
  // load; on Cloudflare that routing runs before the Worker, off its CPU.
  const { assets: _pages, ...workerOptions } = wrangler.workerOptions;
  const name = "delayline";
  const before = workerdPids();
  const mf = new Miniflare({
    ...workerOptions,
    name,
    modules: true,
    modulesRoot: options.outDir,
    scriptPath,
    bindings: { ...workerOptions.bindings, ...options.vars },
    // The fan-out binding names the Worker itself by its entrypoint (a Worker without one, such as a floor Worker, gets none).
    serviceBindings: workerOptions.serviceBindings && "TICK_RUNNER" in workerOptions.serviceBindings ? { TICK_RUNNER: { name, entrypoint: "TickChunk" } } : {},
    host: "127.0.0.1",
    port: options.port,
    // The fallback `Request.cf`: miniflare would otherwise fetch one from workers.cloudflare.com (traffic stays on loopback).
    cf: false,
    // Outbound fetches straight to the network, as on Cloudflare, not through
    // miniflare's strip-cf-connecting-ip Worker: by default every fetch runs
    // that Worker too (it copies the request's headers to drop one and add
    // CF-Worker), on the same workerd thread, which was half the delivery
    // floor's CPU per fetch and part of every Redis call's.
    stripCfConnectingIp: false,
    ...(options.inspectorPort !== undefined ? { inspectorPort: options.inspectorPort, inspectorHost: "127.0.0.1" } : {}),
    ...(options.logFile !== undefined
      ? {
          handleRuntimeStdio(stdout: Readable, stderr: Readable) {
            const file = createWriteStream(options.logFile!, { flags: "a" });
            stdout.pipe(file, { end: false });
            stderr.pipe(file, { end: false });
          },
        }
      : {}),
  });
  const url = await mf.ready;
  const started = [...workerdPids()].filter((p) => !before.has(p));
  return {
    url: url.origin,
    workerdPid: started.length === 1 ? started[0] : undefined,
    async scheduled(scheduledTime, cron = "* * * * *") {
      await (await mf.getWorker()).scheduled({ scheduledTime: new Date(scheduledTime), cron });
    },
    stop: () => mf.dispose(),
  };
}
