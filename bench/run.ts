/**
 * `npm run bench`: delayline side by side with BullMQ, the naive sorted-set
 * loop and the migrate-script design (Laravel's), in one run, on this
 * machine, against one redis-server. Each system runs in turn, a warm-up
 * and then the measured runs; the table reports medians, ranges and the
 * ratios against BullMQ. Writes bench/results/latest.{json,md}.
 *
 *   npm run bench                 full run (about 26 minutes on 2 cores, 11 without the shards rows)
 *   npm run bench -- --quick      small sizes, a smoke run (~8 minutes, 4 without the shards rows)
 *   npm run bench -- --only cost,drain   some measurements only (cost, scale, scale-1m, drain, lateness, enqueue, enqueue-floor, idle, delivery, sustained, shards, shards-idle)
 *   BENCH_SCALE_1M=0 npm run bench       without the million-job row (it adds about 2 minutes)
 *   BENCH_SHARDS=0 npm run bench         without the shards rows (they add about 15 minutes; bench/lib/shards.ts)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import IORedis from "ioredis";
import type { Queue } from "../src/queue/queue.js";
import { serveWorker, type ServedWorker } from "./floor/serve.js";
import { directQueue, startStack, type Stack } from "./lib/delayline.js";
import { sleep } from "../harness/util.js";
import { startInfra, type Infra } from "./lib/infra.js";
import {
  bundleDeliveryWorkers,
  DELIVERY_SYSTEMS,
  deliveryRun,
  startDeliveryRig,
  SUSTAINED_SETTINGS,
  sustainedRun,
  THROUGHPUT_SETTINGS,
  type DeliveryRun,
  type DeliverySystem,
  type SustainedRun,
} from "./lib/deliver.js";
import { renderMarkdown, type Results, type Series } from "./report.js";
import { SCALE_1M_SIZES, scale1mRun, type Scale1mResult, type Scale1mSizes } from "./lib/scale-1m.js";
import { runShards, writeShardsResults } from "./lib/shards.js";
import type { ShardsResults } from "./lib/shards-report.js";
import {
  costRun,
  drainRun,
  enqueueRun,
  fillFuture,
  FLOOR_CONNECTIONS,
  FLOOR_SYSTEMS,
  floorEnqueueRun,
  idleRun,
  latenessRun,
  PEER_POLL_MS,
  scalePair,
  SYSTEMS,
  type CostRun,
  type DrainRun,
  type EnqueueRun,
  type FloorEnqueueRun,
  type FloorSystem,
  type LatenessRun,
  type ScaleRun,
  type SystemName,
} from "./suites.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    runs: { type: "string" },
    out: { type: "string" },
  },
});
const QUICK = args.quick!;
// A smoke run measures once; the full run three times.
const RUNS = Number(args.runs ?? (QUICK ? 1 : 3));
const only = args.only ? new Set(args.only.split(",")) : null;
const wanted = (name: string) => only === null || only.has(name);
const root = join(import.meta.dirname, "..");
const outBase = args.out ?? join(root, "bench/results", QUICK ? "quick" : "latest");

/** Sizes: [warm-up, measured]. */
const SIZES = QUICK
  ? {
      cost: { warm: [300, 100], run: [1_000, 200] },
      drain: { warm: 1_000, run: 10_000 },
      lateness: { warm: [100, 1_000], run: [500, 3_000], peers: true },
      enqueue: { warm: [50, 1_000], run: [200, 5_000] },
      enqueueFloor: { warmS: 1, runS: 3 },
      scale: { small: 10_000, large: 100_000, due: 5_000 },
      scale1m: { ...SCALE_1M_SIZES, jobs: 100_000, small: 1_000, due: 5_000, runs: 1, costJobs: 1_000 } satisfies Scale1mSizes,
      idleMs: 15_000,
      delivery: { warm: 500, run: 2_000 },
      sustained: { rates: [200, 1_000, 2_000], seconds: 3 },
    }
  : {
      cost: { warm: [1_000, 200], run: [5_000, 1_000] },
      // Sized so that the rows before the shards stay within 10 minutes on 2 cores (they took 15–19 at the sizes before).
      drain: { warm: 1_000, run: 30_000 },
      // The polling peers' lateness is their poll interval by construction; the full run leaves them out to fit in 10 minutes.
      lateness: { warm: [500, 2_000], run: [5_000, 10_000], peers: false },
      enqueue: { warm: [100, 2_000], run: [500, 10_000] },
      // Seconds of load per warm-up and measured run, per system.
      enqueueFloor: { warmS: 1, runS: 5 },
      scale: { small: 10_000, large: 500_000, due: 20_000 },
      // 1,000,000 scheduled jobs over 10 topics, delayline and BullMQ (issue 33); BENCH_SCALE_1M=0 leaves it out.
      scale1m: SCALE_1M_SIZES,
      idleMs: 60_000,
      delivery: { warm: 200, run: 20_000 },
      sustained: { rates: [200, 1_000, 2_000], seconds: 4 },
    };

