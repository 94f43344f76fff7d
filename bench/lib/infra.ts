/**
 * What every benchmark shares: one redis-server, a metering connection, the
 * REST bridge (counting its requests) and a count of the commands each client
 * sends itself, so Redis' CPU time can be split from the commands scripts run.
 */
import IORedis from "ioredis";
import type { RunningBridge } from "../../dev/bridge/server.js";
import type { RunningRedis } from "../../dev/redis-launcher.js";
import { startRedisBridge } from "../../harness/redis-bridge.js";

// Commands the clients in this process write on the wire (not those scripts
// run inside Redis), by lower-case name. The metering connection is left out.
const sent = new Map<string, number>();
const METER = Symbol("bench meter connection");
type Countable = { [METER]?: true; sendCommand(command: { name: string }, ...rest: unknown[]): unknown };
const proto = IORedis.prototype as unknown as Countable;
const originalSend = proto.sendCommand;
proto.sendCommand = function (this: Countable, command: { name: string }, ...rest: unknown[]) {
  if (!this[METER]) {
    const name = command.name.toLowerCase();
    sent.set(name, (sent.get(name) ?? 0) + 1);
  }
  return originalSend.call(this, command, ...rest);
};

/** Redis' counters since the last {@link Infra.resetStats}. */
export interface Usage {
  /** Every command Redis ran, those inside scripts included (as Upstash bills). */
  commands: number;
  /** Per command name: calls and server time (µs). */
  byCommand: Record<string, { calls: number; usec: number }>;
  /**
   * Server time of the commands clients sent (µs): a script's time includes
   * the commands it runs, so those are not added again. A command name sent
   * both ways is apportioned by calls.
   */
  topLevelUsec: number;
  /** Commands clients in this process wrote (a REST client would send each as a request unless pipelined). */
  sentCommands: number;
  /** redis-server's own CPU time, user + system (INFO cpu), µs. */
  processCpuUsec: number;
  /** REST requests the bridge answered. */
  bridgeRequests: number;
}

export interface Infra {
  redis: RunningRedis;
  /** A connection for metering and set-up; its commands are not counted as sent. */
  meter: IORedis;
  bridge: RunningBridge;
  bridgeToken: string;
  resetStats(): Promise<void>;
  usage(): Promise<Usage>;
  /** INFO memory used_memory, bytes. */
  usedMemory(): Promise<number>;
  flush(): Promise<void>;
  stop(): Promise<void>;
}

function parseInfo(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) out.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  return out;
}

async function cpuUsec(meter: IORedis): Promise<number> {
  const info = parseInfo(await meter.info("cpu"));
  return Math.round((Number(info.get("used_cpu_user")) + Number(info.get("used_cpu_sys"))) * 1e6);
}

/**
 * One redis-server for the whole run. AOF on with fsync every second (Redis'
 * default for AOF; `always` would make every peer disk-bound) and no automatic
 * AOF rewrite, whose fork would land in whichever run happened to grow the file.
 */
export async function startInfra(): Promise<Infra> {
  let bridgeRequests = 0;
  const counted = { redis: { appendfsync: "everysec" as const }, log: () => void bridgeRequests++, tokenPrefix: "bench" };
  const { redis, bridge, token: bridgeToken } = await startRedisBridge(counted);
  const meter = new IORedis(redis.url, { maxRetriesPerRequest: null });
  (meter as unknown as Countable)[METER] = true;
  await meter.config("SET", "auto-aof-rewrite-percentage", "0");
  let cpuAtReset = 0;

  const infra: Infra = {
    redis,
    meter,
    bridge,
    bridgeToken,
    async resetStats() {
      await meter.config("RESETSTAT");
      sent.clear();
      bridgeRequests = 0;
      cpuAtReset = await cpuUsec(meter);
    },
    async usage() {
      const cpu = await cpuUsec(meter);
      const requests = bridgeRequests;
      const byCommand: Usage["byCommand"] = {};
      for (const [key, value] of parseInfo(await meter.info("commandstats"))) {
        const m = /^cmdstat_(.+)$/.exec(key);
        const calls = /calls=(\d+)/.exec(value);
        const usec = /usec=(\d+)/.exec(value);
        if (!m || !calls || !usec) continue;
        const name = m[1]!;
        // The metering's own commands, and the bridge's record-size measure (MEMORY USAGE), which Upstash does not bill.
        if (name.startsWith("config") || name === "info" || name.startsWith("memory")) continue;
        byCommand[name] = { calls: Number(calls[1]), usec: Number(usec[1]) };
      }
      let commands = 0;
      let topLevelUsec = 0;
      for (const [name, s] of Object.entries(byCommand)) {
        commands += s.calls;
        // Sent names are bare ("client"); commandstats splits subcommands ("client|setname").
        const top = sent.get(name) ?? sent.get(name.split("|")[0]!) ?? 0;
        topLevelUsec += s.usec * Math.min(1, top / s.calls);
      }
      let sentCommands = 0;
      for (const [name, n] of sent) if (name !== "config" && name !== "info" && name !== "memory") sentCommands += n;
      return { commands, byCommand, topLevelUsec: Math.round(topLevelUsec), sentCommands, processCpuUsec: cpu - cpuAtReset, bridgeRequests: requests };
    },
    async usedMemory() {
      return Number(parseInfo(await meter.info("memory")).get("used_memory"));
    },
    async flush() {
      await meter.flushall();
      // Lua scripts stay cached: every system reloads its own the same way after a flush.
    },
    async stop() {
      await bridge.close().catch(() => {});
      meter.disconnect();
      await redis.stop();
    },
  };
  return infra;
}

/** A 100-byte payload (its JSON is 100 bytes), the same for every system. */
export function payload(i: number): { i: number; pad: string } {
  const base = JSON.stringify({ i, pad: "" }).length;
  return { i, pad: "x".repeat(Math.max(0, 100 - base)) };
}
