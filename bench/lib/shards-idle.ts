/**
 * The idle row of the shards benchmark (issue 35), through `npm start` as a
 * user runs it (the bench Worker at its defaults, with the wake alarm), one
 * shard and three side by side (two stacks at once: idle stacks barely use
 * the CPU, and each shard's counts are its own redis-server's and bridge's).
 *
 * 1. Traffic (`trafficS`, 10 jobs a second per shard, due a second later),
 *    then wait until every shard's loop has ended idle (sleep mark "c").
 * 2. `minutes` idle minutes, each from second `phaseS` of a minute (so each
 *    holds one cron): per shard, billed Redis commands (INFO commandstats,
 *    nothing else touching Redis), REST requests (its bridge), Durable Object
 *    requests (the bench Worker counts what its wake alarm receives, by
 *    prefix), and the loops and looks the Worker logged.
 * 3. Jobs enqueued into a sleeping shard: each only once a GET of the
 *    shard's sleep mark says "c" (its loop ended idle), every ~`everyMs`
 *    one on each of the shard's topics, until a phase has its jobs per
 *    shard (or its time is up): first due `laterDelayMs` later while that
 *    falls before the next cron's look (the wake alarm carries them), then
 *    while it falls past it (the next cron's loop does), then due
 *    `soonDelayMs` later (a producer's drain does). The alarm's comes first:
 *    a delivery's topic is looked at again about a minute later (its
 *    sweep), which keeps the shard awake for most of that minute, and the
 *    alarm's jobs fit only in the first third of one. Lateness = the
 *    handler's time − due.
 */
import { sleep } from "../../harness/util.js";
import { DEFAULT_TICK_IDLE_PEEK_MS } from "../../src/limits.js";
import { nextCronAt, unlookedUntil } from "../../src/tick/cron-look.js";
import { BENCH_TOKEN, startStack, type Stack } from "./delayline.js";
import { SHARD_NAMES, startShardRig, topicsOn, type ShardRig, type ShardServer } from "./shard-rig.js";
import { latenessOf, snapshot, type Lateness, type Snapshot } from "./shard-spans.js";
import { collect, enqueueOne, forgetSamples } from "./shard-traffic.js";
import { callsBetween } from "./commandstats.js";

/** A phase of jobs into sleeping shards: how many per shard, within how long. */
interface PhaseSize {
  jobs: number;
  maxS: number;
}

export interface ShardsIdleSizes {
  trafficS: number;
  minutes: number;
  phaseS: number;
  /** Jobs per shard, and at most how many seconds, of those due `laterDelayMs` after enqueue that the wake alarm carries, of those the next cron's loop carries, and of those due `soonDelayMs` after (0 jobs leaves a phase out). */
  alarm: PhaseSize;
  cron: PhaseSize;
  soon: PhaseSize;
  soonDelayMs: number;
  laterDelayMs: number;
  everyMs: number;
  topicsPerShard: number;
}

export const SHARDS_IDLE_SIZES: ShardsIdleSizes = {
  trafficS: 10,
  minutes: 3,
  phaseS: 30,
  alarm: { jobs: 80, maxS: 300 },
  cron: { jobs: 60, maxS: 180 },
  soon: { jobs: 60, maxS: 120 },
  soonDelayMs: 5_000,
  laterDelayMs: 45_000,
  everyMs: 1_000,
  topicsPerShard: 4,
};

/** Keeps a job's carrier clear of the boundary between the wake alarm's and the next cron's (the Worker stamps due times a little later). */
const CARRIER_MARGIN_MS = 2_000;

/** One shard's idle minute. */
interface IdleMinute {
  shard: string;
  /** 1 for the first measured minute. */
  minute: number;
  from: number;
  commands: number;
  byCommand: Record<string, number>;
  requests: number;
  /** Seconds into the minute each request came, and its path. */
  requestTimes: Array<[number, string]>;
  durableObjectRequests: number;
  /** Loops that ended in the minute ("tick ended") and cron invocations that only looked. */
  loops: number;
  looks: number;
}