/** Worker settings of each delayline stack (everything else: wrangler.toml's defaults). */
const STACK_SETTINGS = {
  drain: { TICK_CHUNK: "1000", TICK_SUBREQUEST_BUDGET: "10000", TICK_IDLE_PEEK_MS: "0", TICK_POLL_MS: "1000" },
  lateness1000: { TICK_POLL_MS: "1000", TICK_SUBREQUEST_BUDGET: "10000" },
  lateness100: { TICK_POLL_MS: "100", TICK_SUBREQUEST_BUDGET: "10000" },
  idle: {},
};

const started = Date.now();
// Everything each delayline stack prints, for looking into a failed run (git-ignored).
const logDir = join(root, "bench/results/tmp");
mkdirSync(logDir, { recursive: true });
const stackLog = (name: string) => join(logDir, `stack-${name}.log`);
// The machine is shared: its load while the bench ran goes into the results.
const load: Array<[number, number]> = [];
const sampleLoad = setInterval(() => load.push([Math.round((Date.now() - started) / 1000), loadavg()[0]!]), 10_000);
const log = (line: string) => console.log(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);

function series(values: number[], unit: string): Series {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, runs: values, unit };
}

const failures: string[] = [];

/**
 * One measured run, tried once more if it fails; `undefined` when it fails
 * again (it is then left out, and listed in the results). `label` names it
 * in the log, e.g. "drain delayline: run 2/3".
 */
async function measured<T>(label: string, run: () => Promise<T>, describe: (r: T) => string): Promise<T | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await run();
      log(`${label} ${describe(r)}`);
      return r;
    } catch (err) {
      log(`${label} failed (attempt ${attempt}): ${String(err).slice(0, 300)}`);
      if (attempt === 2) {
        failures.push(`${label}: ${String(err).slice(0, 300)}`);
        return undefined;
      }
    }
  }
}

/** A run's figures for the log, numbers rounded to three decimals. */
const rounded = (r: unknown) => JSON.stringify(r, (_, v) => (typeof v === "number" ? Math.round(v * 1000) / 1000 : v)).slice(0, 300);

/** A warm-up (not measured), then RUNS measured runs ({@link measured}). */
async function repeat<T>(what: string, warm: () => Promise<T>, run: (i: number) => Promise<T>): Promise<T[]> {
  log(`${what}: warm-up`);
  await warm().catch((err: unknown) => log(`${what}: warm-up failed: ${String(err)}`));
  const out: T[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await measured(`${what}: run ${i + 1}/${RUNS}`, () => run(i), rounded);
    if (r !== undefined) out.push(r);
  }
  if (out.length === 0) throw new Error(`${what}: every run failed`);
  return out;
}

/**
 * Side by side: a warm-up of each system (not measured), then RUNS rounds in
 * which every system runs once ({@link measured}), each round starting with
 * the next system, so drift in the machine's load falls on all of them alike.
 */
async function alternate<S extends string, T>(
  what: string,
  systems: readonly S[],
  warm: (system: S) => Promise<unknown>,
  run: (system: S) => Promise<T>,
  describe: (r: T) => string = rounded,
): Promise<Partial<Record<S, T[]>>> {
  for (const system of systems) {
    log(`${what} ${system}: warm-up`);
    await warm(system).catch((err: unknown) => log(`${what} ${system}: warm-up failed: ${String(err)}`));
  }
  const out: Partial<Record<S, T[]>> = {};
  for (let i = 0; i < RUNS; i++) {
    for (const system of systems.map((_, k) => systems[(i + k) % systems.length]!)) {
      const r = await measured(`${what} ${system}: run ${i + 1}/${RUNS}`, () => run(system), describe);
      if (r !== undefined) out[system] = [...(out[system] ?? []), r];
    }
  }
  return out;
}

