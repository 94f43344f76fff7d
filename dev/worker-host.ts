/**
 * The Worker in workerd through miniflare's API: the process
 * dev/worker-process.ts starts for `npm start`. Not run by hand.
 *
 * `wrangler dev` put a proxy Worker (a second workerd) and a Node controller
 * in front of the Worker, and its inspector proxy sent every devtools event
 * of the Worker to that controller over a connection of its own — about four
 * per outbound fetch, so a few thousand deliveries at once ran workerd out of
 * file descriptors. Here requests reach the Worker with nothing in between,
 * as on Cloudflare's edge, and nothing listens to its inspector.
 *
 * What `wrangler dev` gave is kept (dev/miniflare-worker.ts): wrangler's own
 * bundle, rebuilt and reloaded when one of its source files or the config
 * changes; `/__scheduled`; the static assets; the Worker's console output on
 * stdout (errors and warnings on stderr), filtered by the log level.
 *
 * Arguments: --config <wrangler config> --port <n> --persist-to <dir>
 * --out-dir <dir> --log-level <none|error|warn|info|log|debug> [--no-watch].
 * The bindings (secrets included) arrive as the first IPC message, never on
 * the command line. The process ends, stopping workerd, on SIGINT, SIGTERM,
 * SIGHUP, when its parent goes away (the IPC channel closes) and when workerd
 * exits by itself.
 */
import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { parseArgs } from "node:util";
import type { Miniflare, MiniflareOptions } from "miniflare";
import { bundleWorker, workerOptions, type Bundle } from "./miniflare-worker.js";

const { values: args } = parseArgs({
  options: {
    config: { type: "string" },
    port: { type: "string" },
    "persist-to": { type: "string" },
    "out-dir": { type: "string" },
    "log-level": { type: "string", default: "warn" },
    "no-watch": { type: "boolean", default: false },
  },
});
const configPath = resolve(args.config ?? "wrangler.toml");
const outDir = resolve(args["out-dir"] ?? join(dirname(configPath), ".wrangler/npm-start"));
const port = Number(args.port ?? 8787);

/** wrangler's log levels, quietest first: a line shows when its level comes no later than the chosen one. */
const LEVELS = ["none", "error", "warn", "info", "log", "debug"];
const chosen = LEVELS.indexOf(args["log-level"] ?? "warn");
if (chosen < 0) fail(`--log-level must be one of ${LEVELS.join(", ")}`);

function fail(message: string): never {
  process.stderr.write(`[delayline] ${message}\n`);
  process.exit(1);
}

/** The Worker's console output (and workerd's own messages) at the log level: errors and warnings to stderr, the rest to stdout. */
function printLog({ level, message }: { level: string; message: string }): void {
  const at = LEVELS.indexOf(level === "verbose" ? "debug" : level);
  if (at > chosen || (at < 0 && chosen < LEVELS.indexOf("log"))) return;
  (level === "error" || level === "warn" ? process.stderr : process.stdout).write(message.endsWith("\n") ? message : `${message}\n`);
}

let stopping = false;
let reloading = false;
let runtimes = 0;
let mf: Miniflare | undefined;

/** workerd ends only when told to; when it exits by itself (a crash, kill -9), so does this process, and npm start notices. */
function watchRuntime(stdout: Readable): void {
  // A reload replaces workerd: only the newest one's end counts.
  const runtime = ++runtimes;
  stdout.once("end", () => {
    if (stopping || reloading || runtime !== runtimes) return;
    process.stderr.write("[delayline] workerd exited\n");
    void stop(1);
  });
}

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await mf?.dispose().catch(() => {});
  }
  process.exit(code);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, () => void stop(0));
process.once("disconnect", () => void stop(0));

if (!process.send) fail("dev/worker-host.ts is started by dev/worker-process.ts, which sends the bindings over IPC");
// The bindings may come later (npm start sends them once its bridge runs): the bundle is made meanwhile.
const receiving = new Promise<Record<string, string>>((res) => {
  process.once("message", (message: { bindings?: Record<string, string> }) => res(message.bindings ?? {}));
});
let generation = 0;
let builtDir = join(outDir, String(generation));
const bundling = bundleWorker(configPath, builtDir).catch((err: Error) => fail(err.message));
// Required, not imported: see miniflare-worker.ts. Both load while the bundle is made and the bindings are on their way.
const require = createRequire(import.meta.url);
const { Log, LogLevel, Miniflare: MiniflareClass } = require("miniflare") as typeof import("miniflare");
require("wrangler");
const [first, bindings] = await Promise.all([bundling, receiving]);
let built = first;

async function options(bundle: Bundle): Promise<MiniflareOptions> {
  return {
    workers: await workerOptions(configPath, bundle.entry, bindings),
    host: "127.0.0.1",
    port,
    defaultPersistRoot: resolve(args["persist-to"] ?? join(dirname(configPath), ".wrangler/state"), "v3"),
    // The fallback `Request.cf`, not a copy fetched from workers.cloudflare.com.
    cf: false,
    liveReload: false,
    // miniflare's own messages. A line per request would cost a loopback request per request too.
    log: new Log(chosen >= LEVELS.indexOf("debug") ? LogLevel.DEBUG : Math.min(chosen, LogLevel.WARN)),
    logRequests: false,
    handleStructuredLogs: printLog,
    handleRuntimeStdio: (stdout: Readable) => watchRuntime(stdout),
  };
}

const digest = async (file: string) =>
  createHash("sha256")
    .update(await readFile(file))
    .digest("hex");

let builtDigest = await digest(built.entry);
mf = new MiniflareClass(await options(built));
await mf.ready.catch((err: Error) => fail(`workerd did not start: ${err.message}`));
// npm start waits for this before it asks /healthz: an answer before it could come from another server on the port.
process.send?.({ listening: true });

if (!args["no-watch"]) watchSources();

/**
 * Rebuilds when a file of the bundle or the config changes, and reloads the
 * Worker (a new workerd: requests in flight are cut, as `wrangler dev`'s
 * reload cut them) when the bundle differs. A build that rewrote the same
 * generated files restarts nothing; a broken edit keeps the Worker running.
 */
function watchSources(): void {
  const watchers = new Map<string, FSWatcher>();
  let wanted = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let queue = Promise.resolve();
  const watchAll = (files: string[]) => {
    wanted = new Set([configPath, ...files]);
    for (const dir of new Set([...wanted].map((f) => dirname(f)))) {
      if (watchers.has(dir)) continue;
      try {
        const w = watch(dir, (_event, file) => {
          if (file && wanted.has(join(dir, file.toString()))) schedule();
        });
        w.on("error", () => {});
        watchers.set(dir, w);
      } catch {
        // gone since the bundle was made: nothing to watch there
      }
    }
  };
  const rebuild = async () => {
    try {
      const nextDir = join(outDir, String(++generation));
      const next = await bundleWorker(configPath, nextDir);
      const nextDigest = await digest(next.entry);
      watchAll(next.inputs);
      if (nextDigest === builtDigest) {
        await rm(nextDir, { recursive: true, force: true });
        return;
      }
      process.stdout.write("[delayline] a source file changed: reloading the Worker\n");
      reloading = true;
      await mf!.setOptions(await options(next));
      await rm(builtDir, { recursive: true, force: true });
      builtDir = nextDir;
      built = next;
      builtDigest = nextDigest;
      process.stdout.write("[delayline] the Worker is reloaded\n");
    } catch (err) {
      process.stderr.write(`[delayline] ${(err as Error).message}\n`);
    } finally {
      reloading = false;
    }
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => (queue = queue.then(rebuild)), 300);
  };
  watchAll(built.inputs);
}
