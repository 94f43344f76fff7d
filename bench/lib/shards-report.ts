/**
 * The shards benchmark's results in markdown: its targets (issue 35), its
 * rows of the main table in latest.md, and the sections of shards.md.
 */
import { summarize } from "../stats.js";
import type { Lateness } from "./shard-spans.js";
import type { IdleConfig, ShardsIdleResult } from "./shards-idle.js";
import type { Probe } from "./shards-outage.js";
import type { ScaleWindow, ShardsScaleResult } from "./shards-scale.js";

/** Issue 35's goals for the shards rows. */
const SHARDS_TARGETS = {
  deliveredRatio: 2.7,
  extraP99Ms: 100,
  commandsPerJobSpread: 0.05,
  shareSpread: 0.15,
  statsWithinMs: 2_000,
  idleCommands: 5,
  idleRequests: 2,
  sleepingP99Ms: 100,
} as const;

export interface Target {
  name: string;
  value: string;
  met: boolean | undefined;
}

const fixed = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "—");
const whole = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "—");
const pct = (n: number) => `${n >= 0 ? "+" : ""}${(n * 100).toFixed(1)} %`;
const share = (n: number) => `${(n * 100).toFixed(1)} %`;
const verdict = (ok: boolean | undefined) => (ok === undefined ? "—" : ok ? "**met**" : "**missed**");
const late = (l: Lateness | undefined) => (l ? `${whole(l.p50)} / ${whole(l.p99)} / ${whole(l.max)}` : "—");

/** Each shard of the 3-shard window: its share of commands ÷ its share of jobs, − 1. */
function shareSpreads(w: ScaleWindow): Array<{ shard: string; jobs: number; commands: number; spread: number }> {
  const jobs = w.perShard.reduce((n, s) => n + s.delivered, 0);
  const commands = w.perShard.reduce((n, s) => n + s.commands, 0);
  return w.perShard.map((s) => ({
    shard: s.shard,
    jobs: s.delivered / jobs,
    commands: s.commands / commands,
    spread: s.commands / commands / (s.delivered / jobs) - 1,
  }));
}

/** What `/v1/stats` answered while the shard was down, against the shape asked for (`partial: true`, `missingShards` naming it). */
function statsVerdict(probes: Probe[], victim: string): { value: string; met: boolean } {
  const stats = probes.filter((p) => p.path === "/v1/stats");
  if (stats.length === 0) return { value: "not asked", met: false };
  const ok = (p: Probe) =>
    p.status === 200 && p.ms <= SHARDS_TARGETS.statsWithinMs && p.partial === true && Array.isArray(p.missingShards) && p.missingShards.includes(victim);
  const built = stats.some((p) => p.partial !== undefined || p.missingShards !== undefined);
  const each = stats
    .map(
      (p) =>
        `${p.status || "no answer"} in ${p.ms} ms at ${p.atS} s, partial ${JSON.stringify(p.partial) ?? "absent"}, missingShards ${JSON.stringify(p.missingShards) ?? "absent"}`,
    )
    .join("; ");
  return { value: `${each}${built ? "" : " (the answer has no partial / missingShards: not built on this commit)"}`, met: stats.every(ok) };
}

/** The sleeping shards' jobs of both deployments, by delay: lateness of their first attempts. */
function sleepingByDelay(idle: ShardsIdleResult): Array<{ delayMs: number; lateness: Lateness; undelivered: number }> {
  const all = idle.configs.flatMap((c) => c.sleeping);
  return [...new Set(all.map((j) => j.delayMs))].map((delayMs) => {
    const jobs = all.filter((j) => j.delayMs === delayMs);
    const lates = jobs.flatMap((j) => (j.lateMs === null ? [] : [j.lateMs]));
    const s = summarize(lates);
    return {
      delayMs,
      lateness: { n: s.n, p50: s.p50, p99: s.p99, max: s.max, early: lates.filter((l) => l < 0).length },
      undelivered: jobs.length - lates.length,
    };
  });
}

