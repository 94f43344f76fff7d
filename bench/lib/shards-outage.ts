/**
 * One shard down for a while under load (issue 35), on the 3-shard stack of
 * bench/lib/shards-scale.ts right after its window, the producers still
 * running: the last shard's redis-server is stopped (SIGTERM: its
 * append-only file is written out) for `downS`, then started again on the
 * same port and file; its bridge stays up and answers 503 meanwhile. While
 * it is down, the API's reads across shards are asked (`probeAtS`). After
 * `recoverS` more of load the producers stop, and the run waits for every
 * acknowledged job to be delivered.
 */
import { placeTopic } from "../../src/queue/placement.js";
import { sleep } from "../../harness/util.js";
import { BENCH_TOKEN } from "./delayline.js";
import { SHARD_NAMES } from "./shard-rig.js";
import { dueIn, latenessOf, type Lateness } from "./shard-spans.js";
import type { EnqueueAnswer } from "./shard-traffic.js";
import type { LoadContext } from "./shards-scale.js";

export interface OutageSizes {
  downS: number;
  /** Load after the shard is back, before the producers stop. */
  recoverS: number;
  /** When the reads across shards are asked, seconds into the outage. */
  probeAtS: number[];
}

/** One read of the API while the shard is down. */
export interface Probe {
  path: string;
  atS: number;
  /** 0: no answer within the 2 s asked for. */
  status: number;
  ms: number;
  /** The JSON's top-level `partial` and `missingShards`, as answered (undefined: not in the answer). */
  partial?: unknown;
  missingShards?: unknown;
  /** `/metrics`: its `delayline_shard_up` lines. */
  shardUp?: string[];
}

export interface OutageResult {
  victim: string;
  live: string[];
  downMs: number;
  /** The live shards' first attempts due in the no-kill window (the reference) and while the victim was down. */
  reference: Lateness;
  during: Lateness;
  /** Enqueues to live shards' topics answered without storing, while the victim was down. */
  liveEnqueueFailures: number;
  /** The Worker's error and warning lines naming a live shard (main's name none) while the victim was down, by message. */
  liveErrorLines: Record<string, number>;
  /** The same for the victim. */
  victimErrorLines: Record<string, number>;
  /** Enqueues to the victim's topics sent once it was down and answered before it was back, by status. */
  victimWhileDown: Record<string, number>;
  /** Of those, answered 2xx (must be none). */
  victimAcknowledgedWhileDown: number;
  /** Enqueues to the victim's topics in flight when it stopped, by status. */
  victimInFlightAtStop: Record<string, number>;
  probes: Probe[];
  /** Every job acknowledged since the load began, and what became of it. */
  acknowledged: number;
  deliveredIds: number;
  /** Acknowledged and never delivered (must be 0); a few of them for looking into. */
  missing: number;
  missingIds: string[];
  /** Delivered without an acknowledgment (an enqueue whose answer said it failed, or was lost, yet stored it). */
  deliveredUnacknowledged: number;
  /** Deliveries past the first of a job, and those among them whose attempt repeated an earlier one's (must be none). */
  duplicates: number;
  duplicatesSameAttempt: number;
  /** From the victim's return to its first delivery, and the latest of its jobs due while it was down, ms. */
  victimResumedAfterMs: number | null;
  victimMaxLateMs: number;
  /** From the producers' stop until every acknowledged job was delivered, ms (null: not within 180 s). */
  settledMs: number | null;
}

type Log = (line: string) => void;

const countBy = <T>(xs: T[], key: (x: T) => string) => {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
};

