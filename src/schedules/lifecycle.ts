import { LATEST_SCHEDULE_TIME_MS } from "../limits.js";
import type { ScheduleDefinition, ScheduleState, Schedules, StoredSchedule } from "../queue/schedules.js";
import { firstAtOrAfter, timingOf } from "./occurrences.js";
import { type UnreadableField, unshowableOnWrite } from "./shown-times.js";

export { timingOf };

/** What PUT /v1/schedules/:id sets, validated: a definition but what the store derives (the anchor, the times it was written). */
export type ScheduleInput = Omit<ScheduleDefinition, "anchor" | "createdAt" | "updatedAt">;

/** Another write changed the schedule between every read and write this call tried. */
export class ScheduleConflictError extends Error {
  override name = "ScheduleConflictError";
}

/** The schedule would show a time no date can hold (e.g. an occurrence past the latest date); nothing was written. */
export class ScheduleTimeError extends Error {
  override name = "ScheduleTimeError";
  constructor(readonly fields: UnreadableField[]) {
    super(`the schedule would show times that are not dates: ${fields.map((f) => f.path).join(", ")}`);
  }
}

/** How many times a write is tried against a schedule others keep changing. */
const WRITE_TRIES = 5;

/**
 * The occurrence to fire next, from `from` on (and after the last one fired),
 * or null once the schedule has ended: past endAt, or `limit` occurrences fired.
 */
export function nextOccurrence(d: ScheduleDefinition, state: Pick<ScheduleState, "runs" | "lastRunAt">, from: number): number | null {
  if (d.limit !== undefined && state.runs >= d.limit) return null;
  return firstAtOrAfter(timingOf(d), Math.max(from, state.lastRunAt === null ? -Infinity : state.lastRunAt + 1));
}

// What decides when a schedule fires; the template, endAt and limit can change without moving its next occurrence.
const sameTiming = (a: ScheduleDefinition, b: ScheduleDefinition) =>
  a.cron === b.cron && a.every === b.every && a.timezone === b.timezone && a.startAt === b.startAt && a.anchor === b.anchor;

async function withRetries(
  store: Schedules,
  id: string,
  attempt: (old: StoredSchedule | null) => Promise<StoredSchedule | null | false>,
): Promise<StoredSchedule | null> {
  for (let i = 0; i < WRITE_TRIES; i++) {
    const done = await attempt(await store.get(id));
    if (done !== false) return done;
  }
  throw new ScheduleConflictError(`schedule ${id} changed under every one of ${WRITE_TRIES} writes; try again`);
}

/**
 * Creates or replaces a schedule. A replacement that keeps its timing keeps
 * its next occurrence (so it never fires one twice) along with its runs and
 * its paused state; a new timing takes effect from its next occurrence after now.
 * `movedFrom` is the schedule as another shard holds it, when it moves here
 * (its topic now lives on this store's shard): it counts as the old one.
 */
export async function upsertSchedule(
  store: Schedules,
  id: string,
  input: ScheduleInput,
  now: number,
  movedFrom: StoredSchedule | null = null,
): Promise<{ schedule: StoredSchedule; created: boolean }> {
  let created = false;
  const schedule = await withRetries(store, id, async (stored) => {
    // A schedule moving here from another shard goes on as it was there (runs, next occurrence, pause), at a revision of this store's.
    const old = stored ?? movedFrom;
    const sameEvery = old !== null && old.definition.every !== undefined && old.definition.every === input.every && old.definition.startAt === input.startAt;
    const anchor = input.startAt ?? (sameEvery ? old.definition.anchor : now + (input.every ?? 0));
    // What an old schedule holds past the latest date (stored before such times were refused) is not carried over.
    const createdAt = old !== null && old.definition.createdAt <= LATEST_SCHEDULE_TIME_MS ? old.definition.createdAt : now;
    const definition: ScheduleDefinition = { ...input, anchor, createdAt, updatedAt: now };
    const runs = old?.state.runs ?? 0;
    const oldLast = old?.state.lastRunAt ?? null;
    const lastRunAt = oldLast !== null && oldLast <= LATEST_SCHEDULE_TIME_MS ? oldLast : null;
    const paused = old?.state.paused ?? false;
    let next: number | null = null;
    if (!paused) {
      const kept = old !== null && sameTiming(old.definition, definition) ? old.state.next : null;
      // A next occurrence past the latest date (stored before such times were refused) is not kept: it is computed again.
      const fits =
        kept !== null &&
        kept <= LATEST_SCHEDULE_TIME_MS &&
        (definition.endAt === undefined || kept <= definition.endAt) &&
        (definition.limit === undefined || runs < definition.limit);
      next = fits ? kept : nextOccurrence(definition, { runs, lastRunAt }, now);
    }
    const rev = stored?.state.rev ?? 0;
    const state: ScheduleState = { rev: rev + 1, next, runs, lastRunAt, lastJobId: old?.state.lastJobId ?? null, paused };
    // Checked before the write: a schedule a listing could not show is never stored.
    const unshowable = unshowableOnWrite(definition, state);
    if (unshowable.length > 0) throw new ScheduleTimeError(unshowable);
    if (!(await store.write(id, rev, definition, state))) return false;
    created = old === null;
    return { id, definition, state };
  });
  return { schedule: schedule!, created };
}

/** Pauses a schedule: its occurrences are skipped until it is resumed. Null when there is none. */
export function pauseSchedule(store: Schedules, id: string): Promise<StoredSchedule | null> {
  return withRetries(store, id, async (old) => {
    if (!old) return null;
    if (old.state.paused) return old;
    const state: ScheduleState = { ...old.state, rev: old.state.rev + 1, paused: true, next: null };
    return (await store.write(id, old.state.rev, null, state)) ? { ...old, state } : false;
  });
}

/** Resumes a paused schedule from its next occurrence after now (the ones it missed are skipped). Null when there is none. */
export function resumeSchedule(store: Schedules, id: string, now: number): Promise<StoredSchedule | null> {
  return withRetries(store, id, async (old) => {
    if (!old) return null;
    if (!old.state.paused) return old;
    const state: ScheduleState = { ...old.state, rev: old.state.rev + 1, paused: false, next: nextOccurrence(old.definition, old.state, now) };
    return (await store.write(id, old.state.rev, null, state)) ? { ...old, state } : false;
  });
}
