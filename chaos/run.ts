/**
 * `npm run chaos`: fault injection, load and abuse against the local stack
 * (redis-server with fsync always, the bridge, the Worker in workerd), with
 * every enqueued job accounted for. Writes bench/results/chaos.{json,md}.
 *
 *   npm run chaos                      everything, full size (~15 min)
 *   npm run chaos -- --quick           everything, shortened (~5 min)
 *   npm run chaos -- --only kill-redis,stop-bridge
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { abuseSuite, wireAbuse, type WireAttack } from "./abuse-wire.js";
import { loadProducer, maxSustainedRate, type LoadResult, type RateStep } from "./load.js";
import { Api } from "../harness/api.js";
import { ChaosReceiver } from "./receiver.js";
import { failureRates, killRedis, killWorkerd, overlappingTicks, stopBridge, timeEdges, type Ctx, type ScenarioResult } from "./scenarios.js";
import { CHAOS_SETTINGS } from "./settings.js";
import { ChaosStack } from "./stack.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");

const SCENARIOS: Record<string, (ctx: Ctx) => Promise<ScenarioResult>> = {
  "failure-rates": failureRates,
  "time-edges": timeEdges,
  "kill-workerd": killWorkerd,
  "kill-redis": killRedis,
  "stop-bridge": stopBridge,
  "overlapping-ticks": overlappingTicks,
};
const PARTS = [...Object.keys(SCENARIOS), "load", "max-rate", "abuse"];

export interface ChaosOptions {
  quick: boolean;
  /** Keep the stack's data dir and the Worker's log. */
  keep?: boolean;
  only?: string[];
  log?: (line: string) => void;
}

export interface ChaosReport {
  date: string;
  mode: "full" | "quick";
  machine: { cpus: number; model: string | undefined; node: string };
  settings: Record<string, string>;
  passed: boolean;
  summary: {
    lost: number;
    jobsAccounted: number;
    faultsSurvived: string[];
    faultsFailed: string[];
    load?: { connections: number; durationSec: number; requests: number; errorRate: number; p99Ms: number; requestsPerSec: number };
    maxSustainedRate?: number;
    badInputsTried?: number;
  };
  scenarios: ScenarioResult[];
  /** The load on the Worker as deployed, in workerd through miniflare with nothing around it: judged. */
  load?: JudgedLoad;
  /**
   * The same load on the Worker as `npm start` serves it (dev/worker-host.ts), for comparison: not judged.
   * Named from when npm start ran `wrangler dev`, whose proxy gave up on requests under this load.
   */
  loadThroughDevProxy?: JudgedLoad;
  rate?: { steps: RateStep[]; maxSustained: number };
  abuse?: { suite: ReturnType<typeof abuseSuite>; wire: WireAttack[]; wireStoredJobs: number; passed: boolean };
  errors: string[];
}

type JudgedLoad = LoadResult & { passed: boolean; failures: string[] };

