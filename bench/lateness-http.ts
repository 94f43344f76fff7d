/**
 * Lateness of http deliveries through the whole local stack (`npm start`:
 * redis-server, bridge, the Worker of wrangler.toml in workerd, the cron
 * driver) to a loopback receiver, for several deployment profiles side by
 * side in one run, each on a stack of its own started fresh:
 *
 *   a  default settings (TICK_POLL_MS=1000, TICK_SUBREQUEST_BUDGET 10,000)
 *   b  TICK_POLL_MS=100
 *   c  free plan: TICK_SUBREQUEST_BUDGET=45, TICK_CHUNK=10
 *
 * Per profile: once the tick reports itself asleep, N http jobs due evenly
 * over the spread (the first `lead` ms after the enqueue starts) are stored
 * up front in batches (POST /v1/jobs/batch) on a topic with default
 * settings, each with target.url = the receiver. Lateness = when the
 * receiver saw the request − the job's dueAt.
 *
 *   npm run bench:lateness [-- --profiles a,b,c --jobs 1000 --spread 20000 --lead 5000]
 *
 * The full run (every profile, default sizes) writes
 * bench/results/lateness-http.{json,md}; any other run writes to
 * bench/results/tmp/ (git-ignored).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import IORedis from "ioredis";
import { Keys } from "../src/queue/keys.js";
import { sleep } from "../harness/util.js";
import { machine, startNpmStart, startReceiver, type LoggedLine } from "./lib/npm-start.js";
import { summarize } from "./stats.js";

const PROFILES = {
  a: { name: "default", settings: {} as Record<string, string>, pollMs: 1000, p99Target: 1100 as number | null },
  b: { name: "TICK_POLL_MS=100", settings: { TICK_POLL_MS: "100" }, pollMs: 100, p99Target: 200 as number | null },
  c: { name: "free plan", settings: { TICK_SUBREQUEST_BUDGET: "45", TICK_CHUNK: "10" }, pollMs: 1000, p99Target: null as number | null },
};
type ProfileKey = keyof typeof PROFILES;

const { values: args } = parseArgs({
  options: {
    profiles: { type: "string", default: "a,b,c" },
    jobs: { type: "string", default: "1000" },
    spread: { type: "string", default: "20000" },
    lead: { type: "string", default: "5000" },
    batch: { type: "string", default: "500" },
  },
});
const JOBS = Number(args.jobs);
const SPREAD = Number(args.spread);
const LEAD = Number(args.lead);
const BATCH = Number(args.batch);
const selected = args.profiles.split(",").map((p) => p.trim()) as ProfileKey[];
for (const p of selected) if (!(p in PROFILES)) throw new Error(`unknown profile ${p} (a, b or c)`);
const full = selected.join(",") === "a,b,c" && JOBS === 1000 && SPREAD === 20000 && LEAD === 5000;
const root = join(import.meta.dirname, "..");
const keys = new Keys("dl:{main}");
const log = (line: string) => console.error(`[bench:lateness] ${line}`);

async function tickStatus(redis: IORedis) {
  const raw = await redis.get(keys.tickStatus);
  return raw === null
    ? null
    : (JSON.parse(raw) as { startedAt: number; updatedAt: number; asleep: boolean; ended: string | null; subrequests: number; budget: number });
}

/** What the Worker logged during the run, summed up: rounds, invocations that ended and why, handovers, fan-out, failures. */
function tickSummary(lines: LoggedLine[]) {
  const rounds = lines.filter((l) => l.msg === "tick round");
  const ended = lines.filter((l) => l.msg === "tick ended");
  const byReason: Record<string, number> = {};
  for (const l of ended) byReason[String(l.ended)] = (byReason[String(l.ended)] ?? 0) + 1;
  return {
    rounds: rounds.length,
    roundsClaimed: rounds.reduce((n, l) => n + Number(l.claimed ?? 0), 0),
    fannedOutChunks: rounds.reduce((n, l) => n + Number(l.fannedOut ?? 0), 0),
    loopsEnded: byReason,
    handedOver: ended.filter((l) => l.handedOver === true).length,
    // A successor (handover, next cron) numbers its rounds from 1 again; its "tick ended" line comes only when its window ends.
    loopsSeen: rounds.reduce((n, l, i) => n + (i === 0 || Number(l.round) < Number(rounds[i - 1]!.round) ? 1 : 0), 0),
    jobFailures: lines.filter((l) => l.msg === "job failed").length,
    otherWarnings: lines.filter((l) => !["tick round", "tick ended", "job failed"].includes(l.msg)).map((l) => l.msg),
  };
}

