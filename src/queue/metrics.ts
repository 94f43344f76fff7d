/**
 * How a topic's metrics are laid out in its metrics hash (see keys.ts).
 *
 * Lua only ever adds vectors element-wise; the meaning of each slot lives
 * here. The first three slots are the outcome counters the settle and claim
 * scripts count themselves; the rest are histogram buckets and sums that the
 * tick observes per chunk and hands to settle as one vector:
 *
 *   [succeeded, retried, dead,
 *    lateness bucket 0..n (le LATENESS_BOUNDS_MS, then +Inf), lateness sum ms,
 *    duration bucket 0..m (le DURATION_BOUNDS_MS, then +Inf), duration sum ms]
 *
 * Buckets are per-bucket counts (not cumulative), so adding two vectors adds
 * two histograms.
 */

/** Upper bounds (ms) of the lateness buckets: dispatch time − due time. From 10 ms to 10 min; one more bucket holds the rest. */
export const LATENESS_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000] as const;

/** Upper bounds (ms) of the handler duration buckets. */
export const DURATION_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000] as const;

export { SERIES_MINUTES } from "../limits.js";

const COUNTERS = 3;
const LATENESS_AT = COUNTERS;
const LATENESS_SLOTS = LATENESS_BOUNDS_MS.length + 1;
const LATENESS_SUM_AT = LATENESS_AT + LATENESS_SLOTS;
const DURATION_AT = LATENESS_SUM_AT + 1;
const DURATION_SLOTS = DURATION_BOUNDS_MS.length + 1;
const DURATION_SUM_AT = DURATION_AT + DURATION_SLOTS;
const VECTOR_LENGTH = DURATION_SUM_AT + 1;

/** What one dispatched attempt is observed with. */
export interface Observation {
  /** When the handler started, less when the attempt was due, ms (never below 0). */
  latenessMs: number;
  /** How long the handler ran, ms. */
  durationMs: number;
}

/** A histogram: per-bucket counts (the last bucket is +Inf), their total and sum. */
export interface Histogram {
  /** Upper bound of each bucket in ms; the last is Infinity. */
  bounds: number[];
  counts: number[];
  count: number;
  sumMs: number;
}

/** Outcome counters and histograms of a span of time. */
export interface MetricsSnapshot {
  succeeded: number;
  retried: number;
  dead: number;
  lateness: Histogram;
  duration: Histogram;
}

function bucketOf(bounds: readonly number[], ms: number): number {
  // A loop, not findIndex: twice per settled outcome, and a closure each time showed in the tick's profile.
  let i = 0;
  while (i < bounds.length && ms > bounds[i]!) i++;
  return i;
}

/**
 * The histogram part of a chunk's metrics vector (its counter slots are left
 * 0: the scripts count outcomes that applied), from the observations given
 * (undefined: an outcome without one). Null when nothing was observed.
 */
export function observationVector(observations: ReadonlyArray<Observation | undefined>): number[] | null {
  let v: number[] | null = null;
  for (const o of observations) {
    if (o === undefined) continue;
    v ??= new Array<number>(VECTOR_LENGTH).fill(0);
    const lateness = Math.max(0, Math.round(o.latenessMs));
    const duration = Math.max(0, Math.round(o.durationMs));
    v[LATENESS_AT + bucketOf(LATENESS_BOUNDS_MS, lateness)]! += 1;
    v[LATENESS_SUM_AT]! += lateness;
    v[DURATION_AT + bucketOf(DURATION_BOUNDS_MS, duration)]! += 1;
    v[DURATION_SUM_AT]! += duration;
  }
  return v;
}

function histogram(v: number[], at: number, bounds: readonly number[], sumAt: number): Histogram {
  const counts = Array.from({ length: bounds.length + 1 }, (_, i) => v[at + i] ?? 0);
  return { bounds: [...bounds, Infinity], counts, count: counts.reduce((a, b) => a + b, 0), sumMs: v[sumAt] ?? 0 };
}

/** Reads a stored vector (missing or short vectors read as zeros). */
export function snapshotOf(v: number[] | null | undefined): MetricsSnapshot {
  const x = v ?? [];
  return {
    succeeded: x[0] ?? 0,
    retried: x[1] ?? 0,
    dead: x[2] ?? 0,
    lateness: histogram(x, LATENESS_AT, LATENESS_BOUNDS_MS, LATENESS_SUM_AT),
    duration: histogram(x, DURATION_AT, DURATION_BOUNDS_MS, DURATION_SUM_AT),
  };
}

/**
 * The q-quantile (0..1) of a histogram, interpolated linearly inside its
 * bucket as Prometheus' histogram_quantile does; null when it is empty. A
 * quantile in the +Inf bucket reads as the highest finite bound.
 */
export function quantile(h: Histogram, q: number): number | null {
  if (h.count === 0) return null;
  const rank = q * h.count;
  let seen = 0;
  for (let i = 0; i < h.counts.length; i++) {
    const c = h.counts[i]!;
    if (c > 0 && seen + c >= rank) {
      const upper = h.bounds[i]!;
      if (!Number.isFinite(upper)) return h.bounds[i - 1] ?? 0;
      const lower = i === 0 ? 0 : h.bounds[i - 1]!;
      return lower + ((upper - lower) * (rank - seen)) / c;
    }
    seen += c;
  }
  return h.bounds[h.bounds.length - 2] ?? 0;
}
