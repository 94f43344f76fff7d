/**
 * How long Redis spent in each call of a script, from its SLOWLOG with the
 * threshold at 0 (every call logged, with the time Redis spent in it: a
 * script's whole run). The benchmarks that time calls one by one share it.
 */
import { execFileSync } from "node:child_process";

/** One command to the Redis measured (over the bridge's REST protocol, or a direct connection). */
export type Command = (args: Array<string | number>) => Promise<unknown>;

/** The digests Redis knows a script by: the bridge strips the `#!lua` flags line (leaving it empty); a first call goes out with the flagged one. */
function digestsOf(script: { source: string; sha1: string }): Set<string> {
  const stripped = script.source.slice(script.source.indexOf("\n"));
  return new Set([execFileSync("sha1sum", { input: stripped }).toString().split(" ")[0]!, script.sha1]);
}

/** Logs every call from now on, emptied. */
export async function timeEveryCall(command: Command): Promise<void> {
  await command(["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
  await command(["CONFIG", "SET", "slowlog-max-len", "100000"]);
  await command(["SLOWLOG", "RESET"]);
}

/** Milliseconds of each logged EVALSHA of `script` since timeEveryCall. */
export async function callsOf(command: Command, script: { source: string; sha1: string }): Promise<number[]> {
  const digests = digestsOf(script);
  const log = (await command(["SLOWLOG", "GET", "100000"])) as Array<[number, number, number, string[]]>;
  return log.filter((e) => e[3][0]!.toUpperCase() === "EVALSHA" && digests.has(e[3][1]!)).map((e) => e[2] / 1_000);
}

/** The q-quantile of `xs` (nearest rank). */
export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