async function runProfile(key: ProfileKey) {
  const profile = PROFILES[key];
  const receiver = await startReceiver();
  const stack = await startNpmStart({ name: `lateness-${key}`, settings: profile.settings, countRequests: true });
  const redis = new IORedis({ port: stack.redisPort, host: "127.0.0.1", maxRetriesPerRequest: null, lazyConnect: true });
  try {
    await redis.connect();
    log(`${key} (${profile.name}): stack up on :${stack.port}; waiting for the tick to report itself asleep`);
    let status = await tickStatus(redis);
    const settleDeadline = Date.now() + 60_000;
    while (!(status?.asleep && status.ended === null) && Date.now() < settleDeadline) {
      await sleep(250);
      status = await tickStatus(redis);
    }
    const asleepAtEnqueue = (await redis.exists(keys.tickAsleep)) === 1;
    const loadBefore = machine().loadavg;

    // Jobs due evenly over the spread, the first LEAD ms from now, stored up front in batches.
    const enqueueStarted = Date.now();
    const start = enqueueStarted + LEAD;
    const due = new Map<string, number>();
    for (let i = 0; i < JOBS; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, JOBS - i) }, (_, j) => ({
        topic: "lateness",
        runAt: start + Math.floor(((i + j) * SPREAD) / JOBS),
        payload: { i: i + j },
        target: { url: receiver.url },
      }));
      for (const r of await stack.client.jobs.enqueueBatch(batch)) due.set(r.id, Date.parse(r.dueAt!));
    }
    const enqueueMs = Date.now() - enqueueStarted;
    log(`${key}: ${due.size} jobs stored in ${enqueueMs} ms (tick asleep: ${asleepAtEnqueue}); first due in ${start - Date.now()} ms`);

    // Every delivery, bounded; then a few seconds more for duplicates.
    const deadline = start + SPREAD + 60_000;
    const delivered = () => [...receiver.arrivals.keys()].filter((id) => due.has(id)).length;
    while (Date.now() < deadline && delivered() < JOBS) await sleep(200);
    await sleep(3_000);
    const loadAfter = machine().loadavg;
    const requests = (await stack.bridgeRequests()).filter(([at]) => at >= enqueueStarted);

    const lateness: number[] = [];
    const samples: Array<{ dueAt: number; lateMs: number }> = [];
    let early = 0;
    let duplicates = 0;
    for (const [id, times] of receiver.arrivals) {
      const d = due.get(id);
      if (d === undefined) continue;
      duplicates += times.length - 1;
      const l = times[0]! - d;
      if (l < 0) early++;
      lateness.push(l);
      samples.push({ dueAt: d, lateMs: l });
    }
    const stats = summarize(lateness);
    // Lateness by the second the jobs were due in: where in the 20 s the tail came from.
    const bySecond: Array<{ second: number; n: number; p50: number; max: number }> = [];
    for (let s = 0; s * 1000 < SPREAD; s++) {
      const inSecond = samples.filter((x) => x.dueAt - start >= s * 1000 && x.dueAt - start < (s + 1) * 1000).map((x) => x.lateMs);
      const st = summarize(inSecond);
      bySecond.push({ second: s, n: st.n, p50: st.p50, max: st.max });
    }
    // Per second since the enqueue started: deliveries the receiver saw and REST requests the bridge served.
    const timeline: Array<{ second: number; delivered: number; bridgeRequests: number }> = [];
    const firstArrivals = [...receiver.arrivals.entries()].filter(([id]) => due.has(id)).map(([, t]) => t[0]!);
    const lastAt = Math.max(enqueueStarted, ...firstArrivals, ...requests.map(([at]) => at));
    for (let s = 0; enqueueStarted + s * 1000 <= lastAt; s++) {
      const inS = (at: number) => at >= enqueueStarted + s * 1000 && at < enqueueStarted + (s + 1) * 1000;
      timeline.push({ second: s, delivered: firstArrivals.filter(inS).length, bridgeRequests: requests.filter(([at]) => inS(at)).length });
    }
    const missing = JOBS - delivered();
    const allOnce = missing === 0 && duplicates === 0 && due.size === JOBS;
    const p99Met = profile.p99Target === null ? null : stats.p99 <= profile.p99Target;
    const result = {
      profile: key,
      name: profile.name,
      settings: profile.settings,
      tickPollMs: profile.pollMs,
      asleepAtEnqueue,
      enqueueMs,
      load: { before: loadBefore, after: loadAfter },
      jobs: JOBS,
      delivered: delivered(),
      missing,
      duplicates,
      early,
      latenessMs: stats,
      bySecond,
      timeline,
      /** Per job: [due − first due, lateness] ms, in due order. */
      samples: samples.sort((x, y) => x.dueAt - y.dueAt).map((x) => [x.dueAt - start, x.lateMs]),
      tick: tickSummary(stack.lines.filter((l) => l.at >= enqueueStarted)),
      target: {
        allOnce,
        noneEarly: early === 0,
        p99MaxMs: profile.p99Target,
        p99Met,
        met: allOnce && early === 0 && p99Met !== false,
      },
      logFile: stack.logFile.slice(root.length + 1),
    };
    log(
      `${key}: delivered ${result.delivered}, missing ${missing}, dup ${duplicates}, early ${early}, p50 ${stats.p50} p95 ${stats.p95} p99 ${stats.p99} max ${stats.max} ms`,
    );
    return result;
  } finally {
    redis.disconnect();
    await stack.stop();
    await receiver.close();
  }
}

