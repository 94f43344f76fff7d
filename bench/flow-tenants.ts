/**
 * Flow keys under a flood, through the whole local stack (`npm start`), side
 * by side in one run: three tenants of one topic, each its own flow key, with
 * per-key parallelism 5, delivering over http to a loopback receiver that
 * holds every request HOLD ms (so a key can take at most 5 / HOLD jobs a
 * second). Two runs, each on a fresh stack:
 *
 *   unloaded  the two small tenants alone, each at RATE jobs/s
 *   loaded    the same two, and a big tenant at 10 × RATE (twice what its
 *             parallelism lets through)
 *
 * Jobs are due evenly over SPREAD ms, stored up front in batches. Lateness =
 * when the receiver saw the request − the job's dueAt. The targets: the small
 * tenants' lateness p99 loaded within 2 × unloaded; the big tenant never
 * more than 5 requests at once at the receiver; every job delivered once,
 * none early. Reported beside them: how many deliveries a second the big
 * tenant got while its backlog lasted, against the 5 / HOLD its limit allows
 * (a key's slots come back when its chunk settles, so it gets less).
 *
 *   npm run bench:flow-tenants [-- --rate 4 --spread 30000 --hold 250 --poll 100]
 *
 * The default run writes bench/results/flow-tenants.{json,md}; any other
 * writes to bench/results/tmp/ (git-ignored).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ServerResponse } from "node:http";
import { sleep } from "../harness/util.js";
import { startReceiver as startHarnessReceiver, type ReceiverPart } from "../harness/receiver.js";
import { machine, startNpmStart } from "./lib/npm-start.js";
import { summarize } from "./stats.js";

const { values: args } = parseArgs({
  options: {
    rate: { type: "string", default: "4" },
    spread: { type: "string", default: "30000" },
    hold: { type: "string", default: "250" },
    poll: { type: "string", default: "100" },
    lead: { type: "string", default: "5000" },
  },
});
const RATE = Number(args.rate);
const SPREAD = Number(args.spread);
const HOLD = Number(args.hold);
const POLL = Number(args.poll);
const LEAD = Number(args.lead);
const PARALLELISM = 5;
const full = RATE === 4 && SPREAD === 30_000 && HOLD === 250 && POLL === 100 && LEAD === 5000;
const root = join(import.meta.dirname, "..");
const log = (line: string) => console.error(`[bench:flow-tenants] ${line}`);

/** Holds each request HOLD ms and notes, per tenant (the path's last part), arrivals by job id and the most requests at once. */
function tenantReceiver() {
  const arrivals = new Map<string, { tenant: string; at: number[] }>();
  const open = new Map<string, number>();
  const most = new Map<string, number>();
  /** Per tenant: [time, requests open] at each change, for the throughput while a backlog lasts. */
  const starts = new Map<string, number[]>();
  const part: ReceiverPart = {
    answer({ req, url, at }, res: ServerResponse) {
      const tenant = url.pathname.split("/").pop() ?? "";
      const id = String(req.headers["delayline-job-id"]);
      const seen = arrivals.get(id);
      if (seen) seen.at.push(at);
      else arrivals.set(id, { tenant, at: [at] });
      const now = (open.get(tenant) ?? 0) + 1;
      open.set(tenant, now);
      most.set(tenant, Math.max(most.get(tenant) ?? 0, now));
      starts.set(tenant, [...(starts.get(tenant) ?? []), at]);
      setTimeout(() => {
        open.set(tenant, (open.get(tenant) ?? 1) - 1);
        res.statusCode = 200;
        res.end("ok");
      }, HOLD);
      return true;
    },
  };
  return { part, arrivals, most, starts };
}

