/**
 * http delivery at the architecture's floor, and sustained rates: the
 * Workers here run in workerd through miniflare's API (chaos/direct-worker.ts,
 * no `wrangler dev` proxy), against the bench's bridge and redis-server, and
 * deliver to a loopback receiver in a process of its own
 * (harness/receiver-process.ts). The tick's cron is played by calling the Worker's
 * scheduled handler at start and at every minute boundary, as Cloudflare's
 * cron overlaps its invocations.
 *
 * - Throughput: `n` due http jobs delivered by the tick (TICK_CONCURRENCY 50),
 *   beside BullMQ's worker making the same `fetch` at concurrency 50 and a
 *   floor Worker (bench/floor/deliver-worker.ts) making only the `n` fetches
 *   with ≤ 50 in flight.
 * - Sustained: jobs offered at a fixed rate (due uniformly, stored ahead) to
 *   the tick at its default settings: does it keep up, how late, and what
 *   it spends per job in Redis commands and REST requests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import IORedis from "ioredis";
import { bundle, startDirectWorker, type DirectWorker } from "../../chaos/direct-worker.js";
import { everyMinute } from "../../dev/cron-driver.js";
import { freePort } from "../../dev/ports.js";
import type { Queue } from "../../src/queue/queue.js";
import { summarize } from "../stats.js";
import { bull } from "./bull.js";
import { BENCH_TOKEN, directQueue } from "./delayline.js";
import { cpuMs } from "../../harness/process-cpu.js";
import { startReceiverProcess, type ReceiverProcess } from "../../harness/receiver-process.js";
import type { RunArrivals } from "../../harness/receiver.js";
import { pool, sleep, until } from "../../harness/util.js";
import { payload, type Infra } from "./infra.js";

/** Deliveries in flight at once, for every system. */
const DELIVERY_CONCURRENCY = 50;

/** The throughput topic's concurrency: TICK_CHUNK's 1,000, so that TICK_CONCURRENCY is the bound. */
const TOPIC_CONCURRENCY = 1_000;

/** A deployment's signing secret: the tick signs every delivery, as a deployment with SIGNING_SECRET does. */
const SIGNING_SECRET = "bench-signing-secret-0123456789";

/**
 * The tick's settings for the throughput runs: chunks of up to 1,000 jobs,
 * TICK_CONCURRENCY 50 in one invocation (no fan-out, so never more than 50
 * in flight, as the floor and BullMQ), a budget no run reaches, and no idle
 * sleep (jobs are stored straight into Redis, not through the producer, so
 * nothing would wake a sleeping tick).
 */
export const THROUGHPUT_SETTINGS = {
  TICK_CHUNK: "1000",
  TICK_CONCURRENCY: String(DELIVERY_CONCURRENCY),
  TICK_SUBREQUEST_BUDGET: "100000",
  TICK_FANOUT: "0",
  TICK_IDLE_PEEK_MS: "0",
};

/**
 * The tick's settings for the sustained rates: the defaults (TICK_POLL_MS
 * 1,000, TICK_CHUNK 100, TICK_CONCURRENCY 50, budget 10,000, fan-out 4),
 * except no idle sleep, for the same reason as above.
 */
export const SUSTAINED_SETTINGS = { TICK_IDLE_PEEK_MS: "0" };

/**
 * `floor`: the floor Worker's plain fetches; `requestFloor`: the same Worker
 * making the request a delivery must send (headers, signature, timeout
 * signal), so the tick's distance from it is the pipeline's own cost;
 * `dispatchFloor`: the same Worker running delayline's dispatch on jobs made
 * in memory, which splits that cost into dispatch and Redis (claim, settle).
 */
export type DeliverySystem = "floor" | "requestFloor" | "dispatchFloor" | "delayline" | "bullmq";
export const DELIVERY_SYSTEMS: DeliverySystem[] = ["floor", "requestFloor", "dispatchFloor", "delayline", "bullmq"];

/** What the floor Worker is asked to send, per system it plays. */
const FLOOR_REQUEST = { floor: "plain", requestFloor: "delayline", dispatchFloor: "dispatch" } as const;

/** The systems the floor Worker plays: those {@link FLOOR_REQUEST} names. */
const playedByFloor = (system: DeliverySystem): system is keyof typeof FLOOR_REQUEST => Object.hasOwn(FLOOR_REQUEST, system);

