import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../dev/ports.js";
import { descendantsOf, isAlive, signalTree } from "../dev/process-tree.js";

/** `npm start` running for a test: its URL and token, and how to stop all of it. */
export interface LocalStack {
  url: string;
  token: string;
  /** The `npm start` process (every process of the stack descends from it). */
  pid: number;
  /** Everything the stack printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Runs `npm start` on a free port with its data in a temp dir and waits for
 * /healthz. `env` adds settings (TICK_POLL_MS, …). stop() ends every process
 * it started, forcefully if need be.
 */
export async function startLocalStack(env: Record<string, string> = {}): Promise<LocalStack> {
  const port = await freePort();
  const token = `stack-${crypto.randomUUID()}`;
  const dataDir = mkdtempSync(join(tmpdir(), "delayline-stack-"));
  const child = spawn("npm", ["start"], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...process.env, PORT: String(port), DELAYLINE_DATA_DIR: dataDir, DELAYLINE_TOKEN: token, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c));
  child.stderr!.on("data", (c: Buffer) => (output += c));
  const url = `http://127.0.0.1:${port}`;

  const stop = async () => {
    const tree = [child.pid!, ...descendantsOf(child.pid!).map((p) => p.pid)];
    if (child.exitCode === null && child.signalCode === null) signalTree(child.pid!, "SIGTERM");
    for (let i = 0; i < 100 && tree.some(isAlive); i++) await new Promise((r) => setTimeout(r, 100));
    for (const pid of tree.filter(isAlive)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone meanwhile */
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  };

  const started = Date.now();
  while (Date.now() - started < 90_000) {
    if (child.exitCode !== null) break;
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return { url, token, pid: child.pid!, output: () => output, stop };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`npm start did not become healthy within 90 s:\n${output}`);
}