const startedAt = new Date();
const results: Array<Awaited<ReturnType<typeof runProfile>>> = [];
for (const key of selected) results.push(await runProfile(key));
const m = machine();
const out = {
  benchmark: "http delivery lateness through npm start, by deployment profile",
  date: startedAt.toISOString(),
  durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
  machine: m,
  settings: { jobs: JOBS, spreadMs: SPREAD, leadMs: LEAD, batch: BATCH, topic: "defaults (no PUT): target.url per job" },
  profiles: results,
  met: results.every((r) => r.target.met),
};
console.log(JSON.stringify(out, null, 2));

const fmtLoad = (l: { "1m": number; "5m": number; "15m": number }) => `${l["1m"]} / ${l["5m"]} / ${l["15m"]}`;
const md =
  `# http delivery lateness through \`npm start\`, by profile\n\n` +
  `${out.date}, ${m.cpus} × ${m.model}, Node ${m.node}; ${out.durationS} s in all. ` +
  `Machine load (1 / 5 / 15 min averages) at the end: ${fmtLoad(m.loadavg)}.\n\n` +
  `Per profile, on a fresh \`npm start\` (the Worker of wrangler.toml, its own redis-server and bridge) once the tick reported itself asleep: ` +
  `${JOBS} http jobs due evenly over ${SPREAD / 1000} s, the first ${LEAD / 1000} s after the enqueue started, stored up front with ` +
  `\`POST /v1/jobs/batch\` (${BATCH} per call) on a topic with default settings, each with \`target.url\` = a loopback receiver. ` +
  `Lateness = when the receiver saw the request − the job's \`dueAt\`.\n\n` +
  `| profile | settings | delivered | missing | duplicates | early | p50 | p95 | p99 | max | target | |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n` +
  results
    .map(
      (r) =>
        `| ${r.profile}: ${r.name} | ${
          Object.entries(r.settings)
            .map(([k, v]) => `\`${k}=${v}\``)
            .join(", ") || "defaults"
        } | ${r.delivered} | ${r.missing} | ${r.duplicates} | ${r.early} | ` +
        `${r.latenessMs.p50} ms | ${r.latenessMs.p95} ms | ${r.latenessMs.p99} ms | ${r.latenessMs.max} ms | ` +
        `all once, none early${r.target.p99MaxMs === null ? "" : `, p99 ≤ ${r.target.p99MaxMs} ms`} | **${r.target.met ? "met" : "missed"}** |`,
    )
    .join("\n") +
  `\n\n| profile | load before → after | tick asleep at enqueue | enqueue | tick rounds with work | loops seen working | loops ended (why) | fanned-out chunks | failed attempts |\n|---|---|---|---|---|---|---|---|---|\n` +
  results
    .map(
      (r) =>
        `| ${r.profile} | ${fmtLoad(r.load.before)} → ${fmtLoad(r.load.after)} | ${r.asleepAtEnqueue} | ${r.enqueueMs} ms | ${r.tick.rounds} | ` +
        `${r.tick.loopsSeen} | ${
          Object.entries(r.tick.loopsEnded)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ") || "—"
        } | ${r.tick.fannedOutChunks} | ${r.tick.jobFailures} |`,
    )
    .join("\n") +
  `\n\nLateness by the second the jobs were due in (p50 / max, ms):\n\n| s | ${results.map((r) => r.profile).join(" | ")} |\n|---|${results.map(() => "---").join("|")}|\n` +
  Array.from(
    { length: Math.ceil(SPREAD / 1000) },
    (_, s) => `| ${s} | ${results.map((r) => `${r.bySecond[s]!.p50} / ${r.bySecond[s]!.max}`).join(" | ")} |`,
  ).join("\n") +
  `\n\nTimeline: per second since the enqueue started, deliveries the receiver saw / REST requests the bridge served ` +
  `(jobs fall due from second ${Math.floor(LEAD / 1000)} to ${Math.ceil((LEAD + SPREAD) / 1000)}):\n\n| s | ${results.map((r) => r.profile).join(" | ")} |\n|---|${results.map(() => "---").join("|")}|\n` +
  Array.from(
    { length: Math.max(...results.map((r) => r.timeline.length)) },
    (_, s) => `| ${s} | ${results.map((r) => (r.timeline[s] ? `${r.timeline[s]!.delivered} / ${r.timeline[s]!.bridgeRequests}` : "")).join(" | ")} |`,
  ).join("\n") +
  `\n`;
const dir = full ? join(root, "bench/results") : join(root, "bench/results/tmp");
// One line per [due, lateness] sample.
writeFileSync(join(dir, "lateness-http.json"), `${JSON.stringify(out, null, 2).replace(/\[\s+(-?\d+),\s+(-?\d+)\s+\]/g, "[$1, $2]")}\n`);
writeFileSync(join(dir, "lateness-http.md"), md);
log(`wrote ${join(dir, "lateness-http.{json,md}")}`);
if (!out.met) process.exitCode = 1;