type PerSystem<T> = Partial<Record<SystemName, T>>;
const per = <T>(): PerSystem<T> => ({});
const costs = per<CostRun[]>();
const drains = per<DrainRun[]>();
const lateness: Record<string, LatenessRun[]> = {};
const enqueues = per<EnqueueRun[]>();
let scale: { small: ScaleRun[]; large: ScaleRun[] } | undefined;
let scale1m: Scale1mResult | undefined;
let idle: Record<SystemName, number> | undefined;
const floorEnqueues: Partial<Record<FloorSystem, FloorEnqueueRun[]>> = {};
const deliveries: Partial<Record<DeliverySystem, DeliveryRun[]>> = {};
const sustained: SustainedRun[] = [];
let shards: ShardsResults | undefined;

const infra: Infra = await startInfra();
let stack: Stack | undefined;
const stopStack = async () => {
  await stack?.stop();
  stack = undefined;
};
const redisVersion = /redis_version:(\S+)/.exec(await infra.meter.info("server"))?.[1] ?? "?";
process.once("SIGINT", () => {
  void stopStack().finally(() => infra.stop().finally(() => process.exit(130)));
});

// The delivery Workers are bundled while the idle suite's stack starts.
const deliveryBundles = wanted("delivery") || wanted("sustained") ? bundleDeliveryWorkers() : undefined;