async function probe(url: string, path: string, atS: number): Promise<Probe> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${BENCH_TOKEN}` }, signal: AbortSignal.timeout(2_000) });
    const text = await res.text();
    const ms = Math.round(performance.now() - started);
    if (path === "/metrics") return { path, atS, status: res.status, ms, shardUp: text.split("\n").filter((l) => l.startsWith("delayline_shard_up")) };
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      /* not JSON: neither field is there */
    }
    return { path, atS, status: res.status, ms, partial: body.partial, missingShards: body.missingShards };
  } catch {
    return { path, atS, status: 0, ms: Math.round(performance.now() - started) };
  }
}

/** The Worker's error and warning lines in [from, to) on `shards`, by message. */
function errorLines(ctx: LoadContext, shards: string[], from: number, to: number): Record<string, number> {
  const lines = ctx.stack.lines.filter(
    (l) => (l.level === "error" || l.level === "warn") && shards.includes(String(l.shard ?? "main")) && l.at >= from && l.at < to,
  );
  return countBy(lines, (l) => l.msg);
}

/** Waits until every acknowledged job was delivered; ms it took, or null after 180 s. */
async function settle(ctx: LoadContext): Promise<number | null> {
  const started = Date.now();
  const acked = ctx.producers.answers.flatMap((a) => (a.id ? [a.id] : []));
  while (Date.now() - started < 180_000) {
    await ctx.collector.read().catch(() => {});
    const seen = new Set(ctx.collector.deliveries.map((d) => d.id));
    if (acked.every((id) => seen.has(id))) return Date.now() - started;
    await sleep(1_000);
  }
  return null;
}

export async function outageRun(ctx: LoadContext, sizes: OutageSizes, delayMs: number, log: Log): Promise<OutageResult> {
  const victim = ctx.rig.shards.at(-1)!;
  const live = ctx.rig.shards.filter((s) => s !== victim).map((s) => s.name);
  const shardOf = (a: EnqueueAnswer) => placeTopic(a.topic, SHARD_NAMES);
  log(`outage: stopping shard ${victim.name}'s redis-server for ${sizes.downS} s`);
  const stopping = Date.now();
  await victim.down();
  const downAt = Date.now();
  const probes: Probe[] = [];
  for (const atS of sizes.probeAtS.filter((s) => s < sizes.downS)) {
    await sleep(Math.max(0, downAt + atS * 1_000 - Date.now()));
    for (const path of ["/v1/stats", "/v1/topics", "/v1/dead-letters", "/metrics"]) probes.push(await probe(ctx.stack.url, path, atS));
  }
  await sleep(Math.max(0, downAt + sizes.downS * 1_000 - Date.now()));
  const backing = Date.now();
  await victim.up();
  const upAt = Date.now();
  log(`outage: shard ${victim.name} back after ${Math.round((upAt - downAt) / 1_000)} s; ${sizes.recoverS} s more of load`);
  await sleep(sizes.recoverS * 1_000);
  await ctx.producers.stop();
  const settledMs = await settle(ctx);
  await sleep(delayMs);
  await ctx.collector.read().catch(() => {});

  const answers = ctx.producers.answers;
  const deliveries = ctx.collector.deliveries;
  const victimAnswers = answers.filter((a) => shardOf(a) === victim.name);
  const whileDown = victimAnswers.filter((a) => a.sentAt >= downAt && a.at < backing);
  const acked = new Set(answers.flatMap((a) => (a.id ? [a.id] : [])));
  const attempts = new Map<string, number[]>();
  for (const d of deliveries) attempts.set(d.id, [...(attempts.get(d.id) ?? []), d.attempt]);
  const missingIds = [...acked].filter((id) => !attempts.has(id));
  let duplicates = 0;
  let duplicatesSameAttempt = 0;
  for (const list of attempts.values()) {
    duplicates += list.length - 1;
    duplicatesSameAttempt += list.length - new Set(list).size;
  }
  const victimDue = dueIn(deliveries, stopping, upAt).filter((d) => d.shard === victim.name);
  const resumed = deliveries.filter((d) => d.shard === victim.name && d.at >= upAt).map((d) => d.at);
  const w = ctx.window;
  return {
    victim: victim.name,
    live,
    downMs: backing - downAt,
    reference: latenessOf(w ? dueIn(deliveries, w.from, w.from + w.ms).filter((d) => live.includes(d.shard)) : []),
    during: latenessOf(dueIn(deliveries, stopping, upAt).filter((d) => live.includes(d.shard))),
    liveEnqueueFailures: answers.filter((a) => live.includes(shardOf(a)) && a.at >= stopping && a.at < upAt && a.id === undefined).length,
    liveErrorLines: errorLines(ctx, live, stopping, upAt),
    victimErrorLines: errorLines(ctx, [victim.name], stopping, upAt),
    victimWhileDown: countBy(whileDown, (a) => String(a.status)),
    victimAcknowledgedWhileDown: whileDown.filter((a) => a.id !== undefined).length,
    victimInFlightAtStop: countBy(
      victimAnswers.filter((a) => a.sentAt < downAt && a.at >= stopping),
      (a) => String(a.status),
    ),
    probes,
    acknowledged: acked.size,
    deliveredIds: attempts.size,
    missing: missingIds.length,
    missingIds: missingIds.slice(0, 10),
    deliveredUnacknowledged: [...attempts.keys()].filter((id) => !acked.has(id)).length,
    duplicates,
    duplicatesSameAttempt,
    victimResumedAfterMs: resumed.length > 0 ? Math.min(...resumed) - upAt : null,
    victimMaxLateMs: Math.max(0, ...victimDue.map((d) => d.at - d.dueAt)),
    settledMs,
  };
}
