/**
 * `npm run bench:bounded-calls`: how long each Redis call of a bulk operation
 * takes — the 20 ms a call that issue 15 sets — on the scenario
 * test/workers/queue/bounded-calls.test.ts bounds by work (calls, commands and
 * arguments per call): bulk cancel of the 60,000 of 100,000 scheduled jobs in
 * a due window, replay of 2,000 and purge of 8,000 of 10,000 dead letters.
 * Each round on a fresh redis-server behind the bridge, every call in its
 * SLOWLOG (threshold 0: the time Redis spent in the call, the script's whole
 * run). Prints and writes bench/results/bounded-calls.{json,md}.
 */
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { startRedisBridge } from "../harness/redis-bridge.js";
import * as lua from "../src/queue/lua.generated.js";
import { Queue } from "../src/queue/queue.js";
import { createRedis } from "../src/queue/redis.js";
import { callsOf, type Command, quantile, timeEveryCall } from "./lib/slowlog.js";
import { cancelTheWindow, killTenThousand, purgeTheRest, replayThe503s, scheduleMany, T0 } from "./lib/bulk-operations.js";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
/** The bound issue 15 sets for one Redis call of a bulk operation. */
const CALL_BOUND_MS = 20;

/** One round: the three operations on a fresh Redis; each operation's script calls, ms. */
async function round(): Promise<Record<string, number[]>> {
  const stack = await startRedisBridge({ tokenPrefix: "bench-bounded", limits: { maxRecordBytes: 0 } });
  try {
    const command: Command = async (args) => {
      const res = await fetch(stack.bridge.url, {
        method: "POST",
        headers: { authorization: `Bearer ${stack.token}` },
        body: JSON.stringify(args.map(String)),
      });
      const body = (await res.json()) as { result?: unknown; error?: string };
      if (body.error !== undefined) throw new Error(body.error);
      return body.result;
    };
    const clock = { now: T0 };
    const redis = createRedis({ redisUrl: stack.bridge.url, redisToken: stack.token, redisTimeoutMs: 30_000 });
    const queue = new Queue({ redis, prefix: "bench-bounded", now: () => clock.now });
    await scheduleMany(queue);
    await timeEveryCall(command);
    await cancelTheWindow(queue);
    const out: Record<string, number[]> = {
      "bulk cancel: list-jobs": await callsOf(command, lua.listJobs),
      "bulk cancel: cancel-jobs": await callsOf(command, lua.cancelJobs),
    };
    await killTenThousand(queue, clock);
    await timeEveryCall(command);
    await replayThe503s(queue, clock);
    out["replay: list-dead"] = await callsOf(command, lua.listDead);
    out["replay: replay-dead"] = await callsOf(command, lua.replayDead);
    await timeEveryCall(command);
    await purgeTheRest(queue);
    out["purge: list-dead"] = await callsOf(command, lua.listDead);
    out["purge: purge-dead"] = await callsOf(command, lua.purgeDead);
    return out;
  } finally {
    await stack.stop();
  }
}

const byCall: Record<string, number[]> = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, ms] of Object.entries(await round())) byCall[name] = [...(byCall[name] ?? []), ...ms];
}
const rows = Object.entries(byCall).map(([call, ms]) => ({
  call,
  calls: ms.length,
  medianMs: quantile(ms, 0.5),
  p99Ms: quantile(ms, 0.99),
  maxMs: Math.max(...ms),
  overBound: ms.filter((m) => m > CALL_BOUND_MS).length,
}));
const machine = { cpu: cpus()[0]?.model ?? "?", cores: cpus().length, node: process.version };
const results = { date: new Date().toISOString(), rounds: ROUNDS, boundMs: CALL_BOUND_MS, machine, rows };
const fmt = (n: number) => n.toFixed(2);
const md = [
  "# Bulk operations: how long one Redis call takes",
  "",
  `${ROUNDS} rounds, each on a fresh redis-server behind the bridge; every call timed by the SLOWLOG (threshold 0). Bound: ${CALL_BOUND_MS} ms a call (issue 15).`,
  "The work in each call (calls, commands and arguments per call) is held by test/workers/queue/bounded-calls.test.ts.",
  `Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; ${results.date.slice(0, 10)}.`,
  "",
  "| call | calls | median ms | p99 ms | max ms | over the bound |",
  "|---|---:|---:|---:|---:|---:|",
  ...rows.map((r) => `| ${r.call} | ${r.calls} | ${fmt(r.medianMs)} | ${fmt(r.p99Ms)} | ${fmt(r.maxMs)} | ${r.overBound} |`),
  "",
].join("\n");
writeFileSync(join(import.meta.dirname, "results", "bounded-calls.json"), `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(join(import.meta.dirname, "results", "bounded-calls.md"), md);
console.log(md);
