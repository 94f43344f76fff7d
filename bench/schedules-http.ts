/**
 * Schedules through the whole local stack (`npm start`: redis-server, bridge,
 * the Worker of wrangler.toml in workerd, the cron driver) at the default
 * settings: once the tick reports itself asleep, two schedules are created
 * side by side — `every: "2s"` and a 6-field cron firing every 5 s (seconds `*\/5`) — with
 * target.url = a loopback receiver, bounded to a 70 s span that crosses a
 * minute boundary. Each delivery says which occurrence it is for
 * (Delayline-Scheduled-For); lateness = when the receiver saw it − that time.
 *
 *   npm run bench:schedules [-- --span 70000 --lead 3000]
 *
 * Writes bench/results/schedules-http.{json,md} at the default sizes, else bench/results/tmp/.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import IORedis from "ioredis";
import { Keys } from "../src/queue/keys.js";
import { sleep } from "../harness/util.js";
import { machine, startNpmStart, startReceiver } from "./lib/npm-start.js";
import { summarize } from "./stats.js";

const { values: args } = parseArgs({ options: { span: { type: "string", default: "70000" }, lead: { type: "string", default: "3000" } } });
const SPAN = Number(args.span);
const LEAD = Number(args.lead);
const full = SPAN === 70_000 && LEAD === 3_000;
const root = join(import.meta.dirname, "..");
const keys = new Keys("dl:{main}");
const log = (line: string) => console.error(`[bench:schedules] ${line}`);
const POLL_TARGET_MS = 1_000 + 100;

const receiver = await startReceiver();
const stack = await startNpmStart({ name: "schedules", settings: {} });
const redis = new IORedis({ port: stack.redisPort, host: "127.0.0.1", maxRetriesPerRequest: null, lazyConnect: true });
const startedAt = new Date();
let out: Record<string, unknown>;
try {
  await redis.connect();
  log(`stack up on :${stack.port}; waiting for the tick to report itself asleep`);
  const deadline = Date.now() + 60_000;
  while ((await redis.exists(keys.tickAsleep)) === 0 && Date.now() < deadline) await sleep(250);
  const asleepAtCreate = (await redis.exists(keys.tickAsleep)) === 1;
  const loadBefore = machine().loadavg;
  // Whole seconds, so both schedules' occurrences are easy to list.
  const start = Math.ceil((Date.now() + LEAD) / 1_000) * 1_000;
  const end = start + SPAN;
  const specs = {
    "every-2s": { every: "2s", occurrences: Array.from({ length: Math.floor(SPAN / 2_000) + 1 }, (_, k) => start + 2_000 * k) },
    "cron-5s": { cron: "*/5 * * * * *", occurrences: [] as number[] },
  };
  for (let t = start; t <= end; t += 1_000) if ((t / 1_000) % 5 === 0) specs["cron-5s"].occurrences.push(t);
  for (const [id, spec] of Object.entries(specs)) {
    const { occurrences: _o, ...timing } = spec;
    await stack.client.schedules.upsert(id, { ...timing, topic: "sched-bench", startAt: start, endAt: end, target: { url: receiver.url } });
  }
  log(`schedules from ${new Date(start).toISOString()} to ${new Date(end).toISOString()} (tick asleep: ${asleepAtCreate})`);
  while (Date.now() < end + 8_000) await sleep(500);
  const loadAfter = machine().loadavg;
  const results = Object.entries(specs).map(([id, spec]) => {
    // Each delivery names its schedule and the occurrence it is for.
    const mine = receiver.requests
      .filter((r) => r.headers["delayline-schedule-id"] === id)
      .map((r) => ({ scheduledFor: Date.parse(String(r.headers["delayline-scheduled-for"])), at: r.at }));
    const byOccurrence = new Map<number, number[]>();
    for (const a of mine) byOccurrence.set(a.scheduledFor, [...(byOccurrence.get(a.scheduledFor) ?? []), a.at]);
    const expected = new Set(spec.occurrences);
    const lateness = [...byOccurrence].map(([t, ats]) => Math.min(...ats) - t);
    const stats = summarize(lateness);
    const r = {
      id,
      timing: "every" in spec ? `every ${spec.every}` : `cron ${spec.cron}`,
      expected: spec.occurrences.length,
      delivered: [...byOccurrence.keys()].filter((t) => expected.has(t)).length,
      missing: spec.occurrences.filter((t) => !byOccurrence.has(t)).length,
      unexpected: [...byOccurrence.keys()].filter((t) => !expected.has(t)).length,
      duplicates: mine.length - byOccurrence.size,
      early: lateness.filter((l) => l < 0).length,
      latenessMs: stats,
      /** Per occurrence: [occurrence − start, lateness] ms. */
      samples: [...byOccurrence].sort((a, b) => a[0] - b[0]).map(([t, ats]) => [t - start, Math.min(...ats) - t]),
      crossedMinute: spec.occurrences.some((t) => t % 60_000 === 0) || Math.floor(start / 60_000) !== Math.floor(end / 60_000),
    };
    return { ...r, met: r.missing === 0 && r.unexpected === 0 && r.duplicates === 0 && r.early === 0 && stats.p99 <= POLL_TARGET_MS };
  });
  for (const r of results)
    log(
      `${r.id}: ${r.delivered}/${r.expected} once, dup ${r.duplicates}, early ${r.early}, p50 ${r.latenessMs.p50} p99 ${r.latenessMs.p99} max ${r.latenessMs.max} ms`,
    );
  out = {
    benchmark: "schedules through npm start",
    date: startedAt.toISOString(),
    durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine: machine(),
    load: { before: loadBefore, after: loadAfter },
    asleepAtCreate,
    start: new Date(start).toISOString(),
    spanMs: SPAN,
    results,
    met: results.every((r) => r.met),
  };
} finally {
  redis.disconnect();
  await stack.stop();
  await receiver.close();
}
console.log(JSON.stringify(out, null, 2));
const m = out.machine as ReturnType<typeof machine>;
const rs = out.results as Array<Record<string, any>>;
const fmt = (l: { "1m": number; "5m": number; "15m": number }) => `${l["1m"]} / ${l["5m"]} / ${l["15m"]}`;
const md =
  `# Schedules through \`npm start\`\n\n${out.date}, ${m.cpus} × ${m.model}, Node ${m.node}; ${out.durationS} s in all; load ${fmt((out.load as any).before)} → ${fmt((out.load as any).after)}.\n\n` +
  `A fresh \`npm start\` at the default settings (TICK_POLL_MS 1000); once the tick reported itself asleep (${out.asleepAtCreate}), two schedules were created side by side, ` +
  `bounded to ${SPAN / 1000} s across a minute boundary, delivering to a loopback receiver. Lateness = arrival − the occurrence named by Delayline-Scheduled-For.\n\n` +
  `| schedule | occurrences | delivered once | missing | duplicates | early | p50 | p99 | max | target | |\n|---|---|---|---|---|---|---|---|---|---|---|\n` +
  rs
    .map(
      (r) =>
        `| ${r.timing} | ${r.expected} | ${r.delivered} | ${r.missing} | ${r.duplicates} | ${r.early} | ${r.latenessMs.p50} ms | ${r.latenessMs.p99} ms | ${r.latenessMs.max} ms | ` +
        `each once, none early, p99 ≤ ${POLL_TARGET_MS} ms | **${r.met ? "met" : "missed"}** |`,
    )
    .join("\n") +
  "\n";
const dir = full ? join(root, "bench/results") : join(root, "bench/results/tmp");
writeFileSync(join(dir, "schedules-http.json"), `${JSON.stringify(out, null, 2)}\n`);
writeFileSync(join(dir, "schedules-http.md"), md);
log(`wrote ${dir}/schedules-http.{json,md}`);
if (!out.met) process.exitCode = 1;