/** Per shard per idle minute, over both deployments: the most and the mean of each count. */
function idleSummary(idle: ShardsIdleResult) {
  const ms = idle.configs.flatMap((c) => c.minutes);
  const of = (pick: (m: IdleConfig["minutes"][number]) => number) => ({
    max: Math.max(...ms.map(pick)),
    mean: ms.reduce((n, m) => n + pick(m), 0) / Math.max(1, ms.length),
  });
  const quiet = ms.filter((m) => m.loops === 0);
  return {
    n: ms.length,
    commands: of((m) => m.commands),
    requests: of((m) => m.requests),
    durableObjects: of((m) => m.durableObjectRequests),
    withLoop: ms.length - quiet.length,
    quiet: {
      n: quiet.length,
      commands: Math.max(0, ...quiet.map((m) => m.commands)),
      requests: Math.max(0, ...quiet.map((m) => m.requests)),
      durableObjects: Math.max(0, ...quiet.map((m) => m.durableObjectRequests)),
    },
  };
}

export function shardsTargets(scale: ShardsScaleResult | undefined, idle: ShardsIdleResult | undefined): Target[] {
  const T = SHARDS_TARGETS;
  const out: Target[] = [];
  if (scale) {
    const { one, three } = scale;
    const ratio = three.deliveredPerSec / one.deliveredPerSec;
    out.push({
      name: `shards: delivered jobs/s, 3 shards ≥ ${T.deliveredRatio}× 1`,
      value: `${whole(three.deliveredPerSec)} vs ${whole(one.deliveredPerSec)} = ${fixed(ratio)}×`,
      met: ratio >= T.deliveredRatio,
    });
    out.push({
      name: `shards: lateness p99, 3 shards ≤ 1 shard + ${T.extraP99Ms} ms`,
      value: `${whole(three.lateness.p99)} vs ${whole(one.lateness.p99)} ms`,
      met: three.lateness.p99 <= one.lateness.p99 + T.extraP99Ms,
    });
    const spread = three.commandsPerJob / one.commandsPerJob - 1;
    out.push({
      name: `shards: Redis commands per job, 3 shards within ${T.commandsPerJobSpread * 100} % of 1`,
      value: `${fixed(three.commandsPerJob)} vs ${fixed(one.commandsPerJob)} (${pct(spread)})`,
      met: Math.abs(spread) <= T.commandsPerJobSpread,
    });
    const shares = shareSpreads(three);
    out.push({
      name: `shards: each shard's share of commands within ± ${T.shareSpread * 100} % of its share of jobs`,
      value: shares.map((s) => `${s.shard} ${pct(s.spread)}`).join(", "),
      met: shares.every((s) => Math.abs(s.spread) <= T.shareSpread),
    });
  }
  const o = scale?.outage;
  if (o) {
    const liveErrors = Object.values(o.liveErrorLines).reduce((n, c) => n + c, 0);
    out.push({
      name: `shard ${o.victim} down: the other shards' errors = 0`,
      value: `${o.liveEnqueueFailures} failed enqueues, ${liveErrors} error lines, ${o.during.n} of their jobs due meanwhile delivered`,
      met: o.liveEnqueueFailures === 0 && liveErrors === 0,
    });
    out.push({
      name: `shard ${o.victim} down: the other shards' lateness p99 ≤ no-kill + ${T.extraP99Ms} ms`,
      value: `${whole(o.during.p99)} vs ${whole(o.reference.p99)} ms`,
      met: o.during.p99 <= o.reference.p99 + T.extraP99Ms,
    });
    const answered = Object.entries(o.victimWhileDown);
    out.push({
      name: `shard ${o.victim} down: its topics' enqueues answer 503, none acknowledged`,
      value: `${answered.map(([s, n]) => `${n} × ${s}`).join(", ") || "none sent"}; ${o.victimAcknowledgedWhileDown} acknowledged`,
      met: answered.length > 0 && answered.every(([s]) => s === "503") && o.victimAcknowledgedWhileDown === 0,
    });
    out.push({
      name: `shard ${o.victim} back: delivered = acknowledged, duplicates only with attempt > 1`,
      value: `${whole(o.acknowledged)} acknowledged, ${o.missing} never delivered, ${o.deliveredUnacknowledged} delivered unacknowledged; ${o.duplicates} duplicates, ${o.duplicatesSameAttempt} repeating an attempt`,
      met: o.missing === 0 && o.duplicatesSameAttempt === 0,
    });
    const stats = statsVerdict(o.probes, o.victim);
    out.push({
      name: `shard ${o.victim} down: /v1/stats answers 200 within 2 s with partial: true and missingShards naming it`,
      value: stats.value,
      met: stats.met,
    });
  }
  if (idle) {
    const s = idleSummary(idle);
    out.push({
      name: `idle: per shard per minute ≤ ${T.idleCommands} commands, ≤ ${T.idleRequests} requests, 0 Durable Object requests`,
      value: `most ${s.commands.max} / ${s.requests.max} / ${s.durableObjects.max} over ${s.n} shard-minutes; in the ${s.quiet.n} without a loop (the cron only looked) ${s.quiet.commands} / ${s.quiet.requests} / ${s.quiet.durableObjects}, in the ${s.withLoop} with one (a topic's sweep) the rest`,
      met: s.commands.max <= T.idleCommands && s.requests.max <= T.idleRequests && s.durableObjects.max === 0,
    });
    for (const d of sleepingByDelay(idle)) {
      out.push({
        name: `jobs due ${d.delayMs / 1_000} s after enqueue into a sleeping shard: lateness p99 ≤ ${T.sleepingP99Ms} ms`,
        value: `${whole(d.lateness.p99)} ms (n = ${d.lateness.n}, ${d.lateness.early} early, ${d.undelivered} not delivered)`,
        met: d.lateness.p99 <= T.sleepingP99Ms && d.lateness.early === 0 && d.undelivered === 0,
      });
    }
  }
  return out;
}

