/**
 * `npm run bench:shards`: the shards rows of `npm run bench` alone
 * (bench/lib/shards.ts): one shard against three, each behind a bridge
 * capped low, one shard down for a minute under load, and idle shards.
 * Writes bench/results/shards.{json,md} (`--quick`: bench/results/tmp/shards-quick.*).
 *
 *   npm run bench:shards                        both rows (about 15 min on 2 cores)
 *   npm run bench:shards -- --quick             a smoke run (about 5 min)
 *   npm run bench:shards -- --only shards-idle  one row (shards, shards-idle)
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runShards, writeShardsResults } from "./lib/shards.js";

const { values: args } = parseArgs({ options: { quick: { type: "boolean", default: false }, only: { type: "string" }, out: { type: "string" } } });
const only = args.only ? new Set(args.only.split(",")) : null;
const results = join(import.meta.dirname, "results");
const tmp = join(results, "tmp");
mkdirSync(tmp, { recursive: true });
const started = Date.now();
const log = (line: string) => console.log(`[shards ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
const r = await runShards({
  quick: args.quick!,
  scale: only === null || only.has("shards"),
  idle: only === null || only.has("shards-idle"),
  log,
  logFile: (name) => join(tmp, `stack-${name}.log`),
});
const base = args.out ?? (args.quick || only !== null ? join(tmp, args.quick ? "shards-quick" : "shards-some") : join(results, "shards"));
console.log(writeShardsResults(base, r));
log(`wrote ${base}.json and .md`);
if (r.failures.length > 0) process.exitCode = 1;
