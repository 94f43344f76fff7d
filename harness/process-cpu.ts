/**
 * CPU time of local processes from /proc, for the benchmarks' per-job CPU
 * figures (workerd, the bridge's Node, redis-server, BullMQ's worker).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** The kernel's clock ticks per second, in which /proc reports CPU time. */
const CLOCK_TICKS = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** User + system CPU time the processes have used so far, ms; a process that is gone (or unknown) counts 0. */
export function cpuMs(...pids: Array<number | undefined>): number {
  let ticks = 0;
  for (const pid of pids) {
    if (pid === undefined) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // After the command name, which may hold spaces, in parentheses: utime and stime are fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return (ticks * 1_000) / CLOCK_TICKS;
}