async function run(name: "unloaded" | "loaded") {
  const receiver = tenantReceiver();
  const server = await startHarnessReceiver([receiver.part], { keepAliveTimeoutMs: 60_000 });
  const stack = await startNpmStart({ name: `flow-tenants-${name}`, settings: { TICK_POLL_MS: String(POLL) } });
  try {
    await stack.client.topics.configure("tenants", { flow: { parallelism: PARALLELISM } });
    const tenants =
      name === "loaded"
        ? [["big", RATE * 10] as const, ["small-1", RATE] as const, ["small-2", RATE] as const]
        : [["small-1", RATE] as const, ["small-2", RATE] as const];
    const start = Date.now() + LEAD;
    const jobs = tenants.flatMap(([tenant, rate]) =>
      Array.from({ length: Math.round((rate * SPREAD) / 1000) }, (_, i) => ({
        topic: "tenants",
        runAt: start + Math.floor((i * 1000) / rate),
        flowKey: tenant,
        payload: { tenant, i },
        target: { url: `${server.url}/t/${tenant}` },
      })),
    );
    const due = new Map<string, { tenant: string; dueAt: number }>();
    for (let i = 0; i < jobs.length; i += 500) {
      const batch = jobs.slice(i, i + 500);
      const stored = await stack.client.jobs.enqueueBatch(batch);
      for (const [j, r] of stored.entries()) due.set(r.id, { tenant: batch[j]!.flowKey, dueAt: Date.parse(r.dueAt!) });
    }
    log(`${name}: ${due.size} jobs stored; first due in ${start - Date.now()} ms`);
    const bigJobs = jobs.filter((j) => j.flowKey === "big").length;
    // The big tenant's backlog drains at its limit: give it that long and a margin.
    const deadline = start + SPREAD + Math.ceil((bigJobs * HOLD) / PARALLELISM) + 60_000;
    const delivered = () => [...receiver.arrivals.keys()].filter((id) => due.has(id)).length;
    while (Date.now() < deadline && delivered() < due.size) await sleep(250);
    await sleep(2_000);

    const byTenant: Record<string, { n: number; latenessMs: ReturnType<typeof summarize>; mostAtOnce: number; early: number; duplicates: number }> = {};
    for (const [tenant] of tenants) {
      const lateness: number[] = [];
      let early = 0;
      let duplicates = 0;
      for (const [id, a] of receiver.arrivals) {
        const d = due.get(id);
        if (!d || d.tenant !== tenant) continue;
        duplicates += a.at.length - 1;
        const l = a.at[0]! - d.dueAt;
        if (l < 0) early++;
        lateness.push(l);
      }
      byTenant[tenant] = { n: lateness.length, latenessMs: summarize(lateness), mostAtOnce: receiver.most.get(tenant) ?? 0, early, duplicates };
    }
    // The big tenant's deliveries a second while its backlog lasted (from its 5th second to its last delivery).
    let bigPerSecond: number | null = null;
    const bigStarts = (receiver.starts.get("big") ?? []).sort((x, y) => x - y);
    if (bigStarts.length > 0) {
      const from = start + 5_000;
      const inBacklog = bigStarts.filter((t) => t >= from);
      const span = (inBacklog[inBacklog.length - 1]! - from) / 1000;
      bigPerSecond = span > 0 ? Math.round((inBacklog.length / span) * 10) / 10 : null;
    }
    log(
      `${name}: ${JSON.stringify(Object.fromEntries(Object.entries(byTenant).map(([t, v]) => [t, { n: v.n, p50: v.latenessMs.p50, p99: v.latenessMs.p99, most: v.mostAtOnce }])))}`,
    );
    return { name, jobs: due.size, delivered: delivered(), byTenant, bigPerSecond, load: machine().loadavg, logFile: stack.logFile.slice(root.length + 1) };
  } finally {
    await stack.stop();
    await server.close();
  }
}

