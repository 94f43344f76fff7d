/**
 * What idle topics cost, and whether a job on a new topic is still on time
 * among them, through `npm start` (one fresh stack, free-plan profile:
 * TICK_SUBREQUEST_BUDGET=45, TICK_CHUNK=10; MAX_TOPICS=10001 so the
 * 10,001st topic fits).
 *
 * 1. Idle cost per minute with 1, 100 and 10,000 empty topics (created with
 *    PUT /v1/topics/<name> {"maxAttempts":3}, 16 in flight). Once the tick
 *    has settled (its sleep mark is set and a minute-aligned cron invocation
 *    holds the lock), at the same second of the minute for every count
 *    (--phase, default :30, so each minute holds one cron start and one
 *    handover at :15): CONFIG RESETSTAT, exactly 60 s, INFO commandstats.
 *    Commands = every call commandstats lists (scripts' inner commands
 *    included, as Upstash bills them) but CONFIG and INFO (the measurement's
 *    own) and MEMORY USAGE (the bridge's record-size check: Upstash runs none). REST requests = the HTTP requests the bridge served in the same
 *    60 s (counted inside the stack's Node process, harness/count-requests.ts).
 *    Target: 10,000-topic ÷ 1-topic ≤ 1.1.
 * 2. With the 10,000 topics in place: jobs on a new (10,001st) topic with
 *    target.url = a loopback receiver and delays of 1, 2, 5, 15, 30 and 45 s,
 *    one at a time, each once the previous one arrived: first each at once,
 *    then each after the tick marked itself asleep, then (with the wake alarm)
 *    each 2 s into a minute whose cron only looked (the loop ended), so a
 *    job due before the next cron is carried by a drain or the alarm.
 *    Lateness = arrival − dueAt.
 *    Target: every one within TICK_POLL_MS + 100 ms (1,100 ms), none early.
 *
 * Writes bench/results/idle-topics.{json,md} (other runs than the full one:
 * bench/results/tmp/).
 *
 *   npm run bench:idle [-- --topics 1,100,10000 --delays 1,2,5,15,30,45 --phase 30 --settings TICK_POLL_MS=100]
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import IORedis from "ioredis";
import { Keys } from "../src/queue/keys.js";
import { pool, sleep } from "../harness/util.js";
import { billedCalls, isOwn, parseCommandstats } from "./lib/commandstats.js";
import { machine, startNpmStart, startReceiver, type LoggedLine, type NpmStart } from "./lib/npm-start.js";

const { values: args } = parseArgs({
  options: {
    topics: { type: "string", default: "1,100,10000" },
    delays: { type: "string", default: "1,2,5,15,30,45" },
    phase: { type: "string", default: "30" },
    window: { type: "string", default: "60000" },
    concurrency: { type: "string", default: "16" },
    settings: { type: "string", default: "" },
  },
});
const COUNTS = args.topics.split(",").map(Number);
const DELAYS_S = args.delays.split(",").map(Number);
const PHASE_S = Number(args.phase);
const WINDOW_MS = Number(args.window);
const CONCURRENCY = Number(args.concurrency);
const SETTINGS: Record<string, string> = { TICK_SUBREQUEST_BUDGET: "45", TICK_CHUNK: "10", MAX_TOPICS: String(Math.max(...COUNTS) + 1) };
for (const kv of args.settings.split(",").filter(Boolean)) {
  const [k, v] = kv.split("=");
  SETTINGS[k!] = v!;
}
const POLL_MS = Number(SETTINGS.TICK_POLL_MS ?? 1000);
const LATE_TARGET_MS = POLL_MS + 100;
const full = args.topics === "1,100,10000" && args.delays === "1,2,5,15,30,45" && WINDOW_MS === 60_000 && args.settings === "";
const root = join(import.meta.dirname, "..");
const keys = new Keys("dl:{main}");
const log = (line: string) => console.error(`[bench:idle] ${new Date().toISOString().slice(11, 19)} ${line}`);
const topicName = (i: number) => `idle-${String(i).padStart(5, "0")}`;

interface TickStatus {
  startedAt: number;
  updatedAt: number;
  rounds: number;
  subrequests: number;
  budget: number;
  asleep: boolean;
  ended: string | null;
}
const tickStatus = async (redis: IORedis) => {
  const raw = await redis.get(keys.tickStatus);
  return raw === null ? null : (JSON.parse(raw) as TickStatus);
};
const markSet = async (redis: IORedis) => (await redis.exists(keys.tickAsleep)) === 1;

const summarizeLines = (lines: LoggedLine[]) => {
  const byMsg: Record<string, number> = {};
  for (const l of lines) byMsg[l.msg] = (byMsg[l.msg] ?? 0) + 1;
  return byMsg;
};

/** Waits until the tick has settled: its sleep mark set, a minute-aligned invocation holding the lock (or the loop ended idle), at second PHASE_S of a minute. */
async function settle(redis: IORedis, notBefore: number) {
  for (let attempt = 0; ; attempt++) {
    const now = Date.now();
    let at = Math.floor(now / 60_000) * 60_000 + PHASE_S * 1000;
    while (at < Math.max(now, notBefore) + 1_000) at += 60_000;
    await sleep(at - Date.now());
    const [status, mark] = [await tickStatus(redis), await markSet(redis)];
    // With the wake alarm the loop has ended idle (mark "c") and each cron only looks; without it a cron's loop sleeps.
    const aligned = status !== null && ((status.startedAt % 60_000 < 1_000 && status.ended === null) || status.ended === "idle");
    if ((mark && aligned) || attempt >= 3) return { status, mark, aligned, waitedMinutes: attempt };
    log(`not settled at :${PHASE_S} (mark ${mark}, status ${JSON.stringify(status)}); another minute`);
  }
}

