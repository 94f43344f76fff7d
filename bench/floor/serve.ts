/**
 * The single-enqueue row's machinery: delayline's Worker as deployed
 * (wrangler.toml → app/worker.ts) and the floor Worker (bench/floor/) served
 * the same way — bundled by wrangler, run by workerd through miniflare's API
 * with no `wrangler dev` proxy (chaos/direct-worker.ts) — on the bench's
 * bridge and Redis; autocannon in a process of its own; and workerd's CPU
 * time per request from /proc.
 */
import { join } from "node:path";
import { startDirectWorker } from "../../chaos/direct-worker.js";
import { freePort } from "../../dev/ports.js";
import { descendantsOf } from "../../dev/process-tree.js";
import { waitForHealthy } from "../../dev/worker-process.js";
import { autocannon } from "../../harness/autocannon.js";
import { BENCH_TOKEN } from "../lib/delayline.js";

const root = join(import.meta.dirname, "../..");

/** A Worker served directly by workerd, and that workerd's pid (for its CPU time). */
export interface ServedWorker {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the Worker of `config` (a wrangler config) on the bench's bridge; `outDir` receives its bundle. */
export async function serveWorker(config: "delayline" | "floor", bridge: { url: string; token: string }, outDir: string): Promise<ServedWorker> {
  const before = new Set(descendantsOf(process.pid).map((p) => p.pid));
  const worker = await startDirectWorker({
    config: join(root, config === "delayline" ? "wrangler.toml" : "bench/floor/wrangler.toml"),
    vars: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token, DELAYLINE_TOKEN: BENCH_TOKEN },
    outDir,
    port: await freePort(),
  });
  try {
    await waitForHealthy(worker.url, 60_000);
    const pid = descendantsOf(process.pid).find((p) => !before.has(p.pid) && /workerd/.test(p.args))?.pid;
    if (pid === undefined) throw new Error(`no workerd process found for the ${config} Worker`);
    return { url: worker.url, pid, stop: () => worker.stop() };
  } catch (err) {
    await worker.stop();
    throw err;
  }
}

/** What autocannon saw: 2xx answers per second, latency, failures. */
export interface LoadOutcome {
  perSec: number;
  ok: number;
  non2xx: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * `connections` keep-alive connections POSTing `body` to `url` for `seconds`,
 * from a process of its own (the bridge lives in this one, and a load
 * generator sharing its event loop would slow it down).
 */
export async function load(url: string, body: string, connections: number, seconds: number): Promise<LoadOutcome> {
  const r = await autocannon({
    url,
    method: "POST",
    headers: { authorization: `Bearer ${BENCH_TOKEN}`, "content-type": "application/json" },
    body,
    connections,
    duration: seconds,
    timeout: 30,
  });
  return { perSec: r["2xx"] / r.duration, ok: r["2xx"], non2xx: r.non2xx, errors: r.errors, p50Ms: r.latency.p50, p99Ms: r.latency.p99 };
}
