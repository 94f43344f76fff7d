/** The results of `npm run bench` and their markdown table. */
import type { DeliverySystem, SustainedRun } from "./lib/deliver.js";
import { RECORD_CAP_BYTES, type Scale1mResult } from "./lib/scale-1m.js";
import { shardsRows, shardsTargets, type ShardsResults } from "./lib/shards-report.js";
import type { FloorSystem, SystemName } from "./suites.js";

/** One measurement over the measured runs. */
export interface Series {
  median: number;
  min: number;
  max: number;
  runs: number[];
  unit: string;
}

type BySystem = Partial<Record<SystemName, Series>>;

export interface LatenessSummary {
  p50: Series;
  p99: Series;
  max: Series;
  /** Summed over the measured runs. */
  early: number;
  missing: number;
  duplicates: number;
  requestsPerJob?: Series;
  commandsPerJob?: Series;
}

/** One system's http delivery runs (bench/lib/deliver.ts). */
export interface DeliverySummary {
  jobsPerSec: Series;
  cpuUsPerJob: Series;
  connections: Series;
  /** Time without an arrival for 20 ms or more, per run (chunk boundaries show here). */
  pausedMs?: Series;
  /** Summed over the measured runs. */
  duplicates: number;
  /** delayline: the tick's REST requests and Redis commands per delivery. */
  requestsPerJob?: Series;
  commandsPerJob?: Series;
  /** delayline and BullMQ: CPU of the services called (redis-server; delayline also the REST bridge), µs per delivery. */
  serviceCpuUsPerJob?: Series;
}

export interface Results {
  date: string;
  mode: "quick" | "full";
  durationS: number;
  runs: number;
  machine: { cpu: string; cores: number; memoryGiB: number; node: string; redis: string; bullmq: string; wrangler: string };
  sizes: unknown;
  settings: Record<string, unknown>;
  metrics: Record<string, BySystem>;
  lateness: Record<string, LatenessSummary>;
  scale?: { small: Series; large: Series; smallUsec: Series; largeUsec: Series };
  /** 1,000,000 scheduled jobs over 10 topics (bench/lib/scale-1m.ts); absent with BENCH_SCALE_1M=0. */
  scale1m?: Scale1mResult;
  idle?: Record<SystemName, number>;
  /** Single enqueue at the architecture's floor (bench/floor/). */
  enqueueFloor?: EnqueueFloorSummary;
  /** http delivery side by side: the tick, BullMQ and the floor Worker. */
  delivery?: Partial<Record<DeliverySystem, DeliverySummary>>;
  /** Jobs offered to the tick at fixed rates. */
  sustained?: SustainedRun[];
  /** One shard against three, one down, idle shards (bench/lib/shards.ts); its detail goes to shards.md. */
  shards?: ShardsResults;
  /** Runs that failed twice and were left out. */
  failures: string[];
  /** The machine's 1-minute load average every 10 s: [seconds into the run, load]. */
  load: Array<[number, number]>;
  raw: unknown;
}

/** The single-enqueue row: delayline's Worker and the floor Worker in workerd, and BullMQ, side by side. */
export interface EnqueueFloorSummary {
  connections: number;
  seconds: number;
  systems: Partial<Record<FloorSystem, FloorStats>>;
}

/** One system's runs in the single-enqueue row; workerd's CPU for the Workers only. */
export interface FloorStats {
  perSec: Series;
  p50Ms: Series;
  p99Ms: Series;
  workerdCpuMs?: Series;
  load: Series;
}

/** The enqueue target of issue 18: delayline's single enqueue at ≥ 0.8× the floor's rate. */
export const ENQUEUE_FLOOR_TARGET = 0.8;

function num(n: number): string {
  if (!Number.isFinite(n)) return "—";
  const abs = Math.abs(n);
  if (abs >= 100) return Math.round(n).toLocaleString("en-US");
  if (abs >= 10) return n.toFixed(1);
  if (abs >= 1) return n.toFixed(2);
  return n.toFixed(3);
}

function cell(s: Series | undefined): string {
  if (!s) return "—";
  const m = num(s.median);
  const lo = num(s.min);
  const hi = num(s.max);
  return lo === hi ? m : `${m} (${lo}–${hi})`;
}