try {
  // 8: idle cost. Every system idles for a minute on a redis-server of its
  // own, while the cost suite runs on the bench's: idle systems barely use
  // the CPU, the counts are per server, and the minute costs no wall time.
  let idling: Promise<void> | undefined;
  if (wanted("idle")) {
    log(`idle: every system on its own redis-server for ${SIZES.idleMs / 1000} s, in the background`);
    idling = idleRun(SIZES.idleMs, 1_000, log, stackLog("idle")).then(
      (r) => {
        idle = r;
        log(`idle: ${JSON.stringify(idle)}`);
      },
      (err: unknown) => log(`idle: failed, left out of the results: ${String(err)}`),
    );
    // Let its Worker start before anything is timed.
    await sleep(6_000);
  }
  // Nothing is measured beside the bundling (CPU-heavy for some seconds).
  await deliveryBundles?.ready.catch((err: unknown) => log(`delivery: bundling failed: ${String(err)}`));

  // 1, 2, 9: cost per job. No Worker runs against the bench's Redis, so its counters hold one system's commands only.
  if (wanted("cost")) {
    for (const system of SYSTEMS) {
      const [wn, wf] = SIZES.cost.warm;
      const [n, f] = SIZES.cost.run;
      costs[system] = await repeat(
        `cost ${system}`,
        () => costRun(infra, system, wn!, wf!, 100),
        (i) => costRun(infra, system, n!, f!, i),
      );
    }
  }

  // 7: scale, delayline's Queue in Node: two deployments (prefixes), one
  // with few future jobs and one with many, measured in alternation so drift
  // in the machine's load falls on both alike.
  if (wanted("scale")) {
    await infra.flush();
    const direct = new IORedis(infra.redis.url, { maxRetriesPerRequest: null });
    try {
      const small = directQueue(direct, "dl:{scale-small}");
      const large = directQueue(direct, "dl:{scale-large}");
      log(`scale: storing ${SIZES.scale.small} and ${SIZES.scale.large} future jobs`);
      await fillFuture(small, SIZES.scale.small);
      await fillFuture(large, SIZES.scale.large);
      const once = (order: Queue[], n: number) => scalePair(infra, small, large, order, n);
      const pairs = await repeat(
        `scale ${SIZES.scale.small} vs ${SIZES.scale.large} future`,
        () => once([small, large], SIZES.scale.due / 4),
        (i) => once(i % 2 ? [large, small] : [small, large], SIZES.scale.due),
      );
      scale = { small: pairs.map((p) => p[0]!), large: pairs.map((p) => p[1]!) };
    } finally {
      direct.disconnect();
    }
    await infra.flush();
  }

  // 1,000,000 scheduled jobs over 10 topics, delayline and BullMQ (bench/lib/scale-1m.ts).
  if (wanted("scale-1m") && process.env.BENCH_SCALE_1M !== "0") {
    try {
      scale1m = await scale1mRun(infra, SIZES.scale1m, log);
    } catch (err) {
      log(`scale-1m failed: ${String(err).slice(0, 300)}`);
      failures.push(`scale-1m: ${String(err).slice(0, 300)}`);
      await infra.flush();
    }
  }

  // The drain and lateness are timed closely: nothing else runs beside them.
  await idling;

  // 3, 6: backlog drain (and memory per scheduled job while storing it).
  if (wanted("drain")) {
    for (const system of SYSTEMS) {
      await infra.flush();
      if (system === "delayline") {
        log("drain: starting the delayline stack");
        stack = await startStack({ restUrl: infra.bridge.url, restToken: infra.bridgeToken }, STACK_SETTINGS.drain, log, stackLog("drain"));
      }
      drains[system] = await repeat(
        `drain ${system}`,
        () => drainRun(infra, system, SIZES.drain.warm, stack),
        async () => {
          if (system !== "delayline") await infra.flush();
          return drainRun(infra, system, SIZES.drain.run, stack);
        },
      );
      await stopStack();
    }
  }

  // 4, 5: lateness (delayline at TICK_POLL_MS 1,000 and 100) and enqueue through the producer.
  if (wanted("lateness") || wanted("enqueue")) {
    const [wn, ws] = SIZES.lateness.warm;
    const [n, s] = SIZES.lateness.run;
    for (const config of ["delayline@1000", "delayline@100", "bullmq", "naive", "migrate"] as const) {
      const system: SystemName = config.startsWith("delayline") ? "delayline" : (config as SystemName);
      const measureLateness = wanted("lateness") && (SIZES.lateness.peers || system === "delayline" || system === "bullmq");
      await infra.flush();
      if (system === "delayline") {
        log(`lateness: starting the delayline stack (${config})`);
        stack = await startStack(
          { restUrl: infra.bridge.url, restToken: infra.bridgeToken },
          config === "delayline@100" ? STACK_SETTINGS.lateness100 : STACK_SETTINGS.lateness1000,
          log,
          stackLog(config),
        );
      }
      if (measureLateness) {
        // A peer's run starts from an empty Redis; delayline's stack keeps its tick (and lock) across runs.
        const fresh = async () => {
          if (system !== "delayline") await infra.flush();
        };
        lateness[config] = await repeat(
          `lateness ${config}`,
          async () => {
            await fresh();
            return latenessRun(infra, system, wn!, ws!, stack);
          },
          async () => {
            await fresh();
            return latenessRun(infra, system, n!, s!, stack);
          },
        );
      }
      if (wanted("enqueue") && config !== "delayline@1000") {
        const [ws1, wb] = SIZES.enqueue.warm;
        const [s1, b] = SIZES.enqueue.run;
        enqueues[system] = await repeat(
          `enqueue ${system}`,
          () => enqueueRun(infra, system, ws1!, wb!, stack),
          () => enqueueRun(infra, system, s1!, b!, stack),
        );
      }
      await stopStack();
    }
  }

  // 10: single enqueue at 100 connections, delayline vs the floor vs BullMQ.
  // Both Workers are served the same way (workerd through miniflare, no
  // wrangler dev proxy) on the bench's bridge, both idle while the other is
  // measured; the systems alternate within each run, so drift in the
  // machine's load falls on all three alike.
  if (wanted("enqueue-floor")) {
    await infra.flush();
    const bundles = mkdtempSync(join(tmpdir(), "delayline-bench-floor-"));
    const served: Partial<Record<"delayline" | "floor", ServedWorker>> = {};
    try {
      const bridge = { url: infra.bridge.url, token: infra.bridgeToken };
      for (const w of ["delayline", "floor"] as const) {
        log(`enqueue-floor: serving the ${w} Worker directly in workerd`);
        served[w] = await serveWorker(w, bridge, join(bundles, w));
      }
      const workers = served as Record<"delayline" | "floor", ServedWorker>;
      const { warmS, runS } = SIZES.enqueueFloor;
      Object.assign(
        floorEnqueues,
        await alternate(
          "enqueue-floor",
          FLOOR_SYSTEMS,
          (system) => floorEnqueueRun(infra, system, warmS, workers),
          (system) => floorEnqueueRun(infra, system, runS, workers),
        ),
      );
    } finally {
      for (const w of Object.values(served)) await w.stop();
      rmSync(bundles, { recursive: true, force: true });
      await infra.flush();
    }
  }

  // http delivery side by side with the floor and BullMQ, then sustained
  // rates: Workers served by miniflare directly (bench/lib/deliver.ts).
  if (deliveryBundles) {
    log("delivery: starting the receiver and the Workers");
    const rig = await startDeliveryRig(infra, log, stackLog("deliver"), deliveryBundles);
    try {
      if (wanted("delivery")) {
        const workers = await rig.throughput();
        Object.assign(
          deliveries,
          await alternate(
            "delivery",
            DELIVERY_SYSTEMS,
            (system) => deliveryRun(rig, workers, system, SIZES.delivery.warm),
            (system) => deliveryRun(rig, workers, system, SIZES.delivery.run),
            (r) => `${Math.round(r.jobsPerSec)}/s, ${Math.round(r.cpuUsPerJob)} µs CPU/delivery, ${r.connections} connections`,
          ),
        );
      }
      if (wanted("sustained")) {
        const tick = await rig.sustained();
        for (const rate of SIZES.sustained.rates) {
          try {
            const r = await sustainedRun(infra, rig, tick, rate, SIZES.sustained.seconds);
            sustained.push(r);
            log(`sustained ${rate}/s: ${JSON.stringify(r)}`);
          } catch (err) {
            log(`sustained ${rate}/s failed: ${String(err).slice(0, 300)}`);
            failures.push(`sustained ${rate}/s: ${String(err).slice(0, 300)}`);
          }
        }
      }
    } finally {
      await rig.stop();
    }
  }

  // 15: shards, last: each deployment brings its own redis-servers and bridges, and the rows want a quiet machine.
  const shardRows = { scale: wanted("shards"), idle: wanted("shards-idle") };
  if ((shardRows.scale || shardRows.idle) && process.env.BENCH_SHARDS !== "0") {
    shards = await runShards({ quick: QUICK, ...shardRows, log, logFile: stackLog });
    failures.push(...shards.failures);
  }
} finally {
  clearInterval(sampleLoad);
  await stopStack();
  await infra.stop();
  deliveryBundles?.remove();
}

