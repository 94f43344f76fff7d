/**
 * The Worker as `wrangler deploy` would upload it, served by workerd through
 * miniflare's API, with no `wrangler dev` in between.
 *
 * `wrangler dev` routes every request through a proxy Worker and a Node
 * controller built for live reload. Under a thousand connections that proxy
 * gives up on requests ("Your worker restarted mid-request", 503) and workerd
 * piles up sockets to wrangler's Node process, so a load test through it
 * measures the development proxy, not delayline. Production has no such
 * proxy: Cloudflare's edge calls the Worker directly, as this does.
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");

export interface DirectWorkerOptions {
  /** Settings and secrets on top of wrangler.toml's vars. */
  vars: Record<string, string>;
  /** Where the bundle is written. */
  outDir: string;
  port: number;
  /** The wrangler config whose Worker is bundled and served. Default the repository's wrangler.toml (app/worker.ts, as deployed). */
  config?: string;
  /** Opens workerd's DevTools inspector on this port (CPU profiles over the DevTools protocol). Default: none. */
  inspectorPort?: number;
}

export interface DirectWorker {
  url: string;
  stop(): Promise<void>;
}

/** wrangler's own bundle of the config's main module (`deploy --dry-run`), without blocking this process's event loop (the bridge lives here). */
function bundle(outDir: string, config: string): Promise<void> {
  const wranglerBin = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin/wrangler.js");
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [wranglerBin, "deploy", "--dry-run", "--outdir", outDir, "--config", config], {
      cwd: root,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    let err = "";
    child.stderr.on("data", (c: Buffer) => (err += c));
    child.once("exit", (code) => (code === 0 ? res() : rej(new Error(`wrangler deploy --dry-run exited ${code}: ${err.slice(-500)}`))));
  });
}

function bundled(outDir: string): string {
  const scripts = readdirSync(outDir).filter((f) => f.endsWith(".js"));
  if (scripts.length !== 1) throw new Error(`expected one bundled script in ${outDir}, found ${scripts.join(", ") || "none"}`);
  return scripts[0]!;
}

export async function startDirectWorker(options: DirectWorkerOptions): Promise<DirectWorker> {
  const config = options.config ?? join(root, "wrangler.toml");
  await bundle(options.outDir, config);
  // Without the static pages (/docs, /dashboard answer 404 here): miniflare
  // routes every request through its asset router, JavaScript on the
  // Worker's own workerd thread, which halved the enqueues it took under
  // load; on Cloudflare that routing runs before the Worker, off its CPU.
  const { assets: _pages, ...workerOptions } = unstable_getMiniflareWorkerOptions(config).workerOptions;
  const name = "delayline";
  const mf = new Miniflare({
    ...workerOptions,
    name,
    modules: true,
    modulesRoot: options.outDir,
    // wrangler names the bundle after the main module (app/worker.ts → worker.js).
    scriptPath: join(options.outDir, bundled(options.outDir)),
    bindings: { ...workerOptions.bindings, ...options.vars },
    // The fan-out binding names the Worker itself by its entrypoint (a Worker without one, such as the bench's floor, gets none).
    ...(workerOptions.serviceBindings && "TICK_RUNNER" in workerOptions.serviceBindings
      ? { serviceBindings: { TICK_RUNNER: { name, entrypoint: "TickChunk" } } }
      : {}),
    host: "127.0.0.1",
    port: options.port,
    ...(options.inspectorPort !== undefined ? { inspectorPort: options.inspectorPort, inspectorHost: "127.0.0.1" } : {}),
  });
  const url = await mf.ready;
  return { url: url.origin, stop: () => mf.dispose() };
}