/** One job enqueued into a sleeping shard. */
interface SleepingJob {
  shard: string;
  delayMs: number;
  /** When the sleep mark read "c", and when the job was stored (its answer came). */
  markReadAt: number;
  enqueuedAt: number;
  dueAt: number;
  id: string;
  /** What should carry it: a producer's drain, the wake alarm, or the next cron's loop (from when it was enqueued and is due). */
  carrier: "drain" | "drain or a cron's loop" | "wake alarm" | "next cron's loop";
  lateMs: number | null;
  deliveries: number;
}

/** One shard from the traffic's last delivery to the first idle minute: the loops that ended idle, and what they cost. */
interface Settling {
  shard: string;
  ms: number;
  /** Billed commands, the bench's own reads of the sleep mark left out. */
  commands: number;
  requests: number;
  durableObjectRequests: number;
  loops: number;
}

export interface IdleConfig {
  shards: number;
  trafficJobs: number;
  /** From the traffic's last delivery until every shard's sleep mark read "c". */
  endedIdleAfterMs: number;
  settling: Settling[];
  minutes: IdleMinute[];
  sleeping: SleepingJob[];
  /** Lateness of the sleeping shards' jobs, by delay (ms) and by carrier. */
  lateness: Record<string, Lateness>;
  latenessByCarrier: Record<string, Lateness>;
  /** Durable Object requests per job the wake alarm carries (its arms and alarms over that phase). */
  durableObjectRequestsPerAlarmJob: number;
}

export interface ShardsIdleResult {
  sizes: ShardsIdleSizes;
  configs: IdleConfig[];
}

type Log = (line: string) => void;

const sum = (r: Record<string, number>) => Object.values(r).reduce((n, c) => n + c, 0);
const durableObjectTotal = (r: Record<string, number>, prefix: string) => r[prefix] ?? 0;

/** A paced trickle: every 100 ms one job per shard (its topics in turn), due a second later. */
async function traffic(stack: Stack, topics: string[][], seconds: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0, end = Date.now() + seconds * 1_000; Date.now() < end; i++) {
    const answers = await Promise.all(topics.map((ts) => enqueueOne(stack, BENCH_TOKEN, ts[i % ts.length]!, 1_000, i)));
    for (const a of answers) if (a.id) ids.push(a.id);
    await sleep(100);
  }
  return ids;
}

/** The bench's own reads of each shard's sleep mark (GETs it takes out of the commands it reports). */
const markReads = new Map<ShardServer, number>();

async function markOf(shard: ShardServer): Promise<string | null> {
  markReads.set(shard, (markReads.get(shard) ?? 0) + 1);
  return shard.meter.get(shard.keys.tickAsleep);
}

const marks = (rig: ShardRig) => Promise.all(rig.shards.map(markOf));

/** Per shard, the minute between two snapshots. */
function idleMinute(
  rig: ShardRig,
  stack: Stack,
  minute: number,
  a: Snapshot,
  b: Snapshot,
  doA: Record<string, number>,
  doB: Record<string, number>,
): IdleMinute[] {
  return rig.shards.map((s, i) => {
    const byCommand = callsBetween(a.calls[i]!, b.calls[i]!);
    const lines = stack.lines.filter((l) => String(l.shard ?? "main") === s.name && l.at >= a.at && l.at < b.at);
    return {
      shard: s.name,
      minute,
      from: a.at,
      commands: sum(byCommand),
      byCommand,
      requests: b.requests[i]! - a.requests[i]!,
      requestTimes: s.requests.slice(a.requests[i], b.requests[i]).map(([at, path]) => [Math.round((at - a.at) / 100) / 10, path]),
      durableObjectRequests: durableObjectTotal(doB, s.prefix) - durableObjectTotal(doA, s.prefix),
      loops: lines.filter((l) => l.msg === "tick ended").length,
      looks: lines.filter((l) => l.msg.startsWith("tick looked")).length,
    };
  });
}

function carrierOf(enqueuedAt: number, dueAt: number, delayMs: number): SleepingJob["carrier"] {
  if (delayMs <= DEFAULT_TICK_IDLE_PEEK_MS) return nextCronAt(enqueuedAt) <= dueAt ? "drain or a cron's loop" : "drain";
  return dueAt < unlookedUntil(enqueuedAt) ? "wake alarm" : "next cron's loop";
}

/** A phase of jobs into sleeping shards: their delay, how many, and when in the minute one may be enqueued. */
interface Phase extends PhaseSize {
  delayMs: number;
  when: (now: number) => boolean;
}