// ─── results ────────────────────────────────────────────────────────────────

/** One measurement over runs. */
const seriesOf = <T>(runs: T[], pick: (r: T) => number, unit: string) => series(runs.map(pick), unit);

const bySystem = <T>(data: PerSystem<T[]>, pick: (t: T) => number, unit: string) =>
  Object.fromEntries(SYSTEMS.filter((s) => data[s]).map((s) => [s, series(data[s]!.map(pick), unit)])) as Partial<Record<SystemName, Series>>;

/** The single-enqueue row: per system, medians and ranges of its runs. */
function enqueueFloorSummary(): NonNullable<Results["enqueueFloor"]> {
  const summary: NonNullable<Results["enqueueFloor"]> = { connections: FLOOR_CONNECTIONS, seconds: SIZES.enqueueFloor.runS, systems: {} };
  for (const system of FLOOR_SYSTEMS) {
    const runs = floorEnqueues[system];
    if (!runs || runs.length === 0) continue;
    summary.systems[system] = {
      perSec: seriesOf(runs, (r) => r.perSec, "jobs/s"),
      p50Ms: seriesOf(runs, (r) => r.p50Ms, "ms"),
      p99Ms: seriesOf(runs, (r) => r.p99Ms, "ms"),
      ...(runs[0]!.workerdCpuMs !== undefined
        ? {
            workerdCpuMs: seriesOf(runs, (r) => r.workerdCpuMs!, "ms/job"),
          }
        : {}),
      load: seriesOf(runs, (r) => r.load, ""),
    };
  }
  return summary;
}