const startedAt = new Date();
const unloaded = await run("unloaded");
const loaded = await run("loaded");
const smallRatio = Math.max(...["small-1", "small-2"].map((t) => loaded.byTenant[t]!.latenessMs.p99 / Math.max(1, unloaded.byTenant[t]!.latenessMs.p99)));
const limitPerSecond = (PARALLELISM * 1000) / HOLD;
const all = [unloaded, loaded];
const target = {
  smallP99WithinTwiceUnloaded: smallRatio <= 2,
  bigHeldToParallelism: (loaded.byTenant.big?.mostAtOnce ?? 0) <= PARALLELISM,
  allOnceNoneEarly: all.every((r) => r.delivered === r.jobs && Object.values(r.byTenant).every((t) => t.early === 0 && t.duplicates === 0)),
};
const out = {
  benchmark: "flow keys: three tenants at 10× / 1× / 1× through npm start, per-key parallelism 5",
  date: startedAt.toISOString(),
  durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
  machine: machine(),
  settings: { ratePerSec: RATE, spreadMs: SPREAD, holdMs: HOLD, tickPollMs: POLL, parallelism: PARALLELISM, limitPerSecond },
  runs: all,
  smallP99Ratio: Math.round(smallRatio * 100) / 100,
  target,
  met: Object.values(target).every(Boolean),
};
console.log(JSON.stringify(out, null, 2));
const row = (r: (typeof all)[number], t: string) => {
  const v = r.byTenant[t];
  return v
    ? `| ${r.name} | ${t} | ${v.n} | ${v.latenessMs.p50} | ${v.latenessMs.p99} | ${v.latenessMs.max} | ${v.mostAtOnce} | ${v.early} | ${v.duplicates} |`
    : "";
};
const md =
  `# Flow keys: a flooded tenant beside two small ones, through \`npm start\`\n\n` +
  `${out.date}, ${out.machine.cpus} × ${out.machine.model}, Node ${out.machine.node}; ${out.durationS} s in all; load at the end ${out.machine.loadavg["1m"]}.\n\n` +
  `One topic, \`flow: { parallelism: ${PARALLELISM} }\`, a flow key per tenant; http deliveries to a loopback receiver that holds each request ${HOLD} ms ` +
  `(so a key takes at most ${limitPerSecond} jobs/s); \`TICK_POLL_MS=${POLL}\`. Jobs due evenly over ${SPREAD / 1000} s, stored up front: ` +
  `the small tenants ${RATE}/s each, the big one ${RATE * 10}/s in the loaded run. Each run on a fresh stack.\n\n` +
  `| run | tenant | jobs | p50 ms | p99 ms | max ms | most at once | early | duplicates |\n|---|---|---|---|---|---|---|---|---|\n` +
  [row(unloaded, "small-1"), row(unloaded, "small-2"), row(loaded, "small-1"), row(loaded, "small-2"), row(loaded, "big")].join("\n") +
  `\n\n- Small tenants' p99, loaded ÷ unloaded (the worse of the two): **${out.smallP99Ratio}** (target ≤ 2: ${target.smallP99WithinTwiceUnloaded ? "met" : "missed"}).\n` +
  `- The big tenant: at most ${loaded.byTenant.big?.mostAtOnce} requests at once (parallelism ${PARALLELISM}: ${target.bigHeldToParallelism ? "held" : "passed"}); ` +
  `${loaded.bigPerSecond} deliveries a second while its backlog lasted (${Math.round(((loaded.bigPerSecond ?? 0) / limitPerSecond) * 100)} % of the ${limitPerSecond}/s its parallelism allows).\n` +
  `- Every job delivered once, none early: ${target.allOnceNoneEarly ? "yes" : "no"}.\n`;
const dir = full ? join(root, "bench/results") : join(root, "bench/results/tmp");
writeFileSync(join(dir, "flow-tenants.json"), `${JSON.stringify(out, null, 2)}\n`);
writeFileSync(join(dir, "flow-tenants.md"), md);
log(`wrote ${join(dir, "flow-tenants.md").slice(root.length + 1)}; met: ${out.met}`);