const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
const times = (r: number | undefined) => (r === undefined ? "—" : `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`);
const verdict = (ok: boolean | undefined) => (ok === undefined ? "—" : ok ? "**met**" : "**missed**");

/** The targets of issue 7, each evaluated against the medians. */
export function targets(r: Results): Array<{ name: string; value: string; met: boolean | undefined }> {
  const m = r.metrics;
  const dl = (k: string) => m[k]?.delayline?.median;
  const bq = (k: string) => m[k]?.bullmq?.median;
  const out: Array<{ name: string; value: string; met: boolean | undefined }> = [];
  const cmd = ratio(dl("successCommands"), bq("successCommands"));
  out.push({
    name: "Redis commands per job ≤ 4 and ≤ 0.15× BullMQ's",
    value: `${num(dl("successCommands") ?? NaN)} commands, ${times(cmd)} BullMQ's`,
    met: cmd === undefined ? undefined : dl("successCommands")! <= 4 && cmd <= 0.15,
  });
  const drain = ratio(dl("drainJobsPerSec"), bq("drainJobsPerSec"));
  out.push({ name: "backlog drain ≥ 1.5× BullMQ", value: times(drain), met: drain === undefined ? undefined : drain >= 1.5 });
  const l = r.lateness["delayline@100"];
  const lb = r.lateness.bullmq;
  const lat = ratio(l?.p99.median, lb?.p99.median);
  out.push({
    name: "lateness p99 at TICK_POLL_MS=100 ≤ 0.5× BullMQ's, 0 early",
    value: l ? `${num(l.p99.median)} ms vs ${num(lb?.p99.median ?? NaN)} ms = ${times(lat)}, ${l.early} early` : "—",
    met: lat === undefined || !l ? undefined : lat <= 0.5 && l.early === 0,
  });
  const mem = ratio(dl("bytesPerJob"), bq("bytesPerJob"));
  out.push({ name: "memory per job ≤ 0.5× BullMQ's", value: times(mem), met: mem === undefined ? undefined : mem <= 0.5 });
  const sc = r.scale ? r.scale.large.median / r.scale.small.median : undefined;
  out.push({ name: "scale ratio ≥ 0.9", value: sc === undefined ? "—" : sc.toFixed(2), met: sc === undefined ? undefined : sc >= 0.9 });
  const cpu = ratio(dl("successUsec"), bq("successUsec"));
  out.push({ name: "Redis CPU per job ≤ 0.5× BullMQ's", value: times(cpu), met: cpu === undefined ? undefined : cpu <= 0.5 });
  return out;
}

/** The million-job targets of issue 33. */
export const SCALE_1M_TARGETS = { memoryRatio: 0.5, throughputRatio: 0.9, commandsPerJob: 3.5 } as const;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(bytes >= 10 * 2 ** 20 ? 0 : 1)} MB`;
const medianOf = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const seriesOfRuns = (xs: number[], unit: string): Series => ({ median: medianOf(xs), min: Math.min(...xs), max: Math.max(...xs), runs: xs, unit });
const jobsLabel = (s: Scale1mResult) => s.sizes.jobs.toLocaleString("en-US");

/** The million-job row's targets (issue 33), evaluated against the medians. */
export function scale1mTargets(s: Scale1mResult): Array<{ name: string; value: string; met: boolean | undefined }> {
  const mem = s.bytesPerJob.delayline / s.bytesPerJob.bullmq;
  const large = medianOf(s.throughput.large.map((r) => r.jobsPerSec));
  const small = medianOf(s.throughput.small.map((r) => r.jobsPerSec));
  const n = jobsLabel(s);
  const l = s.census.delayline.largest;
  return [
    {
      name: `${n} jobs: memory per job ≤ ${SCALE_1M_TARGETS.memoryRatio}× BullMQ's`,
      value: `${Math.round(s.bytesPerJob.delayline)} vs ${Math.round(s.bytesPerJob.bullmq)} B = ${times(mem)}`,
      met: mem <= SCALE_1M_TARGETS.memoryRatio,
    },
    {
      name: `${n} jobs: largest key ≤ ${mb(RECORD_CAP_BYTES)} (Upstash's record cap)`,
      value: `${l.pattern} (${l.type}), ${mb(l.bytes)}`,
      met: l.bytes <= RECORD_CAP_BYTES,
    },
    {
      name: `claim + ack with ${n} vs ${s.sizes.small.toLocaleString("en-US")} future jobs ≥ ${SCALE_1M_TARGETS.throughputRatio}`,
      value: `${Math.round(large)} vs ${Math.round(small)} jobs/s = ${(large / small).toFixed(2)}`,
      met: large / small >= SCALE_1M_TARGETS.throughputRatio,
    },
    {
      name: `commands per job, success, at ${n} present ≤ ${SCALE_1M_TARGETS.commandsPerJob}`,
      value: num(s.commands.success),
      met: s.commands.success <= SCALE_1M_TARGETS.commandsPerJob,
    },
  ];
}

