/**
 * The shards benchmark (issue 35): the 1-vs-3 row with its outage
 * (bench/lib/shards-scale.ts, shards-outage.ts) and the idle row
 * (shards-idle.ts), at full or quick sizes; `npm run bench:shards` runs it
 * alone, `npm run bench` as its rows `shards` and `shards-idle`.
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { renderShardsMarkdown, type ShardsResults } from "./shards-report.js";
import { SHARDS_IDLE_SIZES, shardsIdleRun, type ShardsIdleSizes } from "./shards-idle.js";
import { SHARDS_SCALE_SIZES, shardsScaleRun, type ShardsScaleSizes } from "./shards-scale.js";

const SHARDS_QUICK_SIZES: { scale: ShardsScaleSizes; idle: ShardsIdleSizes } = {
  scale: { ...SHARDS_SCALE_SIZES, warmS: 5, windowS: 15, outage: { downS: 15, recoverS: 5, probeAtS: [5] } },
  idle: { ...SHARDS_IDLE_SIZES, trafficS: 3, minutes: 1, alarm: { jobs: 8, maxS: 90 }, cron: { jobs: 0, maxS: 0 }, soon: { jobs: 8, maxS: 90 } },
};

export async function runShards(options: {
  quick: boolean;
  scale: boolean;
  idle: boolean;
  log: (line: string) => void;
  logFile: (name: string) => string;
}): Promise<ShardsResults> {
  const started = Date.now();
  const load: Array<[number, number]> = [];
  const sampleLoad = setInterval(() => load.push([Math.round((Date.now() - started) / 1_000), loadavg()[0]!]), 10_000);
  const failures: string[] = [];
  const sizes = options.quick ? SHARDS_QUICK_SIZES : { scale: SHARDS_SCALE_SIZES, idle: SHARDS_IDLE_SIZES };
  const attempt = async <T>(what: string, run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (err) {
      options.log(`${what} failed: ${String(err).slice(0, 500)}`);
      failures.push(`${what}: ${String(err).slice(0, 500)}`);
      return undefined;
    }
  };
  try {
    const scale = options.scale ? await attempt("shards (1 vs 3, one down)", () => shardsScaleRun(sizes.scale, options.log, options.logFile)) : undefined;
    const idle = options.idle ? await attempt("shards idle", () => shardsIdleRun(sizes.idle, options.log, options.logFile)) : undefined;
    return {
      date: new Date(started).toISOString(),
      mode: options.quick ? "quick" : "full",
      durationS: Math.round((Date.now() - started) / 1_000),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "?", node: process.version },
      load,
      ...(scale ? { scale } : {}),
      ...(idle ? { idle } : {}),
      failures,
    };
  } finally {
    clearInterval(sampleLoad);
  }
}

/** Writes `<base>.json` and `<base>.md`. */
export function writeShardsResults(base: string, r: ShardsResults): string {
  const md = renderShardsMarkdown(r);
  writeFileSync(`${base}.json`, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(`${base}.md`, md);
  return md;
}
