import { LATEST_SCHEDULE_TIME_MS } from "../limits.js";
import type { ScheduleDefinition, ScheduleState } from "../queue/schedules.js";
import { isoInZone, occurrencesFrom, timingOf } from "./occurrences.js";

/** How many upcoming occurrences a schedule's view lists. */
const NEXT_RUNS = 5;

/** 0000-01-01T00:00:00Z: the earliest instant ISO 8601 writes with four year digits. */
const EARLIEST_SHOWN_MS = -62_167_219_200_000;

/** A field of a schedule that cannot be shown, with why. */
export interface UnreadableField {
  path: string;
  message: string;
}

/** Every time a schedule's view shows, as ISO 8601 in its time zone (null where none, or where it cannot be shown). */
export interface ShownTimes {
  startAt: string | null;
  endAt: string | null;
  nextRunAt: string | null;
  nextRuns: string[];
  lastRunAt: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  /** The fields that could not be shown (they are null, or nextRuns is cut short). */
  unreadable: UnreadableField[];
}

/**
 * Renders every time of a schedule. Never throws: a stored schedule whose
 * time cannot be written as a date (one stored before the API refused such
 * times, or by hand) shows null there and names the field in `unreadable`,
 * so one bad schedule cannot break a listing. The write path refuses a
 * schedule that would have any (see {@link upsertSchedule}).
 */
export function shownTimes(d: ScheduleDefinition, st: ScheduleState): ShownTimes {
  const unreadable: UnreadableField[] = [];
  const tz = d.timezone;
  const show = (ms: number | null | undefined, path: string): string | null => {
    if (ms === null || ms === undefined) return null;
    const why = unshowable(ms, tz);
    if (why === null) return isoInZone(ms, tz);
    unreadable.push({ path, message: why });
    return null;
  };
  const nextRuns: string[] = [];
  const left = d.limit === undefined ? NEXT_RUNS : Math.min(NEXT_RUNS, d.limit - st.runs);
  if (st.next !== null && left > 0 && unshowable(st.next, tz) === null) {
    try {
      for (const [i, at] of occurrencesFrom(timingOf(d), st.next, left).entries()) {
        const shown = show(at, `nextRuns[${i}]`);
        if (shown === null) break;
        nextRuns.push(shown);
      }
    } catch (err) {
      unreadable.push({ path: "nextRuns", message: `cannot be computed: ${(err as Error).message}` });
    }
  }
  return {
    startAt: show(d.startAt, "startAt"),
    endAt: show(d.endAt, "endAt"),
    nextRunAt: show(st.next, "nextRunAt"),
    nextRuns,
    lastRunAt: show(st.lastRunAt, "lastRunAt"),
    createdAt: show(d.createdAt, "createdAt"),
    updatedAt: show(d.updatedAt, "updatedAt"),
    unreadable,
  };
}

/** Why `ms` cannot be shown in `timezone` as an ISO 8601 date that reads back as the same instant, or null when it can. */
function unshowable(ms: number, timezone: string): string | null {
  if (!Number.isFinite(ms) || ms < EARLIEST_SHOWN_MS || ms > LATEST_SCHEDULE_TIME_MS)
    return `${ms} ms is not a time between 0000-01-01 and ${new Date(LATEST_SCHEDULE_TIME_MS).toISOString()}`;
  try {
    const text = isoInZone(ms, timezone);
    if (Date.parse(text) !== ms) return `${ms} ms in ${timezone} is ${JSON.stringify(text)}, which is not a date ISO 8601 readers take`;
    return null;
  } catch (err) {
    return `${ms} ms cannot be written as a date in ${timezone}: ${(err as Error).message}`;
  }
}

/**
 * The fields of a schedule about to be written whose times could not be
 * shown, each named by the request field that makes it: the view's
 * next runs come from the timing (`startAt`, else `every` or `cron`).
 */
export function unshowableOnWrite(d: ScheduleDefinition, st: ScheduleState): UnreadableField[] {
  const timing = d.startAt !== undefined ? "startAt" : d.every !== undefined ? "every" : "cron";
  const seen = new Set<string>();
  const out: UnreadableField[] = [];
  for (const u of shownTimes(d, st).unreadable) {
    const path = u.path === "startAt" || u.path === "endAt" ? u.path : timing;
    if (seen.has(path)) continue;
    seen.add(path);
    out.push({ path, message: `makes a time that cannot be shown as a date (${u.path}: ${u.message})` });
  }
  return out;
}