/**
 * Waits until the loop has ended idle (mark "c", the wake alarm's) and it is
 * 2 s past a minute (its cron has looked), so a job enqueued now with
 * `delayS` falls due before the next cron: a producer's drain (up to 20 s)
 * or the wake alarm carries it, not a cron's loop.
 */
async function endedEarlyInMinute(redis: IORedis, delayS: number) {
  for (let i = 0; i < 3; i++) {
    const next = Math.ceil((Date.now() + 1) / 60_000) * 60_000 + 2_000;
    await sleep(next - Date.now());
    if ((await redis.get(keys.tickAsleep)) === "c" && (Date.now() % 60_000) / 1000 + delayS < 55) return;
  }
  log(`no ended loop early in a minute for ${delayS} s; enqueueing anyway`);
}

async function idleMinute(stack: NpmStart, redis: IORedis, topics: number) {
  const before = await settle(redis, 0);
  await stack.bridgeRequests(); // forget what came before
  const t0 = Date.now();
  await redis.config("RESETSTAT");
  await sleep(t0 + WINDOW_MS - Date.now());
  const stats = parseCommandstats(await redis.info("commandstats"));
  const t1 = Date.now();
  const requests = (await stack.bridgeRequests()).filter(([at]) => at >= t0 && at <= t1);
  const commands = billedCalls(stats);
  const byPath: Record<string, number> = {};
  for (const [, path] of requests) byPath[path] = (byPath[path] ?? 0) + 1;
  const after = { status: await tickStatus(redis), mark: await markSet(redis) };
  const lines = stack.lines.filter((l) => l.at >= t0 && l.at <= t1);
  const result = {
    topics,
    registry: await redis.scard(keys.topics),
    window: { from: new Date(t0).toISOString(), ms: t1 - t0 },
    settledBefore: before,
    after,
    commands,
    byCommand: stats,
    requests: requests.length,
    requestsByPath: byPath,
    /** When each request came, seconds into the window (the window starts at :${PHASE_S}). */
    requestTimes: requests.map(([at]) => Math.round((at - t0) / 100) / 10),
    evalsha: stats.evalsha?.calls ?? 0,
    tickLines: summarizeLines(lines),
    tickLinesRaw: lines,
    load: machine().loadavg,
  };
  log(
    `${topics} topics: ${commands} commands, ${requests.length} requests (${JSON.stringify(byPath)}), evalsha ${result.evalsha}; tick lines ${JSON.stringify(result.tickLines)}`,
  );
  return result;
}

