/**
 * Lateness of http deliveries through the whole local stack (`npm start`:
 * redis-server, bridge, the Worker in workerd, the cron driver) to a local
 * HTTP receiver: N jobs due uniformly over 20 s, TICK_POLL_MS=100.
 * Prints and writes bench/results/lateness-http.{json,md}.
 *
 *   npm run bench:lateness [-- --jobs 1000 --spread 20000 --poll 100]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../dev/ports.js";
import { Delayline } from "../src/client/index.js";
import { summarize } from "./stats.js";

const { values: args } = parseArgs({
  options: { jobs: { type: "string", default: "1000" }, spread: { type: "string", default: "20000" }, poll: { type: "string", default: "100" } },
});
const JOBS = Number(args.jobs);
const SPREAD = Number(args.spread);
const POLL = Number(args.poll);
const root = join(import.meta.dirname, "..");

// 1. The receiver: records when each job arrived.
const arrivals = new Map<string, number[]>();
const receiver = createServer((req, res) => {
  const at = Date.now();
  const id = String(req.headers["delayline-job-id"]);
  req.resume();
  req.on("end", () => {
    arrivals.set(id, [...(arrivals.get(id) ?? []), at]);
    res.end("ok");
  });
});
await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

// 2. The stack, exactly as `npm start` runs it.
const port = await freePort();
const dataDir = mkdtempSync(join(tmpdir(), "delayline-bench-"));
const stack = spawn(process.execPath, ["--import", "tsx", "dev/start.ts"], {
  cwd: root,
  env: {
    ...process.env,
    PORT: String(port),
    DELAYLINE_DATA_DIR: dataDir,
    DELAYLINE_TOKEN: "bench-token-123",
    TICK_POLL_MS: String(POLL),
    // The paid-plan profile: 1,000 http jobs in one invocation need more than the default 900 subrequests.
    TICK_SUBREQUEST_BUDGET: process.env.TICK_SUBREQUEST_BUDGET ?? "5000",
  },
  stdio: ["ignore", "pipe", "inherit"],
});
let ready = false;
const logLines: string[] = [];
stack.stdout!.on("data", (c: Buffer) => {
  const text = c.toString();
  if (text.includes("[delayline] ready")) ready = true;
  if (process.env.BENCH_LOG) logLines.push(text);
});
const stop = async () => {
  stack.kill("SIGTERM");
  await new Promise((r) => stack.once("exit", r));
  receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
};

try {
  for (let i = 0; i < 600 && !ready; i++) await new Promise((r) => setTimeout(r, 100));
  if (!ready) throw new Error("npm start did not become ready within 60 s");
  const dl = new Delayline({ baseUrl: `http://127.0.0.1:${port}`, token: "bench-token-123" });
  await dl.configureTopic("bench", { url: receiverUrl, concurrency: 200, timeoutMs: 5_000 });

  // 3. Jobs due uniformly over the spread, starting 3 s from now.
  const start = Date.now() + 3_000;
  const due = new Map<string, number>();
  for (let i = 0; i < JOBS; i += 500) {
    const batch = Array.from({ length: Math.min(500, JOBS - i) }, (_, j) => ({ topic: "bench", runAt: start + Math.floor(((i + j) * SPREAD) / JOBS), payload: { i: i + j } }));
    for (const r of await dl.enqueueBatch(batch)) due.set(r.id, Date.parse(r.dueAt!));
  }

  // 4. Wait for every delivery (bounded).
  const deadline = start + SPREAD + 30_000;
  while (Date.now() < deadline && arrivals.size < JOBS) await new Promise((r) => setTimeout(r, 200));

  const lateness: number[] = [];
  let early = 0;
  let duplicates = 0;
  for (const [id, times] of arrivals) {
    const d = due.get(id);
    if (d === undefined) continue;
    if (times.length > 1) duplicates += times.length - 1;
    const l = times[0]! - d;
    if (l < 0) early++;
    lateness.push(l);
  }
  const stats = summarize(lateness);
  const result = {
    benchmark: "http delivery lateness through npm start",
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    settings: { jobs: JOBS, spreadMs: SPREAD, tickPollMs: POLL },
    delivered: arrivals.size,
    missing: JOBS - [...arrivals.keys()].filter((id) => due.has(id)).length,
    duplicates,
    early,
    latenessMs: stats,
    target: { p99MaxMs: 150, met: stats.p99 <= 150 && early === 0 && arrivals.size === JOBS && duplicates === 0 },
  };
  console.log(JSON.stringify(result, null, 2));
  if (process.env.BENCH_LOG) writeFileSync(process.env.BENCH_LOG, logLines.join(""));
  writeFileSync(join(root, "bench/results/lateness-http.json"), JSON.stringify(result, null, 2) + "\n");
  writeFileSync(
    join(root, "bench/results/lateness-http.md"),
    `# http delivery lateness through \`npm start\`\n\n${result.date}, ${result.machine.cpus} × ${result.machine.model}, Node ${result.machine.node}.\n\n` +
      `${JOBS} http jobs due uniformly over ${SPREAD / 1000} s, \`TICK_POLL_MS=${POLL}\`, delivered by the Worker in workerd (wrangler dev) to a local receiver.\n\n` +
      `| delivered | missing | duplicates | early | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|---|\n` +
      `| ${result.delivered} | ${result.missing} | ${duplicates} | ${early} | ${stats.p50} ms | ${stats.p95} ms | ${stats.p99} ms | ${stats.max} ms |\n\n` +
      `Target p99 ≤ 150 ms, 0 early, all once: **${result.target.met ? "met" : "missed"}**.\n`,
  );
  if (!result.target.met) process.exitCode = 1;
} finally {
  await stop();
}