/** The shards rows of latest.md's main table (delayline's column; the peers have no shards). */
export function shardsRows(scale: ShardsScaleResult | undefined, idle: ShardsIdleResult | undefined): string[] {
  const t = shardsTargets(scale, idle);
  const met = (prefix: string) => verdict(t.find((x) => x.name.startsWith(prefix))?.met);
  const rows: string[] = [];
  const row = (label: string, value: string, target = "", verdictCell = "") => rows.push(`| ${label} | ${value} | — | — | — | | ${target} | ${verdictCell} |`);
  if (scale) {
    const { one, three } = scale;
    row(
      `**shards: delivered jobs/s, 3 shards vs 1** (each shard its own redis-server behind a bridge capped at ${scale.sizes.commandsPerSecond} commands/s; [shards.md](shards.md))`,
      `${whole(three.deliveredPerSec)} vs ${whole(one.deliveredPerSec)} = ${fixed(three.deliveredPerSec / one.deliveredPerSec)}×`,
      `≥ ${SHARDS_TARGETS.deliveredRatio}×`,
      met("shards: delivered"),
    );
    row(
      "… lateness p50 / p99 / max, ms, 3 shards vs 1",
      `${late(three.lateness)} vs ${late(one.lateness)}`,
      `p99 ≤ 1 shard's + ${SHARDS_TARGETS.extraP99Ms}`,
      met("shards: lateness"),
    );
    row(
      "… Redis commands per job, 3 shards vs 1",
      `${fixed(three.commandsPerJob)} vs ${fixed(one.commandsPerJob)}`,
      `within ${SHARDS_TARGETS.commandsPerJobSpread * 100} %`,
      met("shards: Redis"),
    );
    row(
      "… each shard's share of commands ÷ its share of jobs, − 1",
      shareSpreads(three)
        .map((s) => `${s.shard} ${pct(s.spread)}`)
        .join(", "),
      `± ${SHARDS_TARGETS.shareSpread * 100} %`,
      met("shards: each"),
    );
  }
  const o = scale?.outage;
  if (o) {
    row(
      `**one shard down ${Math.round(o.downMs / 1_000)} s under load** (3 shards): the other shards' lateness p99 vs the no-kill window, ms`,
      `${whole(o.during.p99)} vs ${whole(o.reference.p99)}; ${o.liveEnqueueFailures} failed enqueues`,
      `≤ no-kill + ${SHARDS_TARGETS.extraP99Ms}, 0 errors`,
      `${met(`shard ${o.victim} down: the other shards' lateness`)} ${met(`shard ${o.victim} down: the other shards' errors`)}`,
    );
    row(
      "… enqueues to the down shard's topics; then acknowledged / never delivered / duplicates (repeating an attempt)",
      `${Object.entries(o.victimWhileDown)
        .map(([s, n]) => `${n} × ${s}`)
        .join(", ")}, ${o.victimAcknowledgedWhileDown} acknowledged; ${whole(o.acknowledged)} / ${o.missing} / ${o.duplicates} (${o.duplicatesSameAttempt})`,
      "503, none acknowledged; 0 lost",
      `${met(`shard ${o.victim} down: its topics`)} ${met(`shard ${o.victim} back`)}`,
    );
    const stats = o.probes.filter((p) => p.path === "/v1/stats");
    row(
      "… `/v1/stats` while it is down",
      stats.map((p) => `${p.status || "no answer"} in ${p.ms} ms, partial ${JSON.stringify(p.partial) ?? "absent"}`).join("; "),
      "200 ≤ 2 s, partial: true",
      met(`shard ${o.victim} down: /v1/stats`),
    );
  }
  if (idle) {
    const s = idleSummary(idle);
    row(
      "**idle shards** (1 and 3, `npm start` defaults): per shard per minute, Redis commands / REST requests / Durable Object requests: most (mean); most in the minutes whose cron only looked",
      `${s.commands.max} / ${s.requests.max} / ${s.durableObjects.max} (${fixed(s.commands.mean)} / ${fixed(s.requests.mean)} / ${fixed(s.durableObjects.mean)}); ${s.quiet.commands} / ${s.quiet.requests} / ${s.quiet.durableObjects} (${s.quiet.n} of ${s.n} shard-minutes)`,
      `≤ ${SHARDS_TARGETS.idleCommands} / ≤ ${SHARDS_TARGETS.idleRequests} / 0`,
      met("idle:"),
    );
    for (const d of sleepingByDelay(idle)) {
      row(
        `… jobs due ${d.delayMs / 1_000} s after enqueue into a sleeping shard: lateness p50 / p99 / max, ms (n)`,
        `${late(d.lateness)} (${d.lateness.n})`,
        `p99 ≤ ${SHARDS_TARGETS.sleepingP99Ms}`,
        met(`jobs due ${d.delayMs / 1_000} s`),
      );
    }
  }
  return rows;
}