/** The million-job row's lines of the main table. */
export function scale1mRows(s: Scale1mResult): string[] {
  const t = scale1mTargets(s);
  const n = jobsLabel(s);
  const small = s.sizes.small.toLocaleString("en-US");
  const large = seriesOfRuns(
    s.throughput.large.map((r) => r.jobsPerSec),
    "jobs/s",
  );
  const few = seriesOfRuns(
    s.throughput.small.map((r) => r.jobsPerSec),
    "jobs/s",
  );
  const dl = s.census.delayline;
  const bq = s.census.bullmq;
  return [
    `| **${n} scheduled jobs over ${s.sizes.topics} topics: Redis memory per job**, bytes (100-byte payload) | ${Math.round(s.bytesPerJob.delayline)} | ${Math.round(s.bytesPerJob.bullmq)} | — | — | ${times(s.bytesPerJob.delayline / s.bytesPerJob.bullmq)} | ≤ ${SCALE_1M_TARGETS.memoryRatio}× | ${verdict(t[0]!.met)} |`,
    `| … largest key after storing them (MEMORY USAGE, whole), bytes | ${dl.largest.bytes.toLocaleString("en-US")} = ${mb(dl.largest.bytes)}: \`${dl.largest.pattern}\` (${dl.largest.type}, ${dl.largest.elements.toLocaleString("en-US")} elements)¹ | ${bq.largest.bytes.toLocaleString("en-US")}: \`${bq.largest.pattern}\` (${bq.largest.type}) | — | — | | ≤ ${mb(RECORD_CAP_BYTES)} (Upstash's record cap) | ${verdict(t[1]!.met)} |`,
    `| **claim + ack jobs/s** (Queue over TCP, chunks of 100) with ${n} vs ${small} future jobs over ${s.sizes.topics} topics | ${cell(large)} vs ${cell(few)} = ${(large.median / few.median).toFixed(2)} (each run: ${large.runs.map((x, i) => (x / few.runs[i]!).toFixed(2)).join(", ")}) | — | — | — | | ≥ ${SCALE_1M_TARGETS.throughputRatio} | ${verdict(t[2]!.met)} |`,
    `| … Redis time of claim + ack, µs per job, ${n} vs ${small} | ${cell(
      seriesOfRuns(
        s.throughput.large.map((r) => r.usecPerJob),
        "µs/job",
      ),
    )} vs ${cell(
      seriesOfRuns(
        s.throughput.small.map((r) => r.usecPerJob),
        "µs/job",
      ),
    )} | | | | | | |`,
    `| **Redis commands per job, success, ${n} present** (enqueue one per call + claim + ack) | ${num(s.commands.success)} (${num(s.commands.enqueue)} + ${num(s.commands.consume)}) | — | — | — | | ≤ ${SCALE_1M_TARGETS.commandsPerJob} | ${verdict(t[3]!.met)} |`,
  ];
}

