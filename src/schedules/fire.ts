import { MAIN_SHARD, newJobId } from "../queue/ids.js";
import type { Firing, Schedules, StoredSchedule } from "../queue/schedules.js";
import type { JobRecord } from "../queue/types.js";
import { nextOccurrence, timingOf } from "./lifecycle.js";
import { latestAtOrBefore } from "./occurrences.js";

/**
 * The firing of a due schedule at `now`: its job for the occurrence it is at
 * or, when that was missed by more than the schedule's grace (an outage, a
 * tick that did not run), one job for the latest occurrence missed, so a
 * schedule never piles up; then its next occurrence after that one. The
 * job's id names `shard`, the shard the schedule is on (where the job is stored).
 */
export function planFiring(s: StoredSchedule, now: number, shard: string = MAIN_SHARD): Firing {
  const d = s.definition;
  const at = s.state.next!;
  const occurrence = now - at > d.grace ? Math.max(at, latestAtOrBefore(timingOf(d), now) ?? at) : at;
  const runs = s.state.runs + 1;
  const jobId = newJobId(d.job.topic, now, shard);
  const record: JobRecord = { payload: d.job.payload, createdAt: now, scheduleId: s.id, scheduledFor: occurrence };
  if (d.job.maxAttempts !== undefined) record.maxAttempts = d.job.maxAttempts;
  if (d.job.backoff !== undefined) record.backoff = d.job.backoff;
  if (d.job.target !== undefined) record.target = d.job.target;
  if (d.job.timeoutMs !== undefined) record.timeoutMs = d.job.timeoutMs;
  return {
    id: s.id,
    read: s.state,
    jobId,
    record: JSON.stringify(record),
    occurrence,
    topic: d.job.topic,
    state: { ...s.state, runs, lastRunAt: occurrence, lastJobId: jobId, next: nextOccurrence(d, { runs, lastRunAt: occurrence }, occurrence + 1) },
  };
}

/** What one {@link fireDueSchedules} did. */
export interface FireReport {
  /** Jobs stored, with their topics (due now: claim them at once). */
  jobs: Array<{ id: string; topic: string; scheduleId: string; occurrence: number }>;
  /** Schedules that changed since they were read: their next look finds them as they are now. */
  fenced: number;
  /** The earliest occurrence still to fire, or null. */
  nextAt: number | null;
  /** Redis calls made. */
  calls: number;
}

/**
 * Fires every schedule whose occurrence has come: reads them, plans each
 * firing and stores them in one fenced call per batch, so an overlapping tick,
 * a retried call or an upsert in between never stores a second job for an
 * occurrence. `maxCalls` bounds the Redis calls (two per batch of up to 100).
 */
export async function fireDueSchedules(store: Schedules, now: number, maxCalls = 6): Promise<FireReport> {
  const report: FireReport = { jobs: [], fenced: 0, nextAt: null, calls: 0 };
  while (report.calls + 2 <= maxCalls) {
    const due = await store.due(now);
    report.calls++;
    if (due.schedules.length === 0) break;
    const firings = due.schedules.map((s) => planFiring(s, now, store.shard));
    const r = await store.fire(firings);
    report.calls++;
    r.fired.forEach((ok, i) => {
      const f = firings[i]!;
      if (ok) report.jobs.push({ id: f.jobId, topic: f.topic, scheduleId: f.id, occurrence: f.occurrence });
      else report.fenced++;
    });
    report.nextAt = r.nextAt;
    if (!due.more) break;
  }
  return report;
}