function windowRows(w: ScaleWindow): string[] {
  const jobs = w.perShard.reduce((n, s) => n + s.delivered, 0);
  const commands = w.perShard.reduce((n, s) => n + s.commands, 0);
  return w.perShard.map((s) => {
    const perJob = (name: string) => fixed((s.byCommand[name] ?? 0) / Math.max(1, s.delivered));
    return `| ${w.shards} | ${s.shard} | ${fixed(s.delivered / (w.ms / 1_000), 1)} | ${share(s.delivered / jobs)} | ${share(s.commands / commands)} | ${fixed(s.commands / Math.max(1, s.delivered))} | ${fixed(s.requests / Math.max(1, s.delivered))} | ${perJob("get")} / ${perJob("evalsha")} | ${s.claimingRounds > 0 ? fixed(s.claimedInRounds / s.claimingRounds, 1) : "—"} | ${late(s.lateness)} | ${whole(s.bridgeCommandsPerSec)} |`;
  });
}

function scaleSection(scale: ShardsScaleResult): string[] {
  const { one, three, sizes } = scale;
  const side = (label: string, a: (w: ScaleWindow) => string) => `| ${label} | ${a(one)} | ${a(three)} |`;
  return [
    `## One shard vs three`,
    ``,
    `Each shard is a redis-server of its own behind a REST bridge of its own capped at **${sizes.commandsPerSecond} commands/s** (\`BRIDGE_COMMANDS_PER_SECOND\`'s limit, dev/bridge/limits.ts; a script counts one, as the bridge meters it). Why: at Upstash's 10,000/s the two shared cores would bind long before a shard's database does (the Worker's one workerd thread, the bridges, the producers), and a second and third shard would add nothing but load on the same machine; at ${sizes.commandsPerSecond}/s one shard saturates its database at a few dozen jobs a second, where workerd uses a fraction of one core (CPU below), so three shards are still bound by their databases. Both deployments run as \`npm start\` runs them (bench Worker, defaults), with the same ${sizes.producersPerTopic} producers on each of ${sizes.topicsPerShard} topics per shard (the 1-shard run's topics are main's in the 3-shard placement), each one \`POST /v1/jobs\` at a time, due ${sizes.delayMs / 1_000} s later: more than a shard admits (its bridge runs at its cap, last column). Window: ${sizes.windowS} s once every shard's loop ran and at least ${sizes.warmS} s of load had passed. Lateness: first attempts due in the window, the handler's time − due.`,
    ``,
    `| | 1 shard | 3 shards |`,
    `|---|---|---|`,
    side("delivered jobs/s", (w) => whole(w.deliveredPerSec)),
    side("acknowledged enqueues/s (failed)", (w) => `${whole(w.enqueuedPerSec)} (${w.enqueueFailures})`),
    side("lateness p50 / p99 / max, ms (n)", (w) => `${late(w.lateness)} (${whole(w.lateness.n)})`),
    side("Redis commands per job (billed: scripts' own included)", (w) => fixed(w.commandsPerJob)),
    side("REST requests per job", (w) => fixed(w.requestsPerJob)),
    side(
      "CPU, % of one core: workerd / this process (bridges, producers) / redis-servers",
      (w) => `${whole(w.cpu.workerd)} / ${whole(w.cpu.bench)} / ${whole(w.cpu.redis)}`,
    ),
    side("load average (1 min) at the window's end; warm-up", (w) => `${fixed(w.load)}; ${whole(w.warmedMs / 1_000)} s`),
    ``,
    `Per shard (GET and EVALSHA per job: the sleep mark's reads and the scripts; jobs per claim: the tick's rounds that claimed, from its log lines; bridge commands/s: what each bridge was sent, those waiting for the cap included, so a little over it where the queue grew):`,
    ``,
    `| shards | shard | delivered/s | share of jobs | share of commands | commands / job | requests / job | GET / EVALSHA per job | jobs per claim | lateness p50 / p99 / max, ms | bridge commands/s sent |`,
    `|---|---|---|---|---|---|---|---|---|---|---|`,
    ...windowRows(one),
    ...windowRows(three),
    ``,
  ];
}