/** Jobs into `shard` while its loop has ended idle and `phase.when`: every ~`everyMs` one on each of `topics`, until the phase has its jobs or `until`. */
async function intoSleeping(stack: Stack, shard: ShardServer, topics: string[], phase: Phase, until: number, everyMs: number): Promise<SleepingJob[]> {
  const jobs: SleepingJob[] = [];
  const { delayMs } = phase;
  for (let i = 0; jobs.length < phase.jobs && Date.now() < until; ) {
    if (!phase.when(Date.now()) || (await markOf(shard)) !== "c") {
      await sleep(250);
      continue;
    }
    const markReadAt = Date.now();
    const answers = await Promise.all(topics.map((topic) => enqueueOne(stack, BENCH_TOKEN, topic, delayMs, i++)));
    for (const a of answers) {
      if (!a.id || !a.dueAt) continue;
      jobs.push({
        shard: shard.name,
        delayMs,
        markReadAt,
        enqueuedAt: a.at,
        dueAt: a.dueAt,
        id: a.id,
        carrier: carrierOf(a.at, a.dueAt, delayMs),
        lateMs: null,
        deliveries: 0,
      });
    }
    // Spread over the minute, not in step with it.
    await sleep(everyMs * (0.5 + Math.random()));
  }
  return jobs;
}

/** Per shard, the span from `a` to `b` once the traffic stopped (the bench's mark reads, counted in `reads`, taken out). */
function settling(
  rig: ShardRig,
  stack: Stack,
  a: Snapshot,
  b: Snapshot,
  reads: number[],
  doA: Record<string, number>,
  doB: Record<string, number>,
): Settling[] {
  return idleMinute(rig, stack, 0, a, b, doA, doB).map((m, i) => ({
    shard: m.shard,
    ms: b.at - a.at,
    commands: m.commands - reads[i]!,
    requests: m.requests,
    durableObjectRequests: m.durableObjectRequests,
    loops: m.loops,
  }));
}

/** The phases of jobs into sleeping shards. */
function phasesOf(sizes: ShardsIdleSizes): Phase[] {
  const margin = CARRIER_MARGIN_MS;
  const phases: Phase[] = [
    { ...sizes.alarm, delayMs: sizes.laterDelayMs, when: (now) => now + sizes.laterDelayMs + margin < unlookedUntil(now) },
    { ...sizes.cron, delayMs: sizes.laterDelayMs, when: (now) => now + sizes.laterDelayMs - margin >= unlookedUntil(now) },
    { ...sizes.soon, delayMs: sizes.soonDelayMs, when: () => true },
  ];
  return phases.filter((p) => p.jobs > 0);
}

