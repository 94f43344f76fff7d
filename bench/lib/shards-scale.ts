/**
 * The shards row (issue 35): one shard against three, side by side in one
 * run, each shard a redis-server of its own behind a bridge of its own whose
 * commands per second are capped low (`commandsPerSecond`), so a shard is
 * bound by its database and not by the machine. Each deployment runs as
 * `npm start` runs it (the bench Worker, bench/lib/delayline.ts), with the
 * same producers per shard: a closed loop of single enqueues (`POST /v1/jobs`,
 * due `delayMs` later) on topics placed evenly (`topicsPerShard` on each,
 * picked with the placement itself), more than one shard admits. Once every
 * shard's loop runs (no sleep mark) and the warm-up has passed, a window:
 * deliveries per second, lateness, commands and requests per job, each
 * shard's share. The 3-shard stack then goes on to the outage
 * (bench/lib/shards-outage.ts), whose no-kill reference is this window.
 */
import { loadavg } from "node:os";
import { descendantsOf } from "../../dev/process-tree.js";
import { cpuMs } from "../../harness/process-cpu.js";
import { sleep } from "../../harness/util.js";
import { BENCH_TOKEN, startStack, type Stack } from "./delayline.js";
import { SHARD_NAMES, startShardRig, topicsOn, type ShardRig } from "./shard-rig.js";
import { dueIn, latenessOf, shardSpans, snapshot, type Lateness, type ShardSpan } from "./shard-spans.js";
import { collect, forgetSamples, produce } from "./shard-traffic.js";
import { outageRun, type OutageResult, type OutageSizes } from "./shards-outage.js";

export interface ShardsScaleSizes {
  /** Each bridge's commands per second (a script counts one, as the bridge meters them). */
  commandsPerSecond: number;
  topicsPerShard: number;
  /** Producers per topic, each one call at a time. */
  producersPerTopic: number;
  /** Each job is due this long after its enqueue. */
  delayMs: number;
  /** Load before the window, at least (and until every shard's loop runs). */
  warmS: number;
  windowS: number;
  outage: OutageSizes;
}

export const SHARDS_SCALE_SIZES: ShardsScaleSizes = {
  commandsPerSecond: 250,
  topicsPerShard: 2,
  producersPerTopic: 2,
  delayMs: 2_000,
  warmS: 15,
  windowS: 45,
  outage: { downS: 60, recoverS: 20, probeAtS: [5, 30] },
};

/** One deployment's window. */
export interface ScaleWindow {
  shards: number;
  topics: string[];
  from: number;
  ms: number;
  /** Deliveries per second (any attempt) over the window. */
  deliveredPerSec: number;
  /** Jobs acknowledged (201) per second over the window. */
  enqueuedPerSec: number;
  /** Answers to enqueues in the window that stored nothing. */
  enqueueFailures: number;
  lateness: Lateness;
  commandsPerJob: number;
  requestsPerJob: number;
  perShard: Array<ShardSpan & { lateness: Lateness }>;
  /** CPU over the window, % of one core: workerd (the Worker), this process (bridges, producers), the redis-servers. */
  cpu: { workerd: number; bench: number; redis: number };
  /** The machine's 1-minute load average at the window's end. */
  load: number;
  /** How long the warm-up took (until every shard's loop ran and warmS had passed). */
  warmedMs: number;
}

export interface ShardsScaleResult {
  sizes: ShardsScaleSizes;
  one: ScaleWindow;
  three: ScaleWindow;
  outage?: OutageResult;
}

type Log = (line: string) => void;

/** Waits until no shard's sleep mark is set (every loop runs) and `warmS` has passed since `since`; at most 90 s more. */
async function warm(rig: ShardRig, warmS: number, since: number, log: Log): Promise<number> {
  await sleep(Math.max(0, since + warmS * 1_000 - Date.now()));
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(1_000)) {
    const marks = await Promise.all(rig.shards.map((s) => s.meter.get(s.keys.tickAsleep)));
    if (marks.every((m) => m === null)) return Date.now() - since;
    log(`shards: waiting for every loop to run (sleep marks ${marks.map((m) => m ?? "none").join(", ")})`);
  }
  throw new Error("a shard's loop did not start under load within 90 s");
}

/** The stack's workerd process. */
const workerdOf = (stack: Stack) => descendantsOf(stack.pid).find((p) => /workerd/.test(p.args))?.pid;