/** One throughput run of one system. */
export interface DeliveryRun {
  jobs: number;
  /** Deliveries per second at the receiver, from its first arrival to its last. */
  jobsPerSec: number;
  /** New TCP connections the receiver saw. */
  connections: number;
  /** CPU of the process that delivered (workerd; BullMQ: the bench's Node process), µs per delivery. */
  cpuUsPerJob: number;
  /** Jobs delivered more than once (delayline, by Delayline-Job-Id). */
  duplicates: number;
  /** Stretches of at least {@link PAUSE_MS} with no arrival (the tick's chunk boundaries show here): how many, and their sum in ms. */
  pauses: number;
  pausedMs: number;
  /** delayline: the tick's REST requests and Redis commands per delivery. */
  requestsPerJob?: number;
  commandsPerJob?: number;
  /**
   * delayline and BullMQ: CPU of the services they call, µs per delivery, over
   * the same span: redis-server's, and for delayline also the bench's own
   * process, which serves the REST bridge standing in for Upstash. It shares
   * the machine's two cores with the deliverer here, where Upstash would not.
   */
  serviceCpuUsPerJob?: number;
}

/** One sustained-rate run. */
export interface SustainedRun {
  /** Jobs offered per second, and for how long. */
  rate: number;
  seconds: number;
  jobs: number;
  delivered: number;
  duplicates: number;
  early: number;
  /** Lateness at the receiver (arrival − due), ms; a job not delivered by the cut (the window's end + 5 s) counts as late as the cut, so with `delivered` < `jobs` these are lower bounds. */
  p50: number;
  p99: number;
  max: number;
  /** Deliveries per second while the jobs fell due (first due to last due). */
  deliveredPerSec: number;
  /** Jobs due and not yet delivered, sampled every 250 ms over the offer window: median of its first and last quarter, and the most. */
  backlogFirstQuarter: number;
  backlogLastQuarter: number;
  backlogMax: number;
  /** The backlog did not grow: its last quarter's median holds at most half a second of jobs more than its first quarter's. */
  keptUp: boolean;
  /** The tick's own Redis commands (scripts' included) and REST requests per job, from just after the enqueue to the last delivery. */
  commandsPerJob: number;
  requestsPerJob: number;
  /** workerd CPU per job over the same span, µs. */
  cpuUsPerJob: number;
}

/** A process' user + system CPU time so far, µs (0 when it cannot be read). */
const cpuUs = (pid: number | undefined) => cpuMs(pid) * 1_000;

const selfCpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Plays Cloudflare's cron for `worker`: an invocation now and one at every minute boundary, each left to run its window. */
function startCron(worker: DirectWorker, log: (line: string) => void): { stop(): void } {
  let stopped = false;
  const stopClock = everyMinute((at) => {
    worker.scheduled(at).catch((err: unknown) => {
      if (!stopped) log(`deliver: scheduled(${new Date(at).toISOString()}) failed: ${String(err).slice(0, 200)}`);
    });
  });
  return {
    stop() {
      stopped = true;
      stopClock();
    },
  };
}

/** The Workers, the receiver and the queue the delivery runs share. */
export interface DeliveryRig {
  receiver: ReceiverProcess;
  infra: Infra;
  /**
   * Starts the floor Worker and the tick's Worker (throughput settings), stopping the sustained one.
   * `inspectorPort` opens the tick Worker's V8 inspector there (for a CPU profile).
   */
  throughput(options?: { inspectorPort?: number }): Promise<{ floor: DirectWorker; tick: DirectWorker }>;
  /** Starts the tick's Worker at the sustained settings, stopping the throughput ones. */
  sustained(): Promise<DirectWorker>;
  /** delayline's Queue over a direct connection, for storing jobs quickly (under `prefix`). */
  queue(prefix: string): Queue;
  stop(): Promise<void>;
}

/** Key prefixes of the two tick Workers, so neither's lock or index meets the other's. */
const THROUGHPUT_PREFIX = "dl:{deliver}";
const SUSTAINED_PREFIX = "dl:{sustain}";

/** Bundles of the floor and the bench Worker, built ahead (e.g. while another suite runs), for {@link startDeliveryRig}. */
export interface DeliveryBundles {
  dir: string;
  ready: Promise<void>;
  /** Removes the bundles (the rig's stop does too). */
  remove(): void;
}