const version = (pkg: string) => (JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
const results: Results = {
  date: new Date().toISOString(),
  mode: QUICK ? "quick" : "full",
  durationS: Math.round((Date.now() - started) / 1000),
  runs: RUNS,
  machine: {
    cpu: cpus()[0]?.model ?? "?",
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    redis: redisVersion,
    bullmq: version("bullmq"),
    wrangler: version("wrangler"),
  },
  sizes: SIZES,
  settings: {
    ...STACK_SETTINGS,
    peerPollMs: PEER_POLL_MS,
    peerIdlePollMs: 1_000,
    deliveryThroughput: THROUGHPUT_SETTINGS,
    deliverySustained: SUSTAINED_SETTINGS,
  },
  metrics: {
    successCommands: bySystem(costs, (c) => c.successCommands, "commands/job"),
    enqueueCommands: bySystem(costs, (c) => c.enqueueCommands, "commands/job"),
    consumeCommands: bySystem(costs, (c) => c.consumeCommands, "commands/job"),
    failedAttemptCommands: bySystem(costs, (c) => c.failedAttemptCommands, "commands/attempt"),
    deadCommands: bySystem(costs, (c) => c.deadCommands, "commands/job"),
    successRequests: bySystem(costs, (c) => c.successRequests, "requests/job"),
    consumeRequests: bySystem(costs, (c) => c.consumeRequests, "requests/job"),
    successUsec: bySystem(costs, (c) => c.successUsec, "µs/job"),
    successCpuUsec: bySystem(costs, (c) => c.successCpuUsec, "µs/job"),
    drainJobsPerSec: bySystem(drains, (d) => d.jobsPerSec, "jobs/s"),
    drainCommands: bySystem(drains, (d) => d.commandsPerJob, "commands/job"),
    drainRequests: bySystem(drains, (d) => d.requestsPerJob, "requests/job"),
    bytesPerJob: bySystem(drains, (d) => d.bytesPerJob, "bytes/job"),
    enqueueSinglePerSec: bySystem(enqueues, (e) => e.singlePerSec, "jobs/s"),
    enqueueBatchedPerSec: bySystem(enqueues, (e) => e.batchedPerSec, "jobs/s"),
  },
  lateness: Object.fromEntries(
    Object.entries(lateness).map(([config, runs]) => [
      config,
      {
        p50: seriesOf(runs, (r) => r.p50, "ms"),
        p99: seriesOf(runs, (r) => r.p99, "ms"),
        max: seriesOf(runs, (r) => r.max, "ms"),
        early: runs.reduce((n, r) => n + r.early, 0),
        missing: runs.reduce((n, r) => n + r.jobs - r.handled, 0),
        duplicates: runs.reduce((n, r) => n + r.duplicates, 0),
        ...(runs[0]?.requestsPerJob !== undefined
          ? {
              requestsPerJob: seriesOf(runs, (r) => r.requestsPerJob!, "requests/job"),
              commandsPerJob: seriesOf(runs, (r) => r.commandsPerJob!, "commands/job"),
            }
          : {}),
      },
    ]),
  ),
  scale: scale
    ? {
        small: seriesOf(scale.small, (r) => r.jobsPerSec, "jobs/s"),
        large: seriesOf(scale.large, (r) => r.jobsPerSec, "jobs/s"),
        smallUsec: seriesOf(scale.small, (r) => r.usecPerJob, "µs/job"),
        largeUsec: seriesOf(scale.large, (r) => r.usecPerJob, "µs/job"),
      }
    : undefined,
  scale1m,
  idle,
  enqueueFloor: Object.keys(floorEnqueues).length > 0 ? enqueueFloorSummary() : undefined,
  delivery:
    Object.keys(deliveries).length > 0
      ? Object.fromEntries(
          Object.entries(deliveries).map(([system, runs]) => [
            system,
            {
              jobsPerSec: seriesOf(runs, (r) => r.jobsPerSec, "jobs/s"),
              cpuUsPerJob: seriesOf(runs, (r) => r.cpuUsPerJob, "µs/delivery"),
              connections: seriesOf(runs, (r) => r.connections, "connections"),
              pausedMs: seriesOf(runs, (r) => r.pausedMs, "ms"),
              duplicates: runs.reduce((n, r) => n + r.duplicates, 0),
              ...(runs[0]?.requestsPerJob !== undefined
                ? {
                    requestsPerJob: seriesOf(runs, (r) => r.requestsPerJob!, "requests/delivery"),
                    commandsPerJob: seriesOf(runs, (r) => r.commandsPerJob!, "commands/delivery"),
                  }
                : {}),
              ...(runs[0]?.serviceCpuUsPerJob !== undefined ? { serviceCpuUsPerJob: seriesOf(runs, (r) => r.serviceCpuUsPerJob!, "µs/delivery") } : {}),
            },
          ]),
        )
      : undefined,
  sustained: sustained.length > 0 ? sustained : undefined,
  shards,
  failures,
  load,
  raw: { costs, drains, lateness, enqueues, scale, floorEnqueues, deliveries },
};
results.durationS = Math.round((Date.now() - started) / 1000);
writeFileSync(`${outBase}.json`, `${JSON.stringify(results, null, 2)}\n`);
if (shards) {
  // Their detail beside the summary rows: shards.md beside latest.md (a smoke run's in tmp/).
  const base = args.out ? `${outBase}-shards` : join(dirname(outBase), QUICK ? "tmp/shards-quick" : "shards");
  writeShardsResults(base, shards);
  log(`wrote ${base}.json and .md`);
}
const md = renderMarkdown(results);
writeFileSync(`${outBase}.md`, md);
console.log(md);
log(`wrote ${outBase}.json and .md`);
