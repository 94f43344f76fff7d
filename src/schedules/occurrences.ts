import { Cron } from "croner";
import { LATEST_SCHEDULE_TIME_MS } from "../limits.js";
import type { ScheduleDefinition } from "../queue/schedules.js";

/**
 * When a schedule fires: a cron expression (5 fields, or 6 with leading
 * seconds) read in an IANA time zone, or a fixed interval. Pure time
 * arithmetic, no Redis: the producer computes occurrences for the API, the
 * tick for firing, and both agree because both call this.
 */
export interface ScheduleTiming {
  cron?: string;
  /** Interval in ms (≥ 1,000); occurrences are `anchor + k·every`, k ≥ 0. */
  every?: number;
  /** IANA time zone the cron expression is read in. */
  timezone: string;
  /** No occurrence before this (epoch ms). */
  startAt?: number;
  /** No occurrence after this (epoch ms, inclusive). */
  endAt?: number;
  /** For `every`: the first occurrence (startAt, else one interval after the schedule was created). */
  anchor: number;
}

/** The timing part of a stored definition. */
export function timingOf(d: ScheduleDefinition): ScheduleTiming {
  const t: ScheduleTiming = { timezone: d.timezone, anchor: d.anchor };
  if (d.cron !== undefined) t.cron = d.cron;
  if (d.every !== undefined) t.every = d.every;
  if (d.startAt !== undefined) t.startAt = d.startAt;
  if (d.endAt !== undefined) t.endAt = d.endAt;
  return t;
}

// Daylight saving, as croner does it for fixed-time jobs (Vixie cron's rule):
// a local time that does not exist fires once at the first valid instant after
// the gap, one that happens twice fires once, at its first pass. With
// "no-wildcard", every expression without a wildcard or step in its seconds,
// minutes and hours (lists and ranges too, e.g. `30 2,14 * * *`) is fixed-time;
// `*/5 * * * *` is an interval job and runs through a repeated hour twice.
const cronOptions = (timezone: string) => ({ timezone, mode: "5-or-6-parts" as const, fixedTimeRule: "no-wildcard" as const });

function cronOf(expression: string, timezone: string): Cron {
  return new Cron(expression, cronOptions(timezone));
}

/** Whether `timezone` is an IANA time zone this runtime knows. */
export function isTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Why a cron expression cannot be used, or null when it can. */
export function cronProblem(expression: string): string | null {
  try {
    const c = cronOf(expression, "UTC");
    // An expression that never matches (e.g. 30 February) would be a schedule that never fires.
    if (c.nextRun(new Date(0)) === null) return "never matches a date";
    return null;
  } catch (err) {
    return (err as Error).message.replace(/^CronPattern: /, "");
  }
}

/** The first occurrence at or after `from`, or null when there is none (past endAt, or past LATEST_SCHEDULE_TIME_MS: no date shown breaks). */
export function firstAtOrAfter(t: ScheduleTiming, from: number): number | null {
  const start = Math.max(from, t.startAt ?? -Infinity);
  if (!(start <= LATEST_SCHEDULE_TIME_MS)) return null;
  let at: number | null;
  if (t.every !== undefined) {
    at = start <= t.anchor ? t.anchor : t.anchor + Math.ceil((start - t.anchor) / t.every) * t.every;
  } else {
    // croner's nextRun is strictly after its argument.
    const next = cronOf(t.cron!, t.timezone).nextRun(new Date(start - 1));
    at = next ? next.getTime() : null;
  }
  return at !== null && at <= LATEST_SCHEDULE_TIME_MS && (t.endAt === undefined || at <= t.endAt) ? at : null;
}

/** The first occurrence strictly after `after`. */
function firstAfter(t: ScheduleTiming, after: number): number | null {
  return firstAtOrAfter(t, after + 1);
}

/** The latest occurrence at or before `at` (and at or after startAt), or null. */
export function latestAtOrBefore(t: ScheduleTiming, at: number): number | null {
  const end = Math.min(at, t.endAt ?? Infinity);
  let found: number | null;
  if (t.every !== undefined) {
    found = end < t.anchor ? null : t.anchor + Math.floor((end - t.anchor) / t.every) * t.every;
  } else {
    // previousRuns is strictly before its argument.
    const prev = cronOf(t.cron!, t.timezone).previousRuns(1, new Date(end + 1))[0];
    found = prev ? prev.getTime() : null;
  }
  return found !== null && found >= (t.startAt ?? -Infinity) ? found : null;
}

/** Up to `n` occurrences from `from` on (inclusive). */
export function occurrencesFrom(t: ScheduleTiming, from: number, n: number): number[] {
  const out: number[] = [];
  let at = firstAtOrAfter(t, from);
  while (at !== null && out.length < n) {
    out.push(at);
    at = firstAfter(t, at);
  }
  return out;
}

/**
 * An instant as ISO 8601 with the offset it has in `timezone`
 * (`2027-01-04T09:00:00+01:00`; `Z` in UTC), milliseconds only when not zero.
 */
export function isoInZone(ms: number, timezone: string): string {
  const date = new Date(ms);
  const millis = ms % 1000 === 0 ? "" : `.${String(((ms % 1000) + 1000) % 1000).padStart(3, "0")}`;
  if (timezone === "UTC" || timezone === "Etc/UTC") return date.toISOString().replace(/\.\d{3}Z$/, `${millis}Z`);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      timeZoneName: "longOffset",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  // "GMT+01:00", or "GMT" for a zero offset.
  const offset = parts.timeZoneName === "GMT" ? "+00:00" : String(parts.timeZoneName).replace(/^GMT/, "");
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${millis}${offset}`;
}
