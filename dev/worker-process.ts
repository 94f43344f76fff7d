import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { descendantsOf, isAlive, signalTree } from "./process-tree.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");

/** Options of the Worker run in workerd (dev/worker-host.ts). */
export interface WorkerProcessOptions {
  port: number;
  /** The Worker's bindings: every setting, secrets included. A promise lets the Worker's bundle be made while they are still being worked out (the bridge starting). */
  vars: Record<string, string> | Promise<Record<string, string>>;
  /** The Worker's local state and its bundles live here. */
  dataDir: string;
  /** Where the host's and the Worker's output goes. Default inherited. */
  stdio?: StdioOptions;
  /** Which of the Worker's console output is printed, in wrangler's levels: `none`, `error`, `warn`, `info`, `log` (console.log too), `debug`. Default `warn` (or WRANGLER_LOG_LEVEL). */
  logLevel?: string;
  /** The Worker's wrangler config, relative to the repository. Default `wrangler.toml` (the benchmarks run bench/worker/wrangler.toml). */
  config?: string;
  /** Rebuild and reload the Worker when one of its source files changes. Default true. */
  watch?: boolean;
}

export interface WorkerProcess {
  url: string;
  /** The host process; workerd runs under it. */
  child: ChildProcess;
  /**
   * Resolves once workerd listens on the port (the host says so over IPC); rejects if the host exits first. Until
   * then whatever answers on the port is not this Worker.
   */
  listening: Promise<void>;
  /** The host and everything under it (workerd): SIGTERM, then SIGKILL what is left after 5 s. */
  stop(): Promise<void>;
}

/**
 * Starts the Worker in workerd through miniflare (dev/worker-host.ts, a Node
 * process of its own, so bundling and the Worker's output never wait on the
 * bridge in the caller's event loop), with `/__scheduled` running its cron
 * handler. Resolves at once; wait with {@link waitForHealthy}.
 */
export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  mkdirSync(options.dataDir, { recursive: true });
  const args = [
    "--import",
    "tsx",
    join(root, "dev/worker-host.ts"),
    "--config",
    resolve(root, options.config ?? "wrangler.toml"),
    "--port",
    String(options.port),
    "--persist-to",
    join(options.dataDir, "wrangler"),
    "--out-dir",
    join(options.dataDir, "bundle"),
    "--log-level",
    options.logLevel ?? (process.env.WRANGLER_LOG_LEVEL || "warn"),
    ...(options.watch === false ? ["--no-watch"] : []),
  ];
  const io = options.stdio ?? "inherit";
  const stdio: Exclude<StdioOptions, string> = Array.isArray(io) ? io : ["ignore", io, io];
  const child = spawn(process.execPath, args, {
    cwd: root,
    // Same process group as the caller: a signal to the whole group
    // (Ctrl-C in a terminal, or a kill of the group) reaches workerd too.
    stdio: [stdio[0] ?? "ignore", stdio[1] ?? "inherit", stdio[2] ?? "inherit", "ipc"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
  });
  // Secrets travel over the IPC channel, not on the command line where `ps` shows them. The
  // channel stays open: when this process is gone, the host sees it close and stops workerd.
  Promise.resolve(options.vars).then(
    (bindings) => child.connected && child.send({ bindings }),
    // Whoever computes them reports the failure; the host, without bindings, is stopped with the rest.
    () => {},
  );
  child.channel?.unref();
  const listening = new Promise<void>((resolveListening, rejectListening) => {
    child.on("message", (message: { listening?: boolean }) => message?.listening && resolveListening());
    child.once("exit", (code, signal) => rejectListening(new Error(`the Worker's process exited (${signal ?? `code ${code}`}) before it listened`)));
  });
  // Whoever does not wait for it must not see an unhandled rejection.
  listening.catch(() => {});
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${options.port}`,
    child,
    listening,
    stop: () => (stopping ??= stopTree(child)),
  };
}

async function stopTree(child: ChildProcess): Promise<void> {
  if (child.pid === undefined) return;
  // Read the tree first: once the host exits, its children are no longer found through it.
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
    if (child && (child.exitCode !== null || child.signalCode !== null))
      throw new Error(`the Worker's process exited (${child.signalCode ?? `code ${child.exitCode}`})`);
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
