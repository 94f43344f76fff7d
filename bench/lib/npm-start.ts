/**
 * `npm start` as the deployment-default benchmarks run it (harness/npm-start.ts): `dev/start.ts` exactly, with only
 * the given settings in its environment (nothing this shell has set leaks in), its output timestamped into
 * bench/results/tmp/ (git-ignored) and the Worker's JSON log lines collected. Unlike bench/lib/delayline.ts it runs
 * the production Worker (no bench handlers) with its own Redis and bridge, so deliveries go over http to a loopback
 * receiver (harness/receiver.ts).
 */
import { mkdirSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { startNpmStart as startHarnessNpmStart, type NpmStart } from "../../harness/npm-start.js";
import { jobArrivals, startReceiver as startHarnessReceiver } from "../../harness/receiver.js";

const root = join(import.meta.dirname, "../..");
export const TOKEN = "bench-token-123";

export type { LoggedLine, NpmStart } from "../../harness/npm-start.js";

export async function startNpmStart(options: {
  /** Names the log file. */
  name: string;
  /** Settings for the Worker (any name of src/env.ts). */
  settings: Record<string, string>;
  /** Counts the HTTP requests the bridge serves ({@link NpmStart.bridgeRequests}). Default false. */
  countRequests?: boolean;
}): Promise<NpmStart & { logFile: string }> {
  const tmp = join(root, "bench/results/tmp");
  mkdirSync(tmp, { recursive: true });
  const logFile = join(tmp, `${options.name}-${new Date().toISOString().replace(/[:.]/g, "-")}.log`);
  const stack = await startHarnessNpmStart({
    name: options.name,
    settings: options.settings,
    onlyGivenSettings: true,
    token: TOKEN,
    // Straight to dev/start.ts, no npm process between: the request counter preloads into that process.
    via: "node",
    countRequests: options.countRequests ?? false,
    logFile,
    logLevel: process.env.WRANGLER_LOG_LEVEL || "log",
    jsonLines: true,
    keepOutputChars: 20_000,
    readyTimeoutMs: 120_000,
    stopWaitMs: 20_000,
  });
  return { ...stack, logFile };
}

/**
 * The loopback receiver of these benchmarks (harness/receiver.ts): when each delivery's request arrived, by
 * Delayline-Job-Id, and every request's arrival with its headers; every request gets 200 "ok".
 */
export async function startReceiver() {
  const noted = jobArrivals();
  const receiver = await startHarnessReceiver([noted]);
  return { url: `${receiver.url}/hook`, arrivals: noted.arrivals, requests: noted.requests, close: receiver.close };
}

/** The machine and its load (uptime's load averages), for the results. */
export function machine() {
  const [l1, l5, l15] = loadavg().map((l) => Math.round(l * 100) / 100);
  return { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadavg: { "1m": l1!, "5m": l5!, "15m": l15! } };
}
