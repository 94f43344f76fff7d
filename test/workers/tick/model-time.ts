/**
 * The model-based tick test's time: where a run's clock starts, how a time
 * is shown, and stretches of time (model.ts and model-flow.ts share them).
 */

/** A minute boundary (in 2030): cron minute k is scheduled at BASE + k·60 s. */
export const BASE = 31_666_666 * 60_000;

/** A time as seconds after BASE. */
export const rel = (t: number) => (Number.isFinite(t) ? `+${((t - BASE) / 1000).toFixed(3)}s` : String(t));

/** [from, to): a stretch of virtual time. */
export type Interval = [number, number];

/** Sorted, overlapping and touching stretches joined, empty ones dropped. */
export function merge(intervals: Interval[]): Interval[] {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out: Interval[] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** The longest stretch of [from, to) outside `blocked` (merged), and where it is. */
export function longestFree(blocked: Interval[], from: number, to: number): { length: number; at: Interval | null } {
  let best = { length: 0, at: null as Interval | null };
  let cursor = from;
  const take = (a: number, b: number) => {
    if (b - a > best.length) best = { length: b - a, at: [a, b] };
  };
  for (const [a, b] of blocked) {
    if (b <= cursor) continue;
    if (a >= to) break;
    if (a > cursor) take(cursor, Math.min(a, to));
    cursor = Math.max(cursor, b);
    if (cursor >= to) break;
  }
  if (cursor < to) take(cursor, to);
  return best;
}