const statusCounts = (r: Record<string, number>) =>
  Object.entries(r)
    .map(([s, n]) => `${n} × ${s === "0" ? "no answer" : s}`)
    .join(", ") || "none";
const lineCounts = (r: Record<string, number>) =>
  Object.entries(r)
    .map(([m, n]) => `${n} × "${m}"`)
    .join(", ") || "none";

function outageSection(scale: ShardsScaleResult): string[] {
  const o = scale.outage!;
  const s = scale.sizes.outage;
  return [
    `## One shard down under load`,
    ``,
    `On the 3-shard stack right after its window, the producers still running: shard ${o.victim}'s redis-server stopped (SIGTERM: Redis writes its append-only file out) for ${Math.round(o.downMs / 1_000)} s, then started on the same port and file; its bridge stayed up and answered 503. ${s.recoverS} s more of load after it came back, then the producers stopped and the run waited for every acknowledged job. The reference is the window above (no shard down), on the same stack and load.`,
    ``,
    `| | |`,
    `|---|---|`,
    `| the other shards (${o.live.join(", ")}): lateness p50 / p99 / max, ms, while ${o.victim} was down vs the no-kill window (n) | ${late(o.during)} (${whole(o.during.n)}) vs ${late(o.reference)} (${whole(o.reference.n)}) |`,
    `| … their enqueues that failed; the Worker's error and warning lines naming them | ${o.liveEnqueueFailures}; ${lineCounts(o.liveErrorLines)} |`,
    `| enqueues to ${o.victim}'s topics sent and answered while it was down | ${statusCounts(o.victimWhileDown)}; ${o.victimAcknowledgedWhileDown} acknowledged |`,
    `| … in flight when it stopped | ${statusCounts(o.victimInFlightAtStop)} |`,
    `| the Worker's error and warning lines naming ${o.victim} | ${lineCounts(o.victimErrorLines)} |`,
    `| ${o.victim}'s first delivery after it came back; the latest of its jobs due while it was down, ms | ${o.victimResumedAfterMs === null ? "none" : whole(o.victimResumedAfterMs)}; ${whole(o.victimMaxLateMs)} late |`,
    `| every job acknowledged since the load began: delivered / never delivered / delivered without an acknowledgment | ${whole(o.acknowledged)}: ${whole(o.deliveredIds - o.deliveredUnacknowledged)} / ${o.missing}${o.missingIds.length ? ` (${o.missingIds.join(", ")})` : ""} / ${o.deliveredUnacknowledged} |`,
    `| deliveries past a job's first (and of those, repeating an attempt already delivered) | ${o.duplicates} (${o.duplicatesSameAttempt}) |`,
    `| from the producers' stop until every acknowledged job was delivered | ${o.settledMs === null ? "not within 180 s" : `${whole(o.settledMs)} ms`} |`,
    ``,
    `Reads across shards while ${o.victim} was down (each asked with a 2 s timeout):`,
    ``,
    `| path | seconds into the outage | status | ms | \`partial\` | \`missingShards\` | \`delayline_shard_up\` |`,
    `|---|---|---|---|---|---|---|`,
    ...o.probes.map(
      (p) =>
        `| \`${p.path}\` | ${p.atS} | ${p.status || "no answer"} | ${p.ms} | ${p.path === "/metrics" ? "" : (JSON.stringify(p.partial) ?? "absent")} | ${p.path === "/metrics" ? "" : (JSON.stringify(p.missingShards) ?? "absent")} | ${p.path === "/metrics" ? p.shardUp?.join("<br>") || "absent" : ""} |`,
    ),
    ``,
  ];
}

