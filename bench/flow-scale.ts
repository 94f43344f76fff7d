/**
 * `npm run bench:flow-scale`: flow keys at scale (issue 36), timed. The drain
 * of 100,000 jobs due at once — claimed 100 at a time and acked, as the tick
 * does — in an unkeyed topic, in one hot key and in 100,000 keys of one job
 * each, in turn on one redis-server behind the bridge, the order alternating
 * by round; and how long Redis spent in each flow-read, claim and settle call
 * (SLOWLOG, threshold 0), p50 and p99, with one key and with 100,000. The
 * work in each call (commands and arguments, which do not grow with the keys)
 * is held by test/workers/queue/flow-scale.test.ts; this measures its time.
 * Writes bench/results/flow-scale.{json,md}.
 *
 *   npm run bench:flow-scale                        3 rounds of 100,000 jobs (about 6 min on 2 cores under load)
 *   npm run bench:flow-scale -- --jobs 10000 --rounds 1   a smoke run (into results/tmp/)
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import IORedis from "ioredis";
import { startRedisBridge } from "../harness/redis-bridge.js";
import * as lua from "../src/queue/lua.generated.js";
import type { Queue } from "../src/queue/queue.js";
import { nodeQueue } from "./lib/delayline.js";
import { payload } from "./lib/infra.js";
import { callsOf, type Command, quantile, timeEveryCall } from "./lib/slowlog.js";
import { claimAll } from "./suites.js";

const { values: args } = parseArgs({ options: { jobs: { type: "string" }, rounds: { type: "string" } } });
const JOBS = Number(args.jobs ?? 100_000);
const ROUNDS = Number(args.rounds ?? 3);
const CHUNK = 100;
const outBase = join(import.meta.dirname, "results", JOBS === 100_000 && ROUNDS === 3 ? "flow-scale" : "tmp/flow-scale-smoke");

/** The three topics drained, each by how its jobs are keyed: job i's flow key (undefined: none). */
const SHAPES = new Map<string, (i: number) => string | undefined>([
  ["unkeyed", () => undefined],
  ["one key", () => "hot"],
  [`${JOBS.toLocaleString("en-US")} keys`, (i) => `k${String(i).padStart(6, "0")}`],
]);

interface DrainRound {
  jobsPerSec: number;
  /** Milliseconds Redis spent in each call of the drain, by script. */
  calls: Record<"flowRead" | "claim" | "settle", number[]>;
}

/** Stores `JOBS` jobs due now (batches of 1,000, untimed), then times their drain and reads each call's time. */
async function drainOnce(queue: Queue, command: Command, topic: string, key: (i: number) => string | undefined): Promise<DrainRound> {
  const now = Date.now();
  for (let i = 0; i < JOBS; i += 1_000) {
    await queue.enqueueBatch(
      Array.from({ length: Math.min(1_000, JOBS - i) }, (_, j) => {
        const flowKey = key(i + j);
        return { topic, runAt: now, payload: payload(i + j), ...(flowKey === undefined ? {} : { flowKey }) };
      }),
    );
  }
  await timeEveryCall(command);
  const started = performance.now();
  const drained = await claimAll(queue, topic, CHUNK, "ack");
  const ms = performance.now() - started;
  if (drained !== JOBS) throw new Error(`${topic}: drained ${drained} of ${JOBS}`);
  return {
    jobsPerSec: JOBS / (ms / 1_000),
    calls: { flowRead: await callsOf(command, lua.flowRead), claim: await callsOf(command, lua.claim), settle: await callsOf(command, lua.settle) },
  };
}

