/**
 * Where the tick's CPU goes while it delivers over http: the throughput
 * run of the bench's delivery rows (bench/lib/deliver.ts: `n` due jobs,
 * TICK_CONCURRENCY 50, signed), with a V8 CPU profile of the tick's workerd
 * taken over its inspector, then self and inclusive time per function in
 * µs per delivery, beside the floor Worker's CPU per delivery in the same
 * run (workerd's CPU time; the profile adds its own sampling cost).
 *
 *   npm run bench:profile-delivery [-- --jobs 20000 --out /tmp/tick.cpuprofile]
 *
 * The profile file opens in Chrome's DevTools (Performance) or any
 * .cpuprofile viewer. Not part of `npm run bench`: profiling slows the run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import WebSocket from "ws";
import { freePort } from "../dev/ports.js";
import { deliveryRun, startDeliveryRig } from "./lib/deliver.js";
import { startInfra } from "./lib/infra.js";

const { values: args } = parseArgs({ options: { jobs: { type: "string" }, out: { type: "string" }, top: { type: "string" } } });
const JOBS = Number(args.jobs ?? 20_000);
// bench/results/tmp/ is git-ignored, so a fresh clone has none.
const TMP = join(import.meta.dirname, "results/tmp");
mkdirSync(TMP, { recursive: true });
const OUT = args.out ?? join(TMP, "tick-delivery.cpuprofile");
const TOP = Number(args.top ?? 30);
/** The profiler's sampling interval, µs. */
const SAMPLING_US = 200;

/** The parts of a V8 CPU profile this reads. */
interface Profile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
}

/** A minimal Chrome DevTools Protocol session on one inspector target. */
async function devtools(url: string) {
  const ws = new WebSocket(url);
  await new Promise((r, j) => {
    ws.once("open", r);
    ws.once("error", j);
  });
  let id = 0;
  const pending = new Map<number, (v: unknown) => void>();
  ws.on("message", (m) => {
    const msg = JSON.parse(String(m)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) pending.get(msg.id)?.(msg.result);
  });
  return {
    call<T>(method: string, params: object = {}): Promise<T> {
      const i = ++id;
      return new Promise<T>((r) => {
        pending.set(i, r as (v: unknown) => void);
        ws.send(JSON.stringify({ id: i, method, params }));
      });
    },
    close: () => ws.close(),
  };
}

/** Self and inclusive µs per delivery by function (name, file, line). */
function perFunction(p: Profile, deliveries: number): { self: Array<[string, number]>; inclusive: Array<[string, number]>; totalUs: number } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  // Each sample stands for one sampling interval. Not its time delta: workerd's
  // sampler pauses while the isolate waits, so the first sample after a wait
  // carries the whole wait (a peek would show hundreds of ms of its own).
  for (const s of p.samples) selfUs.set(s, (selfUs.get(s) ?? 0) + SAMPLING_US);
  const key = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return `${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}:${f.lineNumber}`;
  };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    totalUs += us;
    self.set(key(id), (self.get(key(id)) ?? 0) + us);
    // A recursive function counts once per sample in its inclusive time.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = key(cur);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const rank = (m: Map<string, number>) => [...m].map(([k, us]): [string, number] => [k, us / deliveries]).sort((a, b) => b[1] - a[1]);
  return { self: rank(self), inclusive: rank(inclusive), totalUs };
}

const infra = await startInfra();
const rig = await startDeliveryRig(infra, (line) => console.log(line), join(TMP, "profile-delivery.log"));
try {
  const inspectorPort = await freePort();
  const workers = await rig.throughput({ inspectorPort });
  // Warm both, as the bench does, so neither profile nor figures hold the first requests' compilation.
  await deliveryRun(rig, workers, "floor", 200);
  await deliveryRun(rig, workers, "delayline", 200);
  const floor = await deliveryRun(rig, workers, "floor", JOBS);
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as Array<{ webSocketDebuggerUrl: string; title: string }>;
  const target = targets.find((t) => /core:user/.test(t.title)) ?? targets[0];
  if (!target) throw new Error("the tick Worker's inspector lists no target");
  const session = await devtools(target.webSocketDebuggerUrl);
  await session.call("Profiler.enable");
  await session.call("Profiler.setSamplingInterval", { interval: SAMPLING_US });
  await session.call("Profiler.start");
  const load = loadavg()[0]!;
  const tick = await deliveryRun(rig, workers, "delayline", JOBS);
  const { profile } = await session.call<{ profile: Profile }>("Profiler.stop");
  session.close();
  writeFileSync(OUT, JSON.stringify(profile));
  const { self, inclusive, totalUs } = perFunction(profile, JOBS);
  const row = ([k, us]: [string, number]) => `${us.toFixed(1).padStart(7)} µs  ${((100 * us * JOBS) / totalUs).toFixed(1).padStart(5)} %  ${k}`;
  console.log(`\n${JOBS} deliveries, load ${load.toFixed(1)}; profile in ${OUT}`);
  console.log(`floor     ${Math.round(floor.jobsPerSec)}/s, ${Math.round(floor.cpuUsPerJob)} µs CPU/delivery`);
  console.log(
    `delayline ${Math.round(tick.jobsPerSec)}/s, ${Math.round(tick.cpuUsPerJob)} µs CPU/delivery (profiled), ${(totalUs / JOBS).toFixed(0)} µs sampled`,
  );
  console.log("\nself time per delivery:");
  for (const r of self.slice(0, TOP)) console.log(row(r));
  console.log("\ninclusive time per delivery:");
  for (const r of inclusive.slice(0, TOP)) console.log(row(r));
} finally {
  await rig.stop();
  await infra.stop();
}