const startedAt = new Date();
const receiver = await startReceiver();
const stack = await startNpmStart({ name: "idle-topics", settings: SETTINGS, countRequests: true });
const redis = new IORedis({ port: stack.redisPort, host: "127.0.0.1", maxRetriesPerRequest: null, lazyConnect: true });
const idle: Array<Awaited<ReturnType<typeof idleMinute>>> = [];
const creation: Array<{ topics: number; created: number; ms: number; perSecond: number }> = [];
const lateness: Array<Record<string, unknown> & { lateMs: number | null }> = [];
try {
  await redis.connect();
  log(`stack up on :${stack.port} (redis :${stack.redisPort}, bridge :${stack.bridgePort}), settings ${JSON.stringify(SETTINGS)}`);

  // 1. Idle cost per minute by topic count, topics added as the count grows.
  let created = 0;
  for (const n of COUNTS) {
    const names = Array.from({ length: n - created }, (_, i) => topicName(created + i));
    const t = Date.now();
    await pool(names.length, CONCURRENCY, async (i) => {
      await stack.client.topics.configure(names[i]!, { maxAttempts: 3 });
    });
    const ms = Date.now() - t;
    creation.push({ topics: n, created: names.length, ms, perSecond: Math.round((names.length * 1000) / Math.max(1, ms)) });
    created = n;
    log(`${n} topics exist (${names.length} created in ${ms} ms); settling`);
    idle.push(await idleMinute(stack, redis, n));
  }

  // 2. Lateness of jobs on a new topic among the idle ones.
  const topic = "fresh-topic";
  for (const mode of ["at once", "after the sleep mark", "loop ended, due before the next cron"] as const) {
    for (const delayS of DELAYS_S) {
      let waitedForMarkMs = 0;
      if (mode !== "at once") {
        const t = Date.now();
        while (!(await markSet(redis)) && Date.now() - t < 90_000) await sleep(200);
        waitedForMarkMs = Date.now() - t;
      }
      if (mode === "loop ended, due before the next cron") await endedEarlyInMinute(redis, delayS);
      const [mark, status] = [await markSet(redis), await tickStatus(redis)];
      const enqueuedAt = Date.now();
      const job = await stack.client.jobs.enqueue({ topic, payload: { delayS }, delay: delayS * 1000, target: { url: receiver.url } });
      const dueAt = Date.parse(job.dueAt!);
      const deadline = dueAt + 60_000;
      while (!receiver.arrivals.has(job.id) && Date.now() < deadline) await sleep(20);
      await sleep(200);
      const times = receiver.arrivals.get(job.id) ?? [];
      const lines = stack.lines.filter((l) => l.at >= enqueuedAt && l.at <= (times[0] ?? deadline) + 100);
      // No other topic has work: a tick round that claimed something in the meantime claimed this job (itself or in a fanned-out chunk).
      const claiming = lines.filter((l) => l.msg === "tick round" && Number(l.claimed) > 0);
      const r = {
        mode,
        delayS,
        markAtEnqueue: mark,
        waitedForMarkMs,
        statusAtEnqueue: status ? { startedAt: new Date(status.startedAt).toISOString(), asleep: status.asleep, ended: status.ended } : null,
        dueAt: new Date(dueAt).toISOString(),
        deliveries: times.length,
        lateMs: times[0] === undefined ? null : times[0] - dueAt,
        deliveredBy:
          times.length === 0
            ? "—"
            : claiming.length === 0
              ? "producer's drain (no tick round claimed it)"
              : claiming.some((l) => Number(l.fannedOut) > 0)
                ? "tick round (fanned-out chunk)"
                : "tick round",
        tickLines: lines,
      };
      lateness.push(r);
      log(`${mode}, ${delayS} s: late ${r.lateMs} ms, ${times.length} deliveries, mark at enqueue ${mark}, by ${r.deliveredBy}`);
    }
  }
} finally {
  redis.disconnect();
  await stack.stop();
  await receiver.close();
}

const one = idle.find((r) => r.topics === 1);
const most = idle.find((r) => r.topics === Math.max(...COUNTS));
const ratio = one && most ? Math.round((most.commands / one.commands) * 1000) / 1000 : null;
const requestRatio = one && most ? Math.round((most.requests / Math.max(1, one.requests)) * 1000) / 1000 : null;
const onTime = lateness.every((l) => l.lateMs !== null && l.lateMs >= 0 && l.lateMs <= LATE_TARGET_MS && l.deliveries === 1);
const m = machine();
const out = {
  benchmark: "idle topics through npm start: idle cost per minute by topic count, and lateness of a new topic among them",
  date: startedAt.toISOString(),
  durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
  machine: m,
  settings: SETTINGS,
  topicCreation: creation,
  idle,
  ratio: { commands: ratio, requests: requestRatio, target: 1.1, met: ratio !== null && ratio <= 1.1 },
  lateness: { targetMs: LATE_TARGET_MS, met: onTime, jobs: lateness },
  logFile: stack.logFile.slice(root.length + 1),
};
console.log(JSON.stringify({ ...out, idle: out.idle.map(({ tickLinesRaw: _, ...r }) => r) }, null, 2));