const started = Date.now();
const log = (line: string) => console.log(`[flow-scale ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
const load: number[] = [];
const sampleLoad = setInterval(() => load.push(loadavg()[0]!), 10_000);
// No record cap on the bridge: its MEMORY USAGE of every key a call writes would fill the SLOWLOG (and it is not Upstash's work).
const stack = await startRedisBridge({ tokenPrefix: "bench-flow", redis: { appendfsync: "everysec" }, limits: { maxRecordBytes: 0 } });
const direct = new IORedis(stack.redis.url, { maxRetriesPerRequest: null });
const command: Command = (a) => direct.call(String(a[0]), ...a.slice(1).map(String));
const runs = new Map<string, DrainRound[]>([...SHAPES.keys()].map((s) => [s, []]));
try {
  const shapes = [...SHAPES.keys()];
  for (let round = 0; round < ROUNDS; round++) {
    for (const shape of round % 2 ? [...shapes].reverse() : shapes) {
      await direct.flushall();
      // A prefix a drain: the Queue remembers per prefix which topics it registered and which are shaped.
      const queue = nodeQueue(stack.bridge.url, stack.token, `dl:{flow${round}-${shapes.indexOf(shape)}}`);
      const r = await drainOnce(queue, command, "drain", SHAPES.get(shape)!);
      runs.get(shape)!.push(r);
      log(`round ${round + 1}, ${shape}: ${Math.round(r.jobsPerSec)} jobs/s`);
    }
  }
} finally {
  clearInterval(sampleLoad);
  direct.disconnect();
  await stack.stop();
}

const median = (xs: number[]) => quantile(xs, 0.5);
const unkeyedRate = median(runs.get("unkeyed")!.map((r) => r.jobsPerSec));
const rows = [...runs].map(([shape, rounds]) => {
  const all = (script: keyof DrainRound["calls"]) => rounds.flatMap((r) => r.calls[script]);
  const times = (script: keyof DrainRound["calls"]) => {
    const ms = all(script);
    return ms.length ? { calls: ms.length, p50Ms: quantile(ms, 0.5), p99Ms: quantile(ms, 0.99), maxMs: Math.max(...ms) } : null;
  };
  const jobsPerSec = median(rounds.map((r) => r.jobsPerSec));
  return {
    shape,
    jobsPerSec,
    perRound: rounds.map((r) => Math.round(r.jobsPerSec)),
    ratioToUnkeyed: jobsPerSec / unkeyedRate,
    flowRead: times("flowRead"),
    claim: times("claim"),
    settle: times("settle"),
  };
});
const machine = { cpu: cpus()[0]?.model ?? "?", cores: cpus().length, node: process.version };
const loadRange = load.length ? `${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}` : "?";
const results = { date: new Date().toISOString(), jobs: JOBS, rounds: ROUNDS, chunk: CHUNK, machine, load, rows };
const f2 = (n: number | undefined) => (n === undefined ? "–" : n.toFixed(2));
const md = [
  `# Flow keys at scale: draining ${JOBS.toLocaleString("en-US")} jobs`,
  "",
  `${ROUNDS} rounds on one redis-server behind the bridge, the shapes in turn (the order reversed every other round); each drain claims ${CHUNK} at a time and acks them, as the tick does.`,
  "Jobs/s is the median of the rounds (each round in brackets); the ratio is to the unkeyed drain of the same run. Call times are Redis' own (SLOWLOG, threshold 0), over every round's calls.",
  "The work in each call (commands and arguments) is held by test/workers/queue/flow-scale.test.ts.",
  `Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average (1 min) ${loadRange}; ${results.date.slice(0, 10)}.`,
  "",
  "| topic | jobs/s | ratio to unkeyed | flow-read p50 / p99 ms | claim p50 / p99 ms | settle p50 / p99 ms |",
  "|---|---:|---:|---:|---:|---:|",
  ...rows.map(
    (r) =>
      `| ${r.shape} | ${Math.round(r.jobsPerSec).toLocaleString("en-US")} (${r.perRound.join(" / ")}) | ${r.ratioToUnkeyed.toFixed(2)} | ${r.flowRead ? `${f2(r.flowRead.p50Ms)} / ${f2(r.flowRead.p99Ms)}` : "–"} | ${f2(r.claim?.p50Ms)} / ${f2(r.claim?.p99Ms)} | ${f2(r.settle?.p50Ms)} / ${f2(r.settle?.p99Ms)} |`,
  ),
  "",
].join("\n");
writeFileSync(`${outBase}.json`, `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(`${outBase}.md`, md);
console.log(md);