/** The million-job section: the key census of each system and the footnote on a topic's due set. */
export function scale1mSection(s: Scale1mResult): string[] {
  const z = s.census.delayline.largestZset;
  const perTopic = s.sizes.jobs / s.sizes.topics;
  const groups = (c: Scale1mResult["census"]["delayline"]) =>
    c.groups
      .slice(0, 12)
      .map((g) => `| \`${g.pattern}\` | ${g.type} | ${g.keys.toLocaleString("en-US")} | ${g.largestBytes.toLocaleString("en-US")} | ${mb(g.bytes)} |`);
  return [
    `## ${jobsLabel(s)} scheduled jobs over ${s.sizes.topics} topics`,
    ``,
    `Stored in ${Math.round(s.storeS.delayline)} s (delayline, enqueueBatch through the REST bridge) and ${Math.round(s.storeS.bullmq)} s (BullMQ, addBulk); the row took ${Math.floor(s.durationS / 60)} min ${s.durationS % 60} s.`,
    ``,
    ...(z
      ? [
          `¹ The per-topic due set is expected to be the largest key once job records live in per-job keys. Here the largest sorted set is \`${z.pattern}\`: ${z.bytes.toLocaleString("en-US")} B (${mb(z.bytes)}) for ${z.elements.toLocaleString("en-US")} members (${perTopic.toLocaleString("en-US")} jobs per topic), ${num(z.bytes / Math.max(1, z.elements))} B per job, so one topic holds about ${Math.floor(RECORD_CAP_BYTES / (z.bytes / Math.max(1, z.elements))).toLocaleString("en-US")} scheduled jobs under the ${mb(RECORD_CAP_BYTES)} cap.`,
          ``,
        ]
      : []),
    `Keys after storing (SCAN of the whole database, TYPE and MEMORY USAGE of each; the largest key measured again whole, SAMPLES 0). delayline, ${s.census.delayline.keys.toLocaleString("en-US")} keys:`,
    ``,
    `| key pattern | type | keys | largest, bytes | all, MB |`,
    `|---|---|---|---|---|`,
    ...groups(s.census.delayline),
    ``,
    `BullMQ, ${s.census.bullmq.keys.toLocaleString("en-US")} keys:`,
    ``,
    `| key pattern | type | keys | largest, bytes | all, MB |`,
    `|---|---|---|---|---|`,
    ...groups(s.census.bullmq),
    ``,
    `Commands per job on the success path, by name (delayline, ${jobsLabel(s)} present): ${Object.entries(s.commands.mix)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}.`,
    ``,
  ];
}

/** The single-enqueue target, evaluated against the medians. */
export function enqueueFloorTarget(r: Results): { name: string; value: string; met: boolean | undefined } | undefined {
  const e = r.enqueueFloor?.systems;
  if (!e) return undefined;
  const vsFloor = ratio(e.delayline?.perSec.median, e.floor?.perSec.median);
  const vsBull = ratio(e.delayline?.perSec.median, e.bullmq?.perSec.median);
  return {
    name: `single enqueue at ${r.enqueueFloor!.connections} connections ≥ ${ENQUEUE_FLOOR_TARGET}× the floor's rate`,
    value: `${num(e.delayline?.perSec.median ?? NaN)} vs ${num(e.floor?.perSec.median ?? NaN)} jobs/s = ${times(vsFloor)} the floor (BullMQ ${num(e.bullmq?.perSec.median ?? NaN)}: ${times(vsBull)})`,
    met: vsFloor === undefined ? undefined : vsFloor >= ENQUEUE_FLOOR_TARGET,
  };
}

/** The single-enqueue row's lines of the main table: the floor has no column, so its numbers go beside delayline's. */
function enqueueFloorRows(r: Results): string[] {
  const f = r.enqueueFloor;
  const e = f?.systems;
  if (!f || !e) return [];
  const vs = (pick: (s: FloorStats) => Series | undefined) => {
    const d = e.delayline ? pick(e.delayline) : undefined;
    const fl = e.floor ? pick(e.floor) : undefined;
    return `${cell(d)} vs the floor ${cell(fl)} = ${times(ratio(d?.median, fl?.median))}`;
  };
  const bull = (pick: (s: FloorStats) => Series | undefined) => cell(e.bullmq ? pick(e.bullmq) : undefined);
  const t = enqueueFloorTarget(r);
  return [
    `| **single enqueue at ${f.connections} connections: delayline vs the floor vs BullMQ**, jobs/s (Workers in workerd via miniflare, no dev proxy; BullMQ: ${f.connections} \`add\`s in flight) | ${vs((s) => s.perSec)} | ${bull((s) => s.perSec)} | — | — | ${times(ratio(e.delayline?.perSec.median, e.bullmq?.perSec.median))} | ≥ ${ENQUEUE_FLOOR_TARGET}× the floor | ${verdict(t?.met)} |`,
    `| … workerd CPU per enqueue, ms | ${vs((s) => s.workerdCpuMs)} | — | — | — | | | |`,
    `| … latency p50 / p99, ms | ${vs((s) => s.p50Ms)} / ${vs((s) => s.p99Ms)} | ${bull((s) => s.p50Ms)} / ${bull((s) => s.p99Ms)} | — | — | | | |`,
  ];
}