async function idleConfig(shards: number, sizes: ShardsIdleSizes, log: Log, logFile: string): Promise<IdleConfig> {
  const rig = await startShardRig({ shards });
  let stack: Stack | undefined;
  try {
    stack = await startStack(rig.stackRedis, rig.settings, (l) => !l.includes('{"level"') && log(l), logFile, true);
    const st = stack;
    await forgetSamples(st);
    const collector = collect(st);
    try {
      const topics = rig.shards.map((s) => topicsOn(s.name, SHARD_NAMES, sizes.topicsPerShard));
      const sent = await traffic(st, topics, sizes.trafficS);
      const delivered = () => new Set(collector.deliveries.map((d) => d.id));
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && !sent.every((id) => delivered().has(id)); ) await sleep(500);
      const lastDelivery = Math.max(0, ...collector.deliveries.map((d) => d.at));
      const afterTraffic = await snapshot(rig);
      const doAfterTraffic = { ...collector.durableObjectRequests() };
      const readsBefore = rig.shards.map((s) => markReads.get(s) ?? 0);
      let m = await marks(rig);
      for (const deadline = Date.now() + 180_000; Date.now() < deadline && !m.every((x) => x === "c"); m = await marks(rig)) await sleep(2_000);
      const endedIdleAfterMs = Date.now() - lastDelivery;
      const reads = rig.shards.map((s, i) => (markReads.get(s) ?? 0) - readsBefore[i]!);
      log(
        `shards idle ${shards}: ${sent.length} jobs of traffic; every loop ended idle ${Math.round(endedIdleAfterMs / 1_000)} s after the last delivery (marks ${m.join(", ")})`,
      );

      // Each minute from second phaseS, so that each holds one cron.
      let at = Math.floor(Date.now() / 60_000) * 60_000 + sizes.phaseS * 1_000;
      while (at < Date.now() + 1_000) at += 60_000;
      await sleep(at - Date.now());
      let before = await snapshot(rig);
      await collector.read();
      let doBefore = { ...collector.durableObjectRequests() };
      const settled = settling(rig, st, afterTraffic, before, reads, doAfterTraffic, doBefore);
      const minutes: IdleMinute[] = [];
      for (let k = 1; k <= sizes.minutes; k++) {
        await sleep(before.at + 60_000 - Date.now());
        const after = await snapshot(rig);
        await collector.read();
        const doAfter = { ...collector.durableObjectRequests() };
        const ms = idleMinute(rig, st, k, before, after, doBefore, doAfter);
        minutes.push(...ms);
        log(
          `shards idle ${shards}, minute ${k}: ${ms.map((x) => `${x.shard} ${x.commands} commands, ${x.requests} requests, ${x.durableObjectRequests} DO, ${x.loops} loops`).join("; ")}`,
        );
        [before, doBefore] = [after, doAfter];
      }

      const sleeping: SleepingJob[] = [];
      let alarmDurableObjectRequests = 0;
      for (const phase of phasesOf(sizes)) {
        await collector.read();
        // A phase for one carrier starts when its part of the minute does.
        for (const deadline = Date.now() + 60_000; !phase.when(Date.now()) && Date.now() < deadline; ) await sleep(250);
        const doAt = sum(collector.durableObjectRequests());
        const until = Date.now() + phase.maxS * 1_000;
        const jobs = (await Promise.all(rig.shards.map((s, i) => intoSleeping(st, s, topics[i]!, phase, until, sizes.everyMs)))).flat();
        sleeping.push(...jobs);
        const lastDue = Math.max(0, ...jobs.map((j) => j.dueAt));
        for (const deadline = lastDue + 60_000; Date.now() < deadline && !jobs.every((j) => delivered().has(j.id)); ) await sleep(1_000);
        await sleep(1_000);
        await collector.read();
        if (jobs.some((j) => j.carrier === "wake alarm")) alarmDurableObjectRequests += sum(collector.durableObjectRequests()) - doAt;
        log(`shards idle ${shards}: ${jobs.length} jobs due ${phase.delayMs / 1_000} s after enqueue into sleeping shards`);
      }
      for (const j of sleeping) {
        const ds = collector.deliveries.filter((d) => d.id === j.id);
        j.deliveries = ds.length;
        const first = ds.find((d) => d.attempt === 1);
        j.lateMs = first ? first.at - first.dueAt : null;
      }
      const byId = new Map(collector.deliveries.filter((d) => d.attempt === 1).map((d) => [d.id, d]));
      const late = (js: SleepingJob[]) => latenessOf(js.flatMap((j) => (byId.has(j.id) ? [byId.get(j.id)!] : [])));
      const group = (key: (j: SleepingJob) => string) => {
        const out: Record<string, Lateness> = {};
        for (const k of new Set(sleeping.map(key))) out[k] = late(sleeping.filter((j) => key(j) === k));
        return out;
      };
      return {
        shards,
        trafficJobs: sent.length,
        endedIdleAfterMs,
        settling: settled,
        minutes,
        sleeping,
        lateness: group((j) => String(j.delayMs)),
        latenessByCarrier: group((j) => j.carrier),
        durableObjectRequestsPerAlarmJob: alarmDurableObjectRequests / Math.max(1, sleeping.filter((j) => j.carrier === "wake alarm").length),
      };
    } finally {
      await collector.stop();
    }
  } finally {
    await stack?.stop();
    await rig.stop();
  }
}

/** The idle row: one shard and three, side by side. */
export async function shardsIdleRun(sizes: ShardsIdleSizes, log: Log, logFile: (name: string) => string): Promise<ShardsIdleResult> {
  const configs = await Promise.all([1, 3].map((n) => idleConfig(n, sizes, log, logFile(`shards-idle-${n}`))));
  return { sizes, configs };
}
