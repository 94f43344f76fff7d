import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { freePort } from "./ports.js";
import { descendantsOf, isAlive, signalTree } from "./process-tree.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");

/** Options of the Worker run by `wrangler dev` (workerd). */
export interface WorkerProcessOptions {
  port: number;
  /** The Worker's bindings: every setting, secrets included. */
  vars: Record<string, string>;
  /** wrangler's local state and the private env file live here. */
  dataDir: string;
  /** Where wrangler's output goes. Default inherited. */
  stdio?: StdioOptions;
  /** wrangler's log level. Default `warn` (or WRANGLER_LOG_LEVEL). */
  logLevel?: string;
  /** The Worker's wrangler config, relative to the repository. Default `wrangler.toml` (the benchmarks run bench/worker/wrangler.toml). */
  config?: string;
}

export interface WorkerProcess {
  url: string;
  child: ChildProcess;
  /** wrangler and everything under it (workerd): SIGTERM, then SIGKILL what is left after 5 s. */
  stop(): Promise<void>;
}

/**
 * Starts the Worker in `wrangler dev` with `--test-scheduled`, so
 * `/__scheduled` runs its cron handler. Resolves at once; wait with
 * {@link waitForHealthy}.
 */
export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  // Secrets travel in a private env file, not on the command line where `ps` shows them.
  mkdirSync(options.dataDir, { recursive: true });
  const envFile = join(options.dataDir, "worker.env");
  writeFileSync(
    envFile,
    `${Object.entries(options.vars)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join("\n")}\n`,
    { mode: 0o600 },
  );

  const require = createRequire(import.meta.url);
  const wranglerBin = join(dirname(require.resolve("wrangler/package.json")), "bin/wrangler.js");
  const child = spawn(
    process.execPath,
    [
      wranglerBin,
      "dev",
      "--config",
      resolve(root, options.config ?? "wrangler.toml"),
      "--port",
      String(options.port),
      "--ip",
      "127.0.0.1",
      "--inspector-port",
      String(await freePort()),
      "--test-scheduled",
      "--show-interactive-dev-session=false",
      "--persist-to",
      join(options.dataDir, "wrangler"),
      "--log-level",
      options.logLevel ?? (process.env.WRANGLER_LOG_LEVEL || "warn"),
      "--env-file",
      envFile,
    ],
    {
      cwd: root,
      // Same process group as the caller: a signal to the whole group
      // (Ctrl-C in a terminal, or a kill of the group) reaches workerd too.
      stdio: options.stdio ?? ["ignore", "inherit", "inherit"],
      // No telemetry, and no fetch of the `Request.cf` sample from the internet.
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
    },
  );
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${options.port}`,
    child,
    stop: () => (stopping ??= stopTree(child)),
  };
}

async function stopTree(child: ChildProcess): Promise<void> {
  if (child.pid === undefined) return;
  // Read the tree first: once wrangler exits, its children are no longer found through it.
  const tree = [child.pid, ...descendantsOf(child.pid).map((p) => p.pid)];
  const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once("exit", () => r()));
  signalTree(child.pid, "SIGTERM");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
  for (let i = 0; i < 20 && tree.some(isAlive); i++) await new Promise((r) => setTimeout(r, 100));
  for (const pid of tree.filter(isAlive)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone meanwhile */
    }
  }
}

/** Resolves once `/healthz` answers 200; fails after `timeoutMs`, when `child` exits, or at once when the Worker refuses its settings. */
export async function waitForHealthy(url: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`wrangler dev exited with code ${child.exitCode}`);
    let refused: string | undefined;
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      const text = await res.text();
      last = `${res.status} ${text}`;
      refused = settingsRefused(text);
    } catch (err) {
      last = (err as Error).message;
    }
    // Bad settings (say, in the wrangler config, which npm start does not check itself) never get better: stop waiting.
    if (refused) throw new Error(`the Worker refuses its settings: ${refused}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the Worker did not become healthy within ${timeoutMs / 1000} s (last: ${last})`);
}

/** The detail of the Worker's answer to bad settings (a problem of type urn:delayline:settings), if `body` is one. */
function settingsRefused(body: string): string | undefined {
  try {
    const problem = JSON.parse(body) as { type?: unknown; detail?: unknown };
    return problem.type === "urn:delayline:settings" && typeof problem.detail === "string" ? problem.detail : undefined;
  } catch {
    return undefined;
  }
}