export function renderMarkdown(r: Results): string {
  const m = r.metrics;
  const rows: string[] = [];
  const row = (label: string, s: BySystem | undefined, target = "", met: boolean | undefined = undefined, showRatio = true) => {
    if (!s || Object.keys(s).length === 0) return;
    const rt = showRatio ? times(ratio(s.delayline?.median, s.bullmq?.median)) : "—";
    rows.push(
      `| ${label} | ${cell(s.delayline)} | ${cell(s.bullmq)} | ${cell(s.naive)} | ${cell(s.migrate)} | ${rt} | ${target} | ${target ? verdict(met) : ""} |`,
    );
  };
  const t = targets(r);
  const metOf = (i: number) => t[i]!.met;

  row("**Redis commands per job, success** (enqueue + claim + ack)", m.successCommands, "≤ 4 and ≤ 0.15×", metOf(0));
  row("… enqueue (one job per call)", m.enqueueCommands);
  row("… claim + ack (delayline: chunks of 100)", m.consumeCommands);
  row("… per failed attempt (claim + retry)", m.failedAttemptCommands);
  row("… dead-lettering (claim + dead)", m.deadCommands);
  row("… claim + ack in the tick, workerd (drain, chunks of 1,000)", m.drainCommands);
  row("**requests per job, success** (delayline: REST; peers: commands sent)", m.successRequests);
  row("… claim + ack (delayline: REST requests)", m.consumeRequests);
  row("… in the tick, workerd (drain)", m.drainRequests);
  const lt = r.lateness;
  const lateRow = (_label: string, pick: (l: LatenessSummary) => Series) => {
    const s: BySystem = {};
    if (lt["delayline@100"]) s.delayline = pick(lt["delayline@100"]);
    for (const k of ["bullmq", "naive", "migrate"] as const) if (lt[k]) s[k] = pick(lt[k]);
    return s;
  };
  row("**backlog drain**, jobs/s (no-op handler)", m.drainJobsPerSec, "≥ 1.5×", metOf(1));
  if (Object.keys(lt).length > 0) {
    row(
      "**lateness p99**, ms (delayline TICK_POLL_MS=100)",
      lateRow("p99", (l) => l.p99),
      "≤ 0.5×, 0 early",
      metOf(2),
    );
    row(
      "… lateness p50, ms",
      lateRow("p50", (l) => l.p50),
    );
    row(
      "… lateness max, ms",
      lateRow("max", (l) => l.max),
    );
    const early: BySystem = {};
    for (const [k, v] of Object.entries(lt)) {
      const sys = k === "delayline@100" ? "delayline" : k === "delayline@1000" ? undefined : (k as SystemName);
      if (sys) early[sys] = { median: v.early, min: v.early, max: v.early, runs: [v.early], unit: "jobs" };
    }
    row("… early dispatches (all runs) / missing / duplicates", early, "", undefined, false);
    if (lt["delayline@1000"]) {
      const l = lt["delayline@1000"];
      rows.push(`| … delayline at TICK_POLL_MS=1000: p50 / p99 / max, ms | ${cell(l.p50)} / ${cell(l.p99)} / ${cell(l.max)} | | | | | | |`);
    }
    for (const k of ["delayline@100", "delayline@1000"]) {
      const l = lt[k];
      if (l?.requestsPerJob)
        rows.push(
          `| … tick cost during the lateness run (${k.slice(10)} ms poll): requests / commands per job | ${cell(l.requestsPerJob)} / ${cell(l.commandsPerJob)} | | | | | | |`,
        );
    }
  }
  row("**enqueue, one per call**, jobs/s (delayline: POST /v1/jobs to the Worker as npm start serves it; 50 in flight)", m.enqueueSinglePerSec);
  row("… batched (1,000 per call), jobs/s (delayline: POST /v1/jobs/batch)", m.enqueueBatchedPerSec);
  rows.push(...enqueueFloorRows(r));
  row("**Redis memory per scheduled job**, bytes (100-byte payload)", m.bytesPerJob, "≤ 0.5×", metOf(3));
  if (r.scale) {
    const many = r.mode === "quick" ? "100,000" : "500,000";
    rows.push(
      `| **scale**: claim + ack jobs/s (Queue over TCP) with ${many} vs 10,000 future jobs present | ${cell(r.scale.large)} vs ${cell(r.scale.small)} = ${(r.scale.large.median / r.scale.small.median).toFixed(2)} | — | — | — | | ≥ 0.9 | ${verdict(metOf(4))} |`,
      `| … Redis time of claim + ack, µs per job, ${many} vs 10,000 future jobs | ${cell(r.scale.largeUsec)} vs ${cell(r.scale.smallUsec)} | | | | | | |`,
    );
  }
  if (r.idle) {
    const s: BySystem = {};
    for (const [k, v] of Object.entries(r.idle)) s[k as SystemName] = { median: v, min: v, max: v, runs: [v], unit: "commands/min" };
    row("**idle**: Redis commands per minute, nothing due", s);
  }
  if (r.scale1m) rows.push(...scale1mRows(r.scale1m));
  if (r.shards) rows.push(...shardsRows(r.shards.scale, r.shards.idle));
  row("**Redis CPU per job**, µs (commandstats usec, success path)", m.successUsec, "≤ 0.5×", metOf(5));
  row("… redis-server process CPU per job, µs (INFO cpu)", m.successCpuUsec);

  const lines = [
    `# delayline vs BullMQ, the naive loop and the migrate script`,
    ``,
    `${r.mode === "quick" ? "**Quick (smoke) run: small sizes, not the numbers to quote.** " : ""}${r.date}, \`npm run bench${r.mode === "quick" ? " -- --quick" : ""}\` took ${Math.floor(r.durationS / 60)} min ${r.durationS % 60} s.`,
    `Machine: ${r.machine.cores} × ${r.machine.cpu}, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}, redis-server ${r.machine.redis}, BullMQ ${r.machine.bullmq}, wrangler ${r.machine.wrangler}.`,
    `Medians of ${r.runs} measured runs after a warm-up, range in brackets; ratio = delayline ÷ BullMQ.`,
    ...(r.load.length > 0
      ? [
          `Load average (1 min) while it ran: ${Math.min(...r.load.map((l) => l[1])).toFixed(1)}–${Math.max(...r.load.map((l) => l[1])).toFixed(1)} on ${r.machine.cores} cores (the machine is shared).`,
        ]
      : []),
    ``,
    `| metric | delayline | BullMQ | naive | migrate | ratio | target | met? |`,
    `|---|---|---|---|---|---|---|---|`,
    ...rows,
    ``,
    ...deliverySection(r),
    ...sustainedSection(r),
    ...latenessRunsSection(r),
    ...(r.scale1m ? scale1mSection(r.scale1m) : []),
    `## Targets`,
    ``,
    ...[...t, enqueueFloorTarget(r), ...(r.scale1m ? scale1mTargets(r.scale1m) : []), ...(r.shards ? shardsTargets(r.shards.scale, r.shards.idle) : [])]
      .filter((x) => x !== undefined)
      .map((x) => `- ${x.name}: ${x.value} — ${verdict(x.met)}`),
    ``,
    ...(r.failures.length > 0 ? [`## Runs left out (failed twice)`, ``, ...r.failures.map((f) => `- ${f}`), ``] : []),
    `## Settings`,
    ``,
    "```json",
    JSON.stringify({ sizes: r.sizes, settings: r.settings }, null, 1),
    "```",
    ``,
    `How each number is taken: see bench/README.md.`,
    ``,
  ];
  return lines.join("\n");
}