/** When a minute's requests came: each, or for many the first and the last. */
const requestTimes = (ts: Array<[number, string]>) => (ts.length <= 4 ? ts.map(([s]) => `${s} s`).join(", ") : `${ts[0]![0]}–${ts.at(-1)![0]} s`);

function idleSection(idle: ShardsIdleResult): string[] {
  const z = idle.sizes;
  const cmds = (r: Record<string, number>) =>
    Object.entries(r)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  return [
    `## Idle shards`,
    ``,
    `Two stacks side by side, 1 shard and 3 (each shard its own redis-server and bridge at Upstash's limits), through \`npm start\` as a user runs it: the bench Worker at its defaults, with the wake alarm. ${z.trafficS} s of traffic (10 jobs a second per shard, due a second later), then until every shard's sleep mark read "c" (its loop ended idle), then ${z.minutes} minutes from :${z.phaseS} (each holds one cron). Commands: INFO commandstats per redis-server (scripts' own included; INFO, CONFIG and the bridge's MEMORY USAGE left out; nothing else touched Redis). Requests: what each bridge answered. Durable Object requests: what the bench Worker's wake alarm received (each arm and each alarm), by shard.`,
    ``,
    `From the traffic's last delivery until the first idle minute began (the loops ended idle first; the bench's own reads of the sleep mark meanwhile are left out):`,
    ``,
    `| shards | shard | seconds | commands | requests | Durable Object requests | loops ended |`,
    `|---|---|---|---|---|---|---|`,
    ...idle.configs.flatMap((c) =>
      c.settling.map((s) => `| ${c.shards} | ${s.shard} | ${whole(s.ms / 1_000)} | ${s.commands} | ${s.requests} | ${s.durableObjectRequests} | ${s.loops} |`),
    ),
    ``,
    `Each idle minute (a topic's index entry falls due again about a minute after its last delivery, for the sweep of its finished jobs, and the cron's look before it runs a loop for it: the minutes with a loop ended show what that costs):`,
    ``,
    `| shards | shard | minute | commands | requests (seconds into the minute) | Durable Object requests | loops ended / crons that only looked | by command |`,
    `|---|---|---|---|---|---|---|---|`,
    ...idle.configs.flatMap((c) =>
      c.minutes.map(
        (m) =>
          `| ${c.shards} | ${m.shard} | ${m.minute} | ${m.commands} | ${m.requests} (${requestTimes(m.requestTimes)}) | ${m.durableObjectRequests} | ${m.loops} / ${m.looks} | ${cmds(m.byCommand)} |`,
      ),
    ),
    ``,
    `Jobs into sleeping shards: each enqueued only once a GET of its shard's sleep mark read "c", every ${(0.5 * z.everyMs) / 1_000}–${(1.5 * z.everyMs) / 1_000} s one on each of its ${z.topicsPerShard} topics, until a phase had its jobs per shard (or its time was up): due ${z.laterDelayMs / 1_000} s later while that falls before the next cron's look (the wake alarm carries them; ${z.alarm.jobs} per shard, at most ${z.alarm.maxS} s), then while it falls after it (the next cron's loop; ${z.cron.jobs}, ${z.cron.maxS} s), then due ${z.soonDelayMs / 1_000} s later (a producer's drain, or the cron's loop when a minute begins before they are due; ${z.soon.jobs}, ${z.soon.maxS} s). A delivery's topic is looked at again about a minute later (its sweep), which keeps its shard awake for most of that minute: phases wait for that. Lateness: the handler's time − due, first attempts.`,
    ``,
    `| shards | carrier | n | lateness p50 / p99 / max, ms | early | more than one delivery |`,
    `|---|---|---|---|---|---|`,
    ...idle.configs.flatMap((c) =>
      Object.entries(c.latenessByCarrier).map(
        ([carrier, l]) =>
          `| ${c.shards} | ${carrier} | ${l.n} | ${late(l)} | ${l.early} | ${c.sleeping.filter((j) => j.carrier === carrier && j.deliveries > 1).length} |`,
      ),
    ),
    ``,
    `Durable Object requests per job the wake alarm carried: ${idle.configs.map((c) => `${c.shards} shard${c.shards > 1 ? "s" : ""} ${fixed(c.durableObjectRequestsPerAlarmJob)}`).join(", ")} (the first job of a wake arms it; later ones due after that alarm need none).`,
    ``,
  ];
}

