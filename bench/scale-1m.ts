/**
 * `npm run bench:scale-1m`: the million-job row of `npm run bench` alone
 * (bench/lib/scale-1m.ts): 1,000,000 scheduled jobs over 10 topics in
 * delayline and in BullMQ on one redis-server — memory per job, the largest
 * key, claim + ack with 1,000,000 vs 10,000 present, commands per job.
 * Writes bench/results/scale-1m.{json,md}.
 *
 *   npm run bench:scale-1m                       the full row (about 1.7 min on 2 cores, more under load)
 *   npm run bench:scale-1m -- --jobs 100000      a smaller smoke run (--out picks the files)
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startInfra } from "./lib/infra.js";
import { SCALE_1M_SIZES, scale1mRun, type Scale1mResult } from "./lib/scale-1m.js";
import { scale1mRows, scale1mSection, scale1mTargets } from "./report.js";

const { values: args } = parseArgs({
  options: { jobs: { type: "string" }, runs: { type: "string" }, out: { type: "string" } },
});
const sizes = {
  ...SCALE_1M_SIZES,
  ...(args.jobs ? { jobs: Number(args.jobs) } : {}),
  ...(args.runs ? { runs: Number(args.runs) } : {}),
};
const outBase = args.out ?? join(import.meta.dirname, "results", sizes.jobs === SCALE_1M_SIZES.jobs ? "scale-1m" : "tmp/scale-1m-smoke");
const started = Date.now();
const log = (line: string) => console.log(`[scale-1m ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);
const load: number[] = [];
const sampleLoad = setInterval(() => load.push(loadavg()[0]!), 10_000);

const infra = await startInfra();
process.once("SIGINT", () => void infra.stop().finally(() => process.exit(130)));
let result: Scale1mResult;
try {
  result = await scale1mRun(infra, sizes, log);
} finally {
  clearInterval(sampleLoad);
  await infra.stop();
}
const header = `${new Date().toISOString()}, \`npm run bench:scale-1m\`. Machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}. Load average (1 min) while it ran: ${load.length ? `${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}` : "?"}. Throughput: medians of ${sizes.runs} measured runs after a warm-up, range in brackets.`;
const md = [
  `# ${sizes.jobs.toLocaleString("en-US")} scheduled jobs over ${sizes.topics} topics: delayline vs BullMQ`,
  ``,
  header,
  ``,
  `| metric | delayline | BullMQ | naive | migrate | ratio | target | met? |`,
  `|---|---|---|---|---|---|---|---|`,
  ...scale1mRows(result),
  ``,
  ...scale1mSection(result),
  `## Targets`,
  ``,
  ...scale1mTargets(result).map((t) => `- ${t.name}: ${t.value} — ${t.met ? "**met**" : "**missed**"}`),
  ``,
  `How each number is taken: see bench/README.md.`,
  ``,
].join("\n");
writeFileSync(`${outBase}.json`, `${JSON.stringify({ ...result, load }, null, 2)}\n`);
writeFileSync(`${outBase}.md`, md);
console.log(md);
log(`wrote ${outBase}.json and .md`);
