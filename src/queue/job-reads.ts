import { DEFAULT_LIST_LIMIT } from "../limits.js";
import { LIST_PAGE_BYTES, MAX_LIST_LIMIT } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { createdAtOfJobId, topicOfJobId } from "./ids.js";
import * as lua from "./lua.generated.js";
import { replies } from "./replies.js";
import type { JobRecord } from "./types.js";
import type { JobSnapshot, ListedJob, ListJobsOptions, ListPosition } from "./views.js";

// Reading jobs: one by id, wherever it is in its life, and pages of a
// topic's scheduled jobs or jobs in flight.

const scheduleOf = (r: JobRecord): Pick<JobSnapshot, "scheduleId" | "scheduledFor"> =>
  r.scheduleId !== undefined && r.scheduledFor !== undefined ? { scheduleId: r.scheduleId, scheduledFor: r.scheduledFor } : {};

/** What a job's own view adds from its record: the schedule that made it, an ingested webhook's headers. */
const originOf = (r: JobRecord): Pick<JobSnapshot, "scheduleId" | "scheduledFor" | "webhookHeaders"> =>
  r.webhookHeaders !== undefined ? { ...scheduleOf(r), webhookHeaders: r.webhookHeaders } : scheduleOf(r);

export async function get(ctx: QueueContext, id: string): Promise<JobSnapshot | null> {
  const topic = topicOfJobId(id);
  if (!topic) return null;
  const t = ctx.keys.topic(topic);
  const now = ctx.now();
  const done = ctx.doneKeys(now);
  const raw = await ctx.run(lua.get, [t.due, t.lease, ctx.keys.jobs, ctx.keys.meta, done.current, done.previous, t.conf, t.deadEntries], [id]);
  const { record: job, meta, due, lease, done: d, topicMaxAttempts, letter: e } = replies.get.parse(raw);
  const maxAttemptsOf = (r: JobRecord) => r.maxAttempts ?? topicMaxAttempts ?? ctx.defaults.maxAttempts;
  if (job) {
    const m = meta ?? { a: 0, e: null, d: undefined, h: undefined };
    const view: JobSnapshot = {
      id,
      topic,
      state: lease !== null ? "inflight" : "scheduled",
      dueAt: lease !== null ? (m.d ?? null) : due,
      attempts: m.a,
      maxAttempts: maxAttemptsOf(job),
      lastError: m.e ?? null,
      createdAt: job.createdAt,
      payload: job.payload,
      ...originOf(job),
      history: m.h ?? [],
    };
    if (lease !== null) view.leaseExpiresAt = lease;
    return view;
  }
  if (!d && e) {
    // Past the retention window, a dead job is still known by its dead letter.
    return {
      id,
      topic,
      state: "dead",
      dueAt: null,
      attempts: e.attempts,
      maxAttempts: maxAttemptsOf(e.job),
      lastError: e.lastError,
      createdAt: e.job.createdAt,
      payload: e.job.payload,
      finishedAt: e.failedAt,
      ...originOf(e.job),
      history: e.history,
    };
  }
  if (!d) return null;
  if (now - d.finishedAt > ctx.retentionMs) return null;
  return {
    id,
    topic,
    state: d.state,
    dueAt: null,
    attempts: d.attempts,
    maxAttempts: maxAttemptsOf(d.job),
    lastError: d.lastError,
    createdAt: d.job.createdAt,
    payload: d.job.payload,
    finishedAt: d.finishedAt,
    ...originOf(d.job),
    history: d.history,
  };
}

export async function listJobs(ctx: QueueContext, topic: string, options: ListJobsOptions): Promise<{ jobs: ListedJob[]; next: ListPosition | null }> {
  const limit = Math.min(Math.max(1, Math.floor(options.limit ?? DEFAULT_LIST_LIMIT)), MAX_LIST_LIMIT);
  const t = ctx.keys.topic(topic);
  const set = options.state === "scheduled" ? t.due : t.lease;
  const raw = await ctx.run(
    lua.listJobs,
    [set, ctx.keys.jobs, ctx.keys.meta],
    [
      options.after ? Math.round(options.after.score) : "",
      options.after?.id ?? "",
      options.from === undefined ? "-inf" : Math.round(options.from),
      options.to === undefined ? "+inf" : Math.round(options.to),
      limit,
      options.payload ? "1" : "0",
      LIST_PAGE_BYTES,
    ],
  );
  const page = replies.listJobs.parse(raw);
  const jobs: ListedJob[] = [];
  for (const { id, score, meta, record } of page.jobs) {
    const inflight = options.state === "inflight";
    const job: ListedJob = {
      id,
      topic,
      state: options.state,
      dueAt: inflight ? (meta?.d ?? null) : score,
      attempts: meta?.a ?? 0,
      lastError: meta?.e ?? null,
      createdAt: record?.createdAt ?? createdAtOfJobId(id) ?? 0,
    };
    if (inflight) job.leaseExpiresAt = score;
    if (options.payload) job.payload = record?.payload ?? null;
    if (record) Object.assign(job, scheduleOf(record));
    jobs.push(job);
  }
  const last = page.jobs.at(-1);
  return { jobs, next: page.more && last ? { score: last.score, id: last.id } : null };
}