const ms = (n: number) => (Number.isFinite(n) ? `${Math.round(n).toLocaleString("en-US")}` : "—");

/**
 * The ratio of two systems' rates in each round of alternating runs (the
 * runs of one round follow each other, so a machine that slows down for a
 * while slows both): " (each round: …)", or "" when a run failed and the
 * rounds no longer pair up.
 */
function eachRound(a: Series | undefined, b: Series | undefined): string {
  if (!a || !b || a.runs.length !== b.runs.length || a.runs.length < 2) return "";
  return ` (each round: ${a.runs.map((x, i) => times(ratio(x, b.runs[i]))).join(", ")})`;
}

/** http delivery: the tick beside BullMQ and the floor Worker, with the ratios issue 18 sets targets on. */
export function deliveryTargets(r: Results): Array<{ name: string; value: string; met: boolean | undefined }> {
  const d = r.delivery;
  const dl = d?.delayline?.jobsPerSec;
  const vsFloor = ratio(dl?.median, d?.floor?.jobsPerSec.median);
  const vsBull = ratio(dl?.median, d?.bullmq?.jobsPerSec.median);
  return [
    {
      name: "http delivery ≥ 0.8× the floor",
      value: `${times(vsFloor)}${eachRound(dl, d?.floor?.jobsPerSec)}`,
      met: vsFloor === undefined ? undefined : vsFloor >= 0.8,
    },
    {
      name: "http delivery ≥ 1× BullMQ",
      value: `${times(vsBull)}${eachRound(dl, d?.bullmq?.jobsPerSec)}`,
      met: vsBull === undefined ? undefined : vsBull >= 1,
    },
  ];
}