/** The sections of shards.md (and their place in latest.md's run). */
function shardsSections(scale: ShardsScaleResult | undefined, idle: ShardsIdleResult | undefined): string[] {
  return [...(scale ? scaleSection(scale) : []), ...(scale?.outage ? outageSection(scale) : []), ...(idle ? idleSection(idle) : [])];
}

/** Everything one run of the shards benchmark measured (bench/lib/shards.ts). */
export interface ShardsResults {
  date: string;
  mode: "quick" | "full";
  durationS: number;
  machine: { cpus: number; model: string; node: string };
  /** The machine's 1-minute load average every 10 s: [seconds into the run, load]. */
  load: Array<[number, number]>;
  scale?: ShardsScaleResult;
  idle?: ShardsIdleResult;
  failures: string[];
}

export function renderShardsMarkdown(r: ShardsResults): string {
  const loads = r.load.map(([, l]) => l);
  return [
    `# Shards: one against three, one down, idle`,
    ``,
    `${r.mode === "quick" ? "**Quick (smoke) run: small sizes, not the numbers to quote.** " : ""}${r.date}, ${r.durationS < 120 ? `${r.durationS} s` : `${Math.floor(r.durationS / 60)} min ${r.durationS % 60} s`}. Machine: ${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}${loads.length ? `; load average (1 min) while it ran ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} (the machine is shared: times are noisy, ratios within one run are what count)` : ""}.`,
    ``,
    `| target (issue 35) | measured | met? |`,
    `|---|---|---|`,
    ...shardsTargets(r.scale, r.idle).map((t) => `| ${t.name} | ${t.value} | ${verdict(t.met)} |`),
    ``,
    ...shardsSections(r.scale, r.idle),
    ...(r.failures.length ? [`## Failed`, ``, ...r.failures.map((f) => `- ${f}`), ``] : []),
    `How each number is taken: bench/README.md (row 15) and the comments of bench/lib/shards-*.ts.`,
    ``,
  ].join("\n");
}