/** Error rate 0, and every acknowledged enqueue stored (in-flight extras at most one per connection). */
function judgeLoad(l: LoadResult, log: (line: string) => void): JudgedLoad {
  const failures: string[] = [];
  if (l.errorRate !== 0) failures.push(`error rate ${l.errorRate} (${JSON.stringify(l.statusCodes)}, ${l.errors} errors)`);
  if (l.jobsStored < l.ok || l.jobsStored > l.ok + l.connections) failures.push(`${l.ok} enqueues acknowledged but ${l.jobsStored} jobs stored`);
  log(
    `${failures.length ? "✘" : "✔"} load: ${l.requests} requests, ${l.requestsPerSec}/s, error rate ${l.errorRate}, p50 ${l.latencyMs.p50} ms, p99 ${l.latencyMs.p99} ms, ${l.jobsStored} jobs stored`,
  );
  return { ...l, passed: failures.length === 0, failures };
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? ((l: string) => console.log(`[chaos] ${l}`));
  const want = (part: string) => !options.only || options.only.includes(part);
  const built = spawnSync(process.execPath, [join(root, "scripts/build.mjs")], { stdio: "inherit" });
  if (built.status !== 0) throw new Error("generating the Lua module and the API reference failed");

  const report: ChaosReport = {
    date: new Date().toISOString(),
    mode: options.quick ? "quick" : "full",
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    settings: CHAOS_SETTINGS,
    passed: false,
    summary: { lost: 0, jobsAccounted: 0, faultsSurvived: [], faultsFailed: [] },
    scenarios: [],
    errors: [],
  };
  const receiver = await new ChaosReceiver().start();
  let stack: ChaosStack | undefined;
  // Ctrl-C or SIGTERM: stop what this run started, then leave.
  const onSignal = () => {
    log("stopping");
    void Promise.allSettled([stack?.stop(), receiver.close()]).then(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    if (PARTS.some(want)) {
      log("starting redis-server (fsync always), the bridge and the Worker in workerd");
      stack = await ChaosStack.start({ settings: CHAOS_SETTINGS, keep: options.keep ?? false });
      if (options.keep) log(`data dir and Worker log kept in ${stack.dataDir}`);
      stack.startCron();
      const api = new Api(stack.url, stack.apiToken);
      const ctx: Ctx = { stack, api, receiver, quick: options.quick, log };
      for (const [name, scenario] of Object.entries(SCENARIOS)) {
        if (!want(name)) continue;
        try {
          await stack.settleFds(2_000, 120_000);
          const result = await scenario(ctx);
          result.fault.workerdOpenFdsAfter = stack.workerdOpenFds();
          report.scenarios.push(result);
        } catch (err) {
          report.errors.push(`${name}: ${(err as Error).stack ?? String(err)}`);
          log(`✘ ${name} failed to run: ${(err as Error).message}`);
        }
      }
      await stack.settleFds(2_000, 120_000);
      if (want("load")) {
        const connections = options.quick ? 200 : 1_000;
        const durationSec = options.quick ? 8 : 30;
        log(`▶ load: ${connections} connections for ${durationSec} s on POST /v1/jobs, the Worker as deployed, in workerd through miniflare alone`);
        const direct = await stack.startDirectWorker();
        try {
          report.load = judgeLoad(await loadProducer(new Api(direct.url, stack.apiToken), stack.apiToken, connections, durationSec), log);
        } finally {
          await direct.stop();
        }
      }
      await stack.settleFds(2_000, 120_000);
      if (want("max-rate")) {
        log("▶ max-rate: stepping the enqueue rate until the backlog grows");
        const rates = options.quick ? [50, 200, 800] : [50, 100, 200, 300, 400, 600, 800, 1_200, 1_600];
        report.rate = await maxSustainedRate(api, receiver, rates, options.quick ? 8 : 20, log);
        log(`✔ max-rate: the tick keeps up with ${report.rate.maxSustained} enqueues/s`);
      }
      if (want("abuse")) {
        log("▶ abuse over real sockets");
        const wire = await wireAbuse(stack.url, stack.apiToken, api);
        report.abuse = { suite: { passed: true, tests: "not run", badInputsTried: 0 }, wire: wire.attacks, wireStoredJobs: wire.storedJobs, passed: false };
      }
      if (want("load") && !options.quick) {
        // Last, from when this went through wrangler dev's proxy, which could leave the stack starved.
        await stack.settleFds(2_000, 120_000);
        log("▶ load on the Worker as npm start serves it (for comparison; not judged)");
        report.loadThroughDevProxy = judgeLoad(await loadProducer(api, stack.apiToken, 1_000, 30), log);
      }
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await stack?.stop();
    await receiver.close();
  }
  if (report.abuse) {
    log("▶ abuse suite (test/workers/api/abuse.test.ts)");
    report.abuse.suite = abuseSuite(root);
    report.abuse.passed = report.abuse.suite.passed && report.abuse.wireStoredJobs === 0 && report.abuse.wire.every((a) => a.ok || a.localOnly);
    log(`${report.abuse.passed ? "✔" : "✘"} abuse: ${report.abuse.suite.badInputsTried + report.abuse.wire.length} bad inputs (${report.abuse.suite.tests})`);
  }

  const s = report.summary;
  for (const r of report.scenarios) {
    s.lost += r.accounting.lost;
    s.jobsAccounted += r.accounting.enqueued;
    (r.passed ? s.faultsSurvived : s.faultsFailed).push(r.name);
  }
  if (report.load) {
    s.load = {
      connections: report.load.connections,
      durationSec: report.load.durationSec,
      requests: report.load.requests,
      errorRate: report.load.errorRate,
      p99Ms: report.load.latencyMs.p99,
      requestsPerSec: report.load.requestsPerSec,
    };
  }
  if (report.rate) s.maxSustainedRate = report.rate.maxSustained;
  if (report.abuse) s.badInputsTried = report.abuse.suite.badInputsTried + report.abuse.wire.length;
  report.passed = report.errors.length === 0 && s.faultsFailed.length === 0 && s.lost === 0 && (report.load?.passed ?? true) && (report.abuse?.passed ?? true);
  return report;
}

export function markdown(r: ChaosReport): string {
  const s = r.summary;
  const lines = [
    "# Chaos: faults, load and abuse with exact accounting",
    "",
    `${r.date}, ${r.mode} run (\`npm run chaos${r.mode === "quick" ? " -- --quick" : ""}\`), ${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}.`,
    `Stack: redis-server (append-only file, \`appendfsync always\`), the REST bridge, the Worker in workerd as \`npm start\` runs it (through miniflare); settings ${Object.entries(
      r.settings,
    )
      .map(([k, v]) => `\`${k}=${v}\``)
      .join(", ")}, the rest as in wrangler.toml.`,
    "",
    `**${r.passed ? "All passed" : "FAILED"}.** Lost: **${s.lost}** of ${s.jobsAccounted} acknowledged jobs. Faults survived: ${s.faultsSurvived.length} of ${s.faultsSurvived.length + s.faultsFailed.length}.` +
      (s.load
        ? ` Load: ${s.load.connections} connections for ${s.load.durationSec} s, ${s.load.requests} requests, error rate ${s.load.errorRate}, p99 ${s.load.p99Ms} ms.`
        : "") +
      (s.maxSustainedRate !== undefined ? ` Highest sustained enqueue rate the tick keeps up with: ${s.maxSustainedRate}/s.` : "") +
      (s.badInputsTried !== undefined ? ` Bad inputs tried: ${s.badInputsTried}.` : ""),
    "",
    "Every acknowledged job (an id from a 201, or a 200 for its idempotency key) ends in exactly one column: delivered once, delivered again after a fault (at least once), dead, still scheduled (due after the run), or lost.",
    "",
    "## Faults",
    "",
    "| scenario | result | acknowledged | delivered once | redelivered (extra) | dead | scheduled | lost | early | time |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...r.scenarios.map((x) => {
      const a = x.accounting;
      return `| ${x.title} | ${x.passed ? "pass" : "**fail**"} | ${a.enqueued} | ${a.deliveredOnce} | ${a.redelivered} (${a.extraDeliveries}) | ${a.dead} | ${a.scheduled} | ${a.lost} | ${a.early} | ${Math.round(x.durationMs / 1000)} s |`;
    }),
    "",
    ...r.scenarios.flatMap((x) => [`- **${x.name}**: ${x.failures.length ? `failures: ${x.failures.join("; ")}. ` : ""}\`${JSON.stringify(x.fault)}\``]),
    "",
  ];
  if (r.load) {
    const runs: Array<[string, JudgedLoad]> = [["the Worker in workerd (judged)", r.load]];
    if (r.loadThroughDevProxy) runs.push(["as `npm start` serves it (not judged)", r.loadThroughDevProxy]);
    lines.push(
      "## Load",
      "",
      `autocannon on loopback, \`POST /v1/jobs\` (jobs due in an hour), ${r.load.connections} connections for ${r.load.durationSec} s, with twenty witness loops beside it keeping what any non-2xx answer said. ` +
        "Judged: the Worker as `wrangler deploy` bundles it, served by workerd through miniflare on the same bridge and Redis with nothing around it, as Cloudflare's edge calls it. " +
        "Shown for comparison only: the same load on the Worker as `npm start` serves it (through miniflare too, its static assets on a Worker beside it).",
      "",
      "| target | requests | per second | 2xx | non-2xx | errors (timeouts) | error rate | p50 | p90 | p99 | max | jobs stored |",
      "|---|---|---|---|---|---|---|---|---|---|---|---|",
      ...runs.map(
        ([target, l]) =>
          `| ${target} | ${l.requests} | ${l.requestsPerSec} | ${l.ok} | ${l.non2xx} | ${l.errors} (${l.timeouts}) | ${l.errorRate} | ${l.latencyMs.p50} ms | ${l.latencyMs.p90} ms | ${l.latencyMs.p99} ms | ${l.latencyMs.max} ms | ${l.jobsStored} |`,
      ),
      "",
      ...runs.flatMap(([target, l]) => [
        `- ${target}: witnesses ${JSON.stringify(l.witness.byStatus)} of ${l.witness.sent}${l.witness.samples.length ? `; non-2xx answers said: ${[...new Set(l.witness.samples)].map((x) => `\`${x}\``).join("; ")}` : ""}. ` +
          (l.failures.length
            ? `Failures: ${l.failures.join("; ")}.`
            : `Every acknowledged enqueue is stored: ${l.jobsStored} jobs for ${l.ok} 2xx counted; the ${l.jobsStored - l.ok} more were requests still in flight when autocannon stopped counting (at most one per connection), which the Worker completed.`),
      ]),
      "",
    );
  }
  if (r.rate) {
    lines.push(
      "## Highest sustained enqueue rate",
      "",
      "Each second one batch request of jobs due at once (so the enqueue path is not the limit), delivered over http to a local receiver; the backlog (due, unclaimed) sampled just before each next batch. The topic has no concurrency limit (the default), so the tick, not a setting, is what is measured. A step is kept up with while the backlog does not trend up (under 5 % of the rate per second) and what is left at its end is gone within 5 s.",
      "",
      "| asked /s | enqueued /s | delivered /s | backlog each second | slope /s | kept up | drained in |",
      "|---|---|---|---|---|---|---|",
      ...r.rate.steps.map(
        (x) =>
          `| ${x.rate} | ${x.achieved} | ${x.delivered} | ${x.backlog.join(" ")} | ${x.backlogSlope} | ${x.keptUp ? "yes" : "no"} | ${Math.round(x.drainMs / 100) / 10} s |`,
      ),
      "",
      `Highest sustained: **${r.rate.maxSustained} enqueues/s**.`,
      "",
    );
  }
  if (r.abuse) {
    const a = r.abuse;
    lines.push(
      "## Abuse",
      "",
      `- In-process suite (\`test/workers/api/abuse.test.ts\`, Worker code in workerd, a Redis of its own): ${a.suite.badInputsTried} bad inputs, ${a.suite.tests}; every refusal checked for its exact 4xx, problem+json, an unchanged digest of all of Redis and, where the edge can judge alone, no Redis command.`,
      `- Over real sockets against the Worker as \`npm start\` serves it (${a.wire.length}; jobs stored by them: ${a.wireStoredJobs}):`,
      "",
      "| attack | answer | expected | ok |",
      "|---|---|---|---|",
      ...a.wire.map((w) => `| ${w.label} | ${w.answer} | ${w.expected} | ${w.ok ? "yes" : w.localOnly ? `local dev only: ${w.localOnly}` : "**no**"} |`),
      "",
    );
  }
  if (r.errors.length) lines.push("## Errors", "", ...r.errors.map((e) => `    ${e.split("\n")[0]}`), "");
  return lines.join("\n");
}

async function main() {
  const { values } = parseArgs({
    options: { quick: { type: "boolean", default: false }, keep: { type: "boolean", default: false }, only: { type: "string" }, out: { type: "string" } },
  });
  const only = values.only?.split(",").map((x) => x.trim());
  const unknown = only?.filter((o) => !PARTS.includes(o)) ?? [];
  if (unknown.length) throw new Error(`unknown parts ${unknown.join(", ")}; choose from ${PARTS.join(", ")}`);
  const report = await runChaos({ quick: values.quick, keep: values.keep, ...(only ? { only } : {}) });
  // Only a complete full run replaces the committed report.
  const out = values.out ?? (values.quick || only ? join(root, "bench/results/tmp/chaos") : join(root, "bench/results/chaos"));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(`${out}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${out}.md`, `${markdown(report)}\n`);
  console.log(markdown(report));
  console.log(`\n[chaos] report: ${out}.json, ${out}.md`);
  process.exitCode = report.passed ? 0 : 1;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  main().catch((err: Error) => {
    console.error(`[chaos] ${err.stack ?? err.message}`);
    process.exitCode = 1;
  });
}