function deliverySection(r: Results): string[] {
  const d = r.delivery;
  if (!d || Object.keys(d).length === 0) return [];
  const floor = d.floor?.jobsPerSec;
  const bull = d.bullmq?.jobsPerSec;
  const label: Record<DeliverySystem, string> = {
    floor: "floor Worker (bench/floor/deliver-worker.ts): only the fetches",
    requestFloor: "floor Worker making delayline's request: its headers, signed, a timeout signal",
    dispatchFloor: "floor Worker running delayline's dispatch on jobs in memory: no Redis",
    delayline: "delayline's tick (http handler, signed)",
    bullmq: "BullMQ worker, Node `fetch`",
  };
  const rowOf = (system: DeliverySystem) => {
    const s = d[system];
    if (!s) return [];
    const runs = s.jobsPerSec.runs.map((v) => Math.round(v).toLocaleString("en-US")).join(", ");
    return [
      `| ${label[system]} | ${cell(s.jobsPerSec)} | ${runs} | ${times(ratio(s.jobsPerSec.median, floor?.median))} | ${times(ratio(s.jobsPerSec.median, bull?.median))} | ${cell(s.cpuUsPerJob)} | ${s.connections.runs.join(", ")} | ${s.pausedMs ? s.pausedMs.runs.map((v) => Math.round(v)).join(", ") : "—"} | ${s.requestsPerJob ? `${cell(s.requestsPerJob)} / ${cell(s.commandsPerJob)}` : "—"} | ${s.serviceCpuUsPerJob ? cell(s.serviceCpuUsPerJob) : "—"} |`,
    ];
  };
  const t = deliveryTargets(r);
  // No target: how the distance from the floor splits, step by step: what a delivery must send, delayline's dispatch of it, and Redis.
  const of = (a: DeliverySystem, b: DeliverySystem) => {
    const x = d[a]?.jobsPerSec;
    const y = d[b]?.jobsPerSec;
    return `${times(ratio(x?.median, y?.median))}${eachRound(x, y)}`;
  };
  const split = [
    `- the floor making delayline's request ÷ the floor (the request's own cost): ${of("requestFloor", "floor")}`,
    `- http delivery ÷ the floor making delayline's request (the pipeline's own cost): ${of("delayline", "requestFloor")}, of which`,
    `  - the floor running delayline's dispatch ÷ the floor making delayline's request (dispatch's own cost): ${of("dispatchFloor", "requestFloor")}`,
    `  - http delivery ÷ the floor running delayline's dispatch (Redis: claim, settle and the rounds between): ${of("delayline", "dispatchFloor")}`,
  ];
  return [
    `## http delivery at the architecture's floor`,
    ``,
    `${r.delivery?.floor?.jobsPerSec.runs.length ?? 0} alternating runs of ${(r.sizes as { delivery?: { run: number } }).delivery?.run?.toLocaleString("en-US") ?? "?"} POSTs of a 100-byte body to a loopback receiver (its own process), at most 50 in flight; rate = deliveries at the receiver from its first to its last. CPU: the delivering process (workerd; BullMQ: the bench's Node process). Services: what the deliverer calls, on the same two cores — redis-server, and for delayline also the REST bridge standing in for Upstash (the bench's own process), which in production runs elsewhere.`,
    ``,
    `| system | deliveries/s | each run | ÷ floor | ÷ BullMQ | CPU µs per delivery | new connections, each run | ms without an arrival for ≥ 20 ms, each run | REST requests / Redis commands per delivery | services' CPU µs per delivery |`,
    `|---|---|---|---|---|---|---|---|---|---|`,
    ...rowOf("floor"),
    ...rowOf("requestFloor"),
    ...rowOf("dispatchFloor"),
    ...rowOf("delayline"),
    ...rowOf("bullmq"),
    ``,
    ...t.map((x) => `- ${x.name}: ${x.value} — ${verdict(x.met)}`),
    ...split,
    ``,
  ];
}

