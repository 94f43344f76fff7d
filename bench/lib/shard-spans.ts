/**
 * What a span of a shards run cost and delivered, per shard: billed Redis
 * commands (commandstats, bench/lib/commandstats.ts), the REST requests and
 * the commands each bridge was sent, the deliveries the handlers noted, and
 * the tick's rounds from the Worker's log lines. Spans are read as two
 * snapshots of the counters, so nothing but INFO touches Redis between them.
 */
import type { LoggedLine } from "../../harness/npm-start.js";
import { summarize } from "../stats.js";
import { callsBetween } from "./commandstats.js";
import type { ShardRig } from "./shard-rig.js";
import type { Delivery } from "./shard-traffic.js";

/** The counters of every shard at one moment. */
export interface Snapshot {
  at: number;
  calls: Array<Record<string, number>>;
  requests: number[];
  commandsSent: number[];
}

export async function snapshot(rig: ShardRig): Promise<Snapshot> {
  return {
    at: Date.now(),
    calls: await Promise.all(rig.shards.map((s) => s.calls())),
    requests: rig.shards.map((s) => s.requests.length),
    commandsSent: rig.shards.map((s) => s.commandsSent.length),
  };
}

/** Lateness (handler's time − due) of first attempts, ms. */
export interface Lateness {
  n: number;
  p50: number;
  p99: number;
  max: number;
  early: number;
}

export function latenessOf(deliveries: Delivery[]): Lateness {
  const firsts = deliveries.filter((d) => d.attempt === 1).map((d) => d.at - d.dueAt);
  const s = summarize(firsts);
  return { n: s.n, p50: s.p50, p99: s.p99, max: s.max, early: firsts.filter((l) => l < 0).length };
}

/** First attempts due in [from, to). */
export const dueIn = (deliveries: Delivery[], from: number, to: number) => deliveries.filter((d) => d.dueAt >= from && d.dueAt < to);

/** One shard over a span. */
export interface ShardSpan {
  shard: string;
  /** Deliveries its handlers noted in the span (any attempt). */
  delivered: number;
  /** Billed Redis commands (scripts' own included; CONFIG, INFO and the bridge's MEMORY USAGE left out). */
  commands: number;
  byCommand: Record<string, number>;
  /** REST requests its bridge answered. */
  requests: number;
  /** Commands its bridge was sent per second (a script counts one): what its commands/s cap meters. */
  bridgeCommandsPerSec: number;
  /** The tick's rounds that claimed something, and the jobs they claimed (the Worker's "tick round" lines). */
  claimingRounds: number;
  claimedInRounds: number;
}

export function shardSpans(rig: ShardRig, before: Snapshot, after: Snapshot, deliveries: Delivery[], lines: LoggedLine[]): ShardSpan[] {
  const seconds = (after.at - before.at) / 1_000;
  return rig.shards.map((s, i) => {
    const byCommand = callsBetween(before.calls[i]!, after.calls[i]!);
    const rounds = lines.filter(
      (l) => l.msg === "tick round" && (l.shard ?? "main") === s.name && l.at >= before.at && l.at < after.at && Number(l.claimed) > 0,
    );
    return {
      shard: s.name,
      delivered: deliveries.filter((d) => d.shard === s.name && d.at >= before.at && d.at < after.at).length,
      commands: Object.values(byCommand).reduce((n, c) => n + c, 0),
      byCommand,
      requests: after.requests[i]! - before.requests[i]!,
      bridgeCommandsPerSec: s.commandsSent.slice(before.commandsSent[i]!, after.commandsSent[i]!).reduce((n, [, c]) => n + c, 0) / seconds,
      claimingRounds: rounds.length,
      claimedInRounds: rounds.reduce((n, l) => n + Number(l.claimed), 0),
    };
  });
}