/** A shards deployment under load: the window's figures, then `after` (the outage) on the same stack and load. */
async function underLoad(
  shards: number,
  sizes: ShardsScaleSizes,
  log: Log,
  logFile: string,
  after?: (ctx: LoadContext) => Promise<OutageResult>,
): Promise<{ window: ScaleWindow; outage?: OutageResult }> {
  const names = SHARD_NAMES.slice(0, shards);
  const rig = await startShardRig({ shards, commandsPerSecond: sizes.commandsPerSecond });
  let stack: Stack | undefined;
  try {
    // The Worker's JSON lines go to the log file; this log gets the stack's own.
    stack = await startStack(rig.stackRedis, rig.settings, (l) => !l.includes('{"level"') && log(l), logFile, true);
    await forgetSamples(stack);
    const collector = collect(stack);
    // The same topics in both deployments: each shard's share of the 3-shard placement.
    const topics = names.flatMap((s) => topicsOn(s, SHARD_NAMES, sizes.topicsPerShard));
    const started = Date.now();
    const producers = produce(stack, BENCH_TOKEN, topics, sizes.producersPerTopic, sizes.delayMs);
    let outage: OutageResult | undefined;
    try {
      const warmedMs = await warm(rig, sizes.warmS, started, log);
      const window = await measureWindow({ rig, stack, collector, producers, topics }, sizes, warmedMs);
      log(
        `shards ${shards}: ${Math.round(window.deliveredPerSec)} delivered/s, p99 ${window.lateness.p99} ms, ${window.commandsPerJob.toFixed(2)} commands/job, workerd ${Math.round(window.cpu.workerd)}% of a core`,
      );
      if (after) outage = await after({ rig, stack, collector, producers, topics, window });
      return { window, ...(outage ? { outage } : {}) };
    } finally {
      await producers.stop();
      await collector.stop();
    }
  } finally {
    await stack?.stop();
    await rig.stop();
  }
}

/** What a run under load hands on to the outage: the stack, its rig, the traffic, and the no-kill window. */
export interface LoadContext {
  rig: ShardRig;
  stack: Stack;
  collector: ReturnType<typeof collect>;
  producers: ReturnType<typeof produce>;
  topics: string[];
  window?: ScaleWindow;
}

async function measureWindow(ctx: LoadContext, sizes: ShardsScaleSizes, warmedMs: number): Promise<ScaleWindow> {
  const { rig, stack, collector, producers } = ctx;
  const workerd = workerdOf(stack);
  const redisCpu = () => cpuMs(...rig.shards.map((s) => s.redisPid()));
  const [w0, r0, b0] = [cpuMs(workerd), redisCpu(), process.cpuUsage()];
  const before = await snapshot(rig);
  await sleep(sizes.windowS * 1_000);
  const after = await snapshot(rig);
  const [w1, r1, b1] = [cpuMs(workerd), redisCpu(), process.cpuUsage(b0)];
  // Jobs due at the window's end are delivered shortly after it.
  await sleep(sizes.delayMs + 3_000);
  await collector.read();
  const ms = after.at - before.at;
  const pct = (cpu: number) => (cpu / ms) * 100;
  const spans = shardSpans(rig, before, after, collector.deliveries, stack.lines);
  const due = dueIn(collector.deliveries, before.at, after.at);
  const delivered = spans.reduce((n, s) => n + s.delivered, 0);
  const answers = producers.answers.filter((a) => a.at >= before.at && a.at < after.at);
  return {
    shards: rig.shards.length,
    topics: ctx.topics,
    from: before.at,
    ms,
    deliveredPerSec: delivered / (ms / 1_000),
    enqueuedPerSec: answers.filter((a) => a.id !== undefined).length / (ms / 1_000),
    enqueueFailures: answers.filter((a) => a.id === undefined).length,
    lateness: latenessOf(due),
    commandsPerJob: spans.reduce((n, s) => n + s.commands, 0) / delivered,
    requestsPerJob: spans.reduce((n, s) => n + s.requests, 0) / delivered,
    perShard: spans.map((s) => ({ ...s, lateness: latenessOf(due.filter((d) => d.shard === s.shard)) })),
    cpu: { workerd: pct(w1 - w0), bench: pct((b1.user + b1.system) / 1_000), redis: pct(r1 - r0) },
    load: loadavg()[0]!,
    warmedMs,
  };
}

/** The row: one shard, then three (and the outage on the three, unless `outage` is false). */
export async function shardsScaleRun(sizes: ShardsScaleSizes, log: Log, logFile: (name: string) => string, outage = true): Promise<ShardsScaleResult> {
  log(`shards: 1 shard, bridge capped at ${sizes.commandsPerSecond} commands/s`);
  const one = (await underLoad(1, sizes, log, logFile("shards-1"))).window;
  log(`shards: 3 shards, each bridge capped at ${sizes.commandsPerSecond} commands/s`);
  const three = await underLoad(3, sizes, log, logFile("shards-3"), outage ? (ctx) => outageRun(ctx, sizes.outage, sizes.delayMs, log) : undefined);
  return { sizes, one, three: three.window, ...(three.outage ? { outage: three.outage } : {}) };
}