function sustainedSection(r: Results): string[] {
  const runs = r.sustained;
  if (!runs || runs.length === 0) return [];
  return [
    `## Sustained rates`,
    ``,
    `Jobs offered at a fixed rate, due uniformly, stored ahead straight into Redis, delivered by the tick (default settings, no idle sleep) to the loopback receiver; lateness = arrival at the receiver − due. Backlog = jobs due and not yet delivered, every 250 ms of the offer window; kept up = its median in the window's last quarter at most half a second of jobs above the first quarter's. Jobs not delivered 5 s after the window count as late as that (≥: lower bounds). Commands and requests: the tick's own, from the end of the enqueue to the last delivery or that cut.`,
    ``,
    `| offered | seconds | delivered/s | kept up | backlog: first ¼ / last ¼ / max | lateness p50 / p99 / max, ms | early / missing / dup | Redis commands / job | REST requests / job | workerd CPU µs / job |`,
    `|---|---|---|---|---|---|---|---|---|---|`,
    ...runs.map(
      (s) =>
        `| ${s.rate.toLocaleString("en-US")}/s | ${s.seconds} | ${num(s.deliveredPerSec)} | ${s.keptUp ? "yes" : "**no**"} | ${ms(s.backlogFirstQuarter)} / ${ms(s.backlogLastQuarter)} / ${ms(s.backlogMax)} | ${s.delivered < s.jobs ? "≥ " : ""}${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.max)} | ${s.early} / ${s.jobs - s.delivered} / ${s.duplicates} | ${num(s.commandsPerJob)} | ${num(s.requestsPerJob)} | ${ms(s.cpuUsPerJob)} |`,
    ),
    ``,
  ];
}

function latenessRunsSection(r: Results): string[] {
  const lt = r.lateness;
  const configs = ["delayline@100", "delayline@1000", "bullmq", "naive", "migrate"].filter((k) => lt[k]);
  if (configs.length === 0) return [];
  const bull = lt.bullmq;
  return [
    `## Lateness, every run`,
    ``,
    `p50 / p99 / max in ms of each measured run, in order; the last column: p99 ÷ BullMQ's median p99.`,
    ``,
    `| system | run 1 | run 2 | run 3 | p99 ÷ BullMQ |`,
    `|---|---|---|---|---|`,
    ...configs.map((k) => {
      const l = lt[k]!;
      const each = l.p99.runs.map((_, i) => `${ms(l.p50.runs[i]!)} / ${ms(l.p99.runs[i]!)} / ${ms(l.max.runs[i]!)}`);
      while (each.length < 3) each.push("—");
      const vs = bull && k !== "bullmq" ? l.p99.runs.map((p) => times(ratio(p, bull.p99.median))).join(", ") : "—";
      return `| ${k === "delayline@100" ? "delayline, TICK_POLL_MS=100" : k === "delayline@1000" ? "delayline, TICK_POLL_MS=1000" : k} | ${each.join(" | ")} | ${vs} |`;
    }),
    ``,
  ];
}