/** Starts bundling the Workers the delivery runs serve (wrangler, in child processes). */
export function bundleDeliveryWorkers(): DeliveryBundles {
  const dir = mkdtempSync(join(tmpdir(), "delayline-deliver-"));
  const ready = Promise.all([bundle(join(dir, "floor"), FLOOR_CONFIG), bundle(join(dir, "bench-worker"), BENCH_CONFIG)]).then(() => {});
  // Awaited by the rig; this only keeps an early failure from counting as unhandled.
  ready.catch(() => {});
  return { dir, ready, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const FLOOR_CONFIG = "bench/floor/deliver-wrangler.toml";
const BENCH_CONFIG = "bench/worker/wrangler.toml";

export async function startDeliveryRig(
  infra: Infra,
  log: (line: string) => void,
  /** Where the Workers' output goes (their console: the tick's JSON lines). */
  logFile: string,
  bundles: DeliveryBundles = bundleDeliveryWorkers(),
): Promise<DeliveryRig> {
  const dir = bundles.dir;
  await bundles.ready;
  const receiver = await startReceiverProcess();
  const direct = new IORedis(infra.redis.url, { maxRetriesPerRequest: null });
  const vars = (prefix: string, settings: Record<string, string>) => ({
    ...settings,
    UPSTASH_REDIS_REST_URL: infra.bridge.url,
    UPSTASH_REDIS_REST_TOKEN: infra.bridgeToken,
    DELAYLINE_TOKEN: BENCH_TOKEN,
    DELAYLINE_PREFIX: prefix,
    ALLOW_PRIVATE_TARGETS: "true",
    SIGNING_SECRET,
  });
  const running: Array<{ worker: DirectWorker; cron?: { stop(): void } }> = [];
  const stopAll = async () => {
    for (const r of running.splice(0)) {
      r.cron?.stop();
      await r.worker.stop().catch(() => {});
    }
  };
  const tickWorker = async (prefix: string, settings: Record<string, string>, inspectorPort?: number) => {
    const worker = await startDirectWorker({
      vars: vars(prefix, settings),
      outDir: join(dir, "bench-worker"),
      reuseBundle: true,
      config: BENCH_CONFIG,
      port: await freePort(),
      logFile,
      ...(inspectorPort === undefined ? {} : { inspectorPort }),
    });
    running.push({ worker, cron: startCron(worker, log) });
    return worker;
  };
  return {
    receiver,
    infra,
    async throughput(options = {}) {
      await stopAll();
      const floor = await startDirectWorker({
        vars: {},
        outDir: join(dir, "floor"),
        config: "bench/floor/deliver-wrangler.toml",
        port: await freePort(),
        logFile,
      });
      running.push({ worker: floor });
      const tick = await tickWorker(THROUGHPUT_PREFIX, THROUGHPUT_SETTINGS, options.inspectorPort);
      return { floor, tick };
    },
    async sustained() {
      await stopAll();
      return tickWorker(SUSTAINED_PREFIX, SUSTAINED_SETTINGS);
    },
    queue: (prefix) => directQueue(direct, prefix),
    async stop() {
      await stopAll();
      await receiver.stop();
      direct.disconnect();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let runCounter = 0;

/** Waits until the receiver has `n` deliveries of `label` (or `timeoutMs` passes) and returns them. */
async function collect(receiver: ReceiverProcess, label: string, n: number, timeoutMs: number, what: string): Promise<RunArrivals> {
  await until(async () => (await receiver.count(label)) >= n, timeoutMs, what, 100);
  // Stragglers (duplicates) get a moment to arrive.
  await sleep(200);
  return receiver.arrivals(label);
}

/** A stretch this long without an arrival counts as a pause: some ten times the floor's gap between arrivals. */
const PAUSE_MS = 20;

function throughputOf(a: RunArrivals, cpu: number): DeliveryRun {
  const first = a.at[0]!;
  const last = a.at[a.at.length - 1]!;
  const ids = a.ids.filter((id) => id !== "");
  const gaps = a.at
    .slice(1)
    .map((at, i) => at - a.at[i]!)
    .filter((g) => g >= PAUSE_MS);
  return {
    pauses: gaps.length,
    pausedMs: gaps.reduce((sum, g) => sum + g, 0),
    jobs: a.count,
    jobsPerSec: ((a.count - 1) * 1_000) / Math.max(1, last - first),
    connections: a.connections,
    cpuUsPerJob: cpu / a.count,
    duplicates: ids.length - new Set(ids).size,
  };
}

/**
 * One throughput run: `n` deliveries of a 100-byte JSON body to the
 * receiver with at most 50 in flight. delayline: `n` jobs on a topic with
 * the receiver as its url, stored while the topic is paused and then
 * resumed, so the tick sees them all due at once.
 */
export async function deliveryRun(
  rig: DeliveryRig,
  workers: { floor: DirectWorker; tick: DirectWorker },
  system: DeliverySystem,
  n: number,
): Promise<DeliveryRun> {
  const label = `${system}-${++runCounter}`;
  const url = `${rig.receiver.url}/r/${label}`;
  const timeoutMs = 60_000 + n * 5;

  if (playedByFloor(system)) {
    const before = cpuUs(workers.floor.workerdPid);
    const request = FLOOR_REQUEST[system];
    const res = await fetch(`${workers.floor.url}/deliver`, {
      method: "POST",
      body: JSON.stringify({ url, n, concurrency: DELIVERY_CONCURRENCY, body: JSON.stringify(payload(0)), request }),
    });
    const answer = (await res.json()) as { ok: number; failed: number };
    const cpu = cpuUs(workers.floor.workerdPid) - before;
    if (answer.ok !== n) throw new Error(`${system}: ${answer.ok} of ${n} deliveries succeeded`);
    return throughputOf(await collect(rig.receiver, label, n, timeoutMs, "the floor's deliveries"), cpu);
  }

  if (system === "delayline") {
    const queue = rig.queue(THROUGHPUT_PREFIX);
    const topic = `deliver-${runCounter}`;
    // The topic's own limit above a chunk, so TICK_CONCURRENCY (50) is what bounds the deliveries in flight, as the floor's 50
    // lanes: with a limit of 50 the claim would take 50 jobs a chunk and the next chunk wait for the whole chunk's settle.
    await queue.configureTopic(topic, { url, concurrency: TOPIC_CONCURRENCY, paused: true });
    const now = Date.now();
    await pool(Math.ceil(n / 1_000), 4, (k) =>
      queue.enqueueBatch(Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({ topic, runAt: now, payload: payload(k * 1_000 + j) }))),
    );
    await rig.infra.resetStats();
    const before = cpuUs(workers.tick.workerdPid);
    const bridgeBefore = selfCpuUs();
    await queue.configureTopic(topic, { paused: false });
    const arrivals = await collect(rig.receiver, label, n, timeoutMs, "the tick's deliveries");
    const cpu = cpuUs(workers.tick.workerdPid) - before;
    const bridge = selfCpuUs() - bridgeBefore;
    const usage = await rig.infra.usage();
    return {
      ...throughputOf(arrivals, cpu),
      requestsPerJob: usage.bridgeRequests / n,
      commandsPerJob: usage.commands / n,
      serviceCpuUsPerJob: (bridge + usage.processCpuUsec) / n,
    };
  }

  const b = await bull(rig.infra.redis.port);
  try {
    const due = Date.now();
    await pool(Math.ceil(n / 1_000), 4, (k) =>
      b.addBulk(Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({ due, payload: payload(k * 1_000 + j) }))),
    );
    await sleep(Math.max(0, due + 5 - Date.now()));
    await rig.infra.resetStats();
    const before = selfCpuUs();
    const w = b.work(async (job) => {
      const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(job.data) });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
    });
    const arrivals = await collect(rig.receiver, label, n, timeoutMs, "BullMQ's deliveries");
    const cpu = selfCpuUs() - before;
    const usage = await rig.infra.usage();
    await w.close();
    return { ...throughputOf(arrivals, cpu), serviceCpuUsPerJob: usage.processCpuUsec / n };
  } finally {
    await b.close();
  }
}

/** How long past the offer window a sustained run waits for deliveries. */
const SUSTAINED_GRACE_MS = 5_000;

/** Jobs due and not yet delivered at each `step` ms from `from` to `to`. */
function backlogSeries(due: number[], arrived: number[], from: number, to: number, step: number): number[] {
  const d = [...due].sort((a, b) => a - b);
  const a = [...arrived].sort((x, y) => x - y);
  const out: number[] = [];
  let i = 0;
  let j = 0;
  for (let t = from; t <= to; t += step) {
    while (i < d.length && d[i]! <= t) i++;
    while (j < a.length && a[j]! <= t) j++;
    out.push(Math.max(0, i - j));
  }
  return out;
}

const median = (values: number[]) => summarize(values).p50;

/**
 * `rate` jobs a second for `seconds`, due uniformly from `leadMs` after
 * they start being stored (straight into Redis, 1,000 per call), on a topic
 * whose url is the receiver. The counters are reset once they are stored:
 * what Redis and the bridge count from then to the last delivery is the
 * tick's own cost.
 */
export async function sustainedRun(infra: Infra, rig: DeliveryRig, tick: DirectWorker, rate: number, seconds: number): Promise<SustainedRun> {
  const label = `sustain-${rate}-${++runCounter}`;
  const queue = rig.queue(SUSTAINED_PREFIX);
  const topic = `sustain-${runCounter}`;
  const n = Math.round(rate * seconds);
  await queue.configureTopic(topic, { url: `${rig.receiver.url}/r/${label}` });
  // Storing runs at some 20,000 jobs a second here; the lead leaves twice that and a second for a loaded machine.
  const start = Date.now() + 1_000 + n / 10;
  const dueOf = (i: number) => start + Math.floor((i * seconds * 1_000) / n);
  const dueById = new Map<string, number>();
  await pool(Math.ceil(n / 1_000), 2, async (k) => {
    const jobs = Array.from({ length: Math.min(1_000, n - k * 1_000) }, (_, j) => ({ topic, runAt: dueOf(k * 1_000 + j), payload: payload(k * 1_000 + j) }));
    const stored = await queue.enqueueBatch(jobs);
    for (const [j, r] of stored.entries()) dueById.set(r.id, jobs[j]!.runAt);
  });
  if (Date.now() > start) console.warn(`sustained ${rate}/s: storing the jobs took longer than the lead`);
  await infra.resetStats();
  const cpuBefore = cpuUs(tick.workerdPid);
  const end = start + seconds * 1_000;
  // A tick that falls behind is given a few seconds past the window, not the time to work off its backlog.
  const cutAt = end + SUSTAINED_GRACE_MS;
  await until(async () => (await rig.receiver.count(label)) >= n || Date.now() > cutAt, seconds * 1_000 + 60_000, `sustained ${rate}/s`, 250);
  await sleep(300);
  const usage = await infra.usage();
  const cpu = cpuUs(tick.workerdPid) - cpuBefore;
  // What is left would be delivered during the next rate's run: the topic is paused, its jobs left where they are.
  await queue.configureTopic(topic, { paused: true });
  const a = await rig.receiver.arrivals(label);
  const firstAt = new Map<string, number>();
  let duplicates = 0;
  a.ids.forEach((id, i) => {
    if (firstAt.has(id)) duplicates++;
    else if (dueById.has(id)) firstAt.set(id, a.at[i]!);
  });
  const lateness = [...firstAt].map(([id, at]) => at - dueById.get(id)!);
  const early = lateness.filter((l) => l < 0).length;
  // A job not delivered by the cut is at least this late: its lateness counts as that (so the percentiles are then lower bounds).
  for (const [id, due] of dueById) if (!firstAt.has(id)) lateness.push(cutAt - due);
  const s = summarize(lateness);
  const lastDue = dueOf(n - 1);
  const inWindow = [...firstAt.values()].filter((at) => at >= start && at <= lastDue).length;
  const backlog = backlogSeries([...dueById.values()], [...firstAt.values()], start, lastDue, 250);
  const q = Math.max(1, Math.floor(backlog.length / 4));
  const firstQ = median(backlog.slice(0, q));
  const lastQ = median(backlog.slice(-q));
  return {
    rate,
    seconds,
    jobs: n,
    delivered: firstAt.size,
    duplicates,
    early,
    p50: s.p50,
    p99: s.p99,
    max: s.max,
    deliveredPerSec: (inWindow * 1_000) / Math.max(1, lastDue - start),
    backlogFirstQuarter: firstQ,
    backlogLastQuarter: lastQ,
    backlogMax: Math.max(...backlog),
    keptUp: lastQ <= firstQ + rate / 2,
    commandsPerJob: usage.commands / n,
    requestsPerJob: usage.bridgeRequests / n,
    cpuUsPerJob: cpu / n,
  };
}