const fmtLoad = (l: { "1m": number; "5m": number; "15m": number }) => `${l["1m"]} / ${l["5m"]} / ${l["15m"]}`;
const top = (byCommand: Record<string, { calls: number }>) =>
  Object.entries(byCommand)
    .filter(([n]) => !isOwn(n))
    .sort((a, b) => b[1].calls - a[1].calls)
    .map(([n, s]) => `${n} ${s.calls}`)
    .join(", ");
const md =
  `# Idle topics through \`npm start\`\n\n` +
  `${out.date}, ${m.cpus} × ${m.model}, Node ${m.node}; ${out.durationS} s in all. Machine load (1 / 5 / 15 min) at the end: ${fmtLoad(m.loadavg)}.\n\n` +
  `One fresh \`npm start\` (the Worker of wrangler.toml, its own redis-server and bridge) with ${Object.entries(SETTINGS)
    .map(([k, v]) => `\`${k}=${v}\``)
    .join(", ")}; ` +
  `everything else default (\`TICK_POLL_MS=${POLL_MS}\`, \`TICK_IDLE_PEEK_MS\` 20 s).\n\n` +
  `## Idle cost per minute\n\n` +
  `Empty topics created with \`PUT /v1/topics/<name> {"maxAttempts":3}\` (${CONCURRENCY} in flight). Once the tick's sleep mark was set and a minute-aligned ` +
  `cron invocation held the lock, at :${PHASE_S} of the minute: \`CONFIG RESETSTAT\`, ${WINDOW_MS / 1000} s, \`INFO commandstats\`. ` +
  `Commands: every call listed (scripts' commands included) but CONFIG/INFO. Requests: REST requests the bridge served in the same window.\n\n` +
  `| topics | commands / min | REST requests / min | EVALSHA | tick lines in the minute | load (1 / 5 / 15) | by command |\n|---|---|---|---|---|---|---|\n` +
  idle
    .map(
      (r) =>
        `| ${r.topics.toLocaleString("en")} | ${r.commands} | ${r.requests} (${Object.entries(r.requestsByPath)
          .map(([p, n]) => `${p} ${n}`)
          .join(", ")}) | ${r.evalsha} | ` +
        `${
          Object.entries(r.tickLines)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ") || "—"
        } | ${fmtLoad(r.load)} | ${top(r.byCommand)} |`,
    )
    .join("\n") +
  `\n\nWhen the requests came (seconds into the minute, which starts at :${PHASE_S}; the cron fires at ${60 - PHASE_S} s and the running loop's window ends TICK_OVERLAP_MS (15 s) later):\n\n` +
  idle.map((r) => `- ${r.topics.toLocaleString("en")}: ${r.requestTimes.join(", ")}`).join("\n") +
  `\n\nRatio ${most?.topics.toLocaleString("en")} ÷ 1 topic: commands **${ratio}**, requests ${requestRatio}. Target ≤ 1.1: **${out.ratio.met ? "met" : "missed"}**.\n\n` +
  `Topic creation: ${creation.map((c) => `${c.created} in ${(c.ms / 1000).toFixed(1)} s (${c.perSecond}/s)`).join(", ")}.\n\n` +
  `## Lateness of a new topic among ${most?.topics.toLocaleString("en")} idle ones\n\n` +
  `Jobs on a new topic (the ${(Math.max(...COUNTS) + 1).toLocaleString("en")}th), \`target.url\` a loopback receiver, one at a time, each once the previous one arrived; ` +
  `first each at once, then each after the tick's sleep mark was set, then each 2 s into a minute whose cron only looked (the loop ended: a drain or the wake alarm carries it). Lateness = arrival − \`dueAt\`. ` +
  `Target: each within ${LATE_TARGET_MS} ms, none early, each once: **${onTime ? "met" : "missed"}**.\n\n` +
  `| enqueued | delay | sleep mark at enqueue | lateness | deliveries | delivered by |\n|---|---|---|---|---|---|\n` +
  lateness
    .map(
      (l) =>
        `| ${l.mode} | ${l.delayS} s | ${l.markAtEnqueue ? "set" : "not set"} | ${l.lateMs === null ? "not delivered" : `${l.lateMs} ms`} | ${l.deliveries} | ${l.deliveredBy} |`,
    )
    .join("\n") +
  `\n`;
const dir = full ? join(root, "bench/results") : join(root, "bench/results/tmp");
writeFileSync(join(dir, "idle-topics.json"), `${JSON.stringify(out, null, 2)}\n`);
writeFileSync(join(dir, "idle-topics.md"), md);
log(`wrote ${join(dir, "idle-topics.{json,md}")}`);
if (!out.ratio.met || !onTime) process.exitCode = 1;
