/**
 * Redis' `INFO commandstats`, read the way the benchmarks bill it: every call
 * it lists, those scripts run included (as Upstash bills them), but the
 * measurement's own (CONFIG, INFO) and the REST bridge's record-size check
 * (MEMORY USAGE before a write: Upstash neither runs nor bills it).
 */

/** Calls and server time (µs) per command name (Redis 7 lists subcommands on their own: `config|resetstat`). */
export type Commandstats = Record<string, { calls: number; usec: number }>;

export function parseCommandstats(text: string): Commandstats {
  const byCommand: Commandstats = {};
  for (const line of text.split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (m) byCommand[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return byCommand;
}

/** The measurement's own commands, and the bridge's record-size measure. */
export const isOwn = (name: string) => /^(config|info|memory)(\||$)/.test(name);

/** The calls Upstash would bill, per command name (own ones left out). */
export function billed(stats: Commandstats): Record<string, number> {
  return Object.fromEntries(
    Object.entries(stats)
      .filter(([name]) => !isOwn(name))
      .map(([name, s]) => [name, s.calls]),
  );
}

/** Every billed call. */
export const billedCalls = (stats: Commandstats) => Object.values(billed(stats)).reduce((n, c) => n + c, 0);

/** Calls per command name in `after` that were not in `before` (both cumulative). */
export function callsBetween(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, calls] of Object.entries(after)) {
    const d = calls - (before[name] ?? 0);
    if (d > 0) out[name] = d;
  }
  return out;
}
