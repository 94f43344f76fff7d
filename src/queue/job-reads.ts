import { DEFAULT_LIST_LIMIT } from "../limits.js";
import { LIST_PAGE_BYTES, MAX_LIST_LIMIT } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { createdAtOfJobId, topicOfJobId } from "./ids.js";
import { idOfIndexMember, keyIndexRange } from "./keys.js";
import * as lua from "./lua.generated.js";
import { pipelineRead, redisCall } from "./redis.js";
import { type LabelStep, labelStep, labelStepNext } from "./labels.js";
import { replies } from "./replies.js";
import { parseRecord, type JobMeta, type JobRecord } from "./types.js";
import type { JobSnapshot, ListedJob, ListJobsOptions, ListPosition } from "./views.js";

// Reading jobs: one by id, wherever it is in its life, and pages of a
// topic's scheduled jobs or jobs in flight.

const scheduleOf = (r: JobRecord): Pick<JobSnapshot, "scheduleId" | "scheduledFor"> =>
  r.scheduleId !== undefined && r.scheduledFor !== undefined ? { scheduleId: r.scheduleId, scheduledFor: r.scheduledFor } : {};

type Origin = Pick<JobSnapshot, "scheduleId" | "scheduledFor" | "webhookHeaders" | "flowKey" | "priority" | "jobKey" | "replacements" | "labels" | "expiresAt">;

/** What a job's own view adds from its record: the schedule that made it, an ingested webhook's headers, its flow key and priority, its job key and replacements, its expiry. */
const originOf = (r: JobRecord): Origin => {
  const o: Origin = scheduleOf(r);
  if (r.webhookHeaders !== undefined) o.webhookHeaders = r.webhookHeaders;
  if (r.flowKey !== undefined) o.flowKey = r.flowKey;
  if (r.priority !== undefined) o.priority = r.priority;
  if (r.labels !== undefined) o.labels = r.labels;
  if (r.jobKey !== undefined) {
    o.jobKey = r.jobKey;
    o.replacements = r.replacements ?? 0;
  }
  if (r.expiresAt !== undefined) o.expiresAt = r.expiresAt;
  return o;
};

export async function get(ctx: QueueContext, id: string): Promise<JobSnapshot | null> {
  const topic = topicOfJobId(id);
  if (!topic) return null;
  const t = ctx.keys.topic(topic);
  const k = ctx.keys.job(id);
  const now = ctx.now();
  const raw = await ctx.run(lua.get, [t.due, t.lease, k.record, k.meta, t.conf, t.flow.fdue], [id]);
  const { record, meta, due, lease, topicMaxAttempts } = replies.get.parse(raw);
  if (!record) return null;
  const job = parseRecord(record, id);
  const maxAttemptsOf = (r: JobRecord) => r.maxAttempts ?? topicMaxAttempts ?? ctx.defaults.maxAttempts;
  if (meta?.st !== undefined) {
    // A finished job: the view composed from record and meta. A dead letter stays until the cap sweeps it;
    // a succeeded, cancelled, dropped or expired job is known for the retention window (sweep.lua may drop its keys later);
    // an expired one kept as a dead letter (lua/lib/expire.lua) reads on until its keys go, as it may be either.
    const finishedAt = meta.f ?? 0;
    if (meta.st !== "dead" && meta.st !== "expired" && now - finishedAt > ctx.retentionMs) return null;
    return {
      id,
      topic,
      state: meta.st,
      dueAt: null,
      attempts: meta.a,
      maxAttempts: maxAttemptsOf(job),
      lastError: meta.e ?? null,
      createdAt: job.createdAt,
      payload: job.payload,
      finishedAt,
      ...originOf(job),
      history: meta.h ?? [],
    };
  }
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

/**
 * The first four arguments of the listing scripts (list-jobs.lua,
 * list-dead.lua): where the previous page ended ("" "" for none) and the
 * window of scores, "-inf" / "+inf" where open.
 */
export function windowArgs(after: ListPosition | undefined, from: number | undefined, to: number | undefined): Array<string | number> {
  return [after ? Math.round(after.score) : "", after?.id ?? "", from === undefined ? "-inf" : Math.round(from), to === undefined ? "+inf" : Math.round(to)];
}

/**
 * The records (with `records`) and metas of jobs by id, in order: read-jobs.lua
 * on their keys. With records the read ends before the job whose record passes
 * `byteBudget` (the first is always read), so fewer may come back than asked;
 * with "labels" (ids of one topic) the same, but of each record only its labels
 * come back (a null payload), and none is read when the topic has no labelled job.
 */
export async function readJobs(
  ctx: QueueContext,
  ids: readonly string[],
  records: boolean | "labels",
  byteBudget: number,
): Promise<Array<{ record: JobRecord | null; meta: JobMeta | null }>> {
  if (ids.length === 0) return [];
  const mode = records === "labels" ? "L" : records ? "1" : "0";
  // With "labels" the topic's label set comes last: a topic without one has no labelled job, and no record is read.
  const labelSet = records === "labels" ? [ctx.keys.labelSet(topicOfJobId(ids[0]!) ?? "")] : [];
  const read = replies.readJobs.parse(await ctx.run(lua.readJobs, [...ctx.keys.jobPairs(ids), ...labelSet], [mode, byteBudget]));
  return read.map((r, i) => ({ record: r.record === null ? null : parseRecord(r.record, ids[i]!), meta: r.meta }));
}

/**
 * One page of a flow key's scheduled and waiting jobs in due order, from its
 * range of the keys' index (lua/lib/flow.lua's fkidx: one ZRANGE … BYLEX):
 * after the position, within the due window; exact, as the due set's pages
 * are. With the members, which cancel-jobs.lua's "key" walk takes.
 */
export async function keyPage(
  ctx: QueueContext,
  topic: string,
  flowKey: string,
  window: { after?: ListPosition | undefined; from?: number | undefined; to?: number | undefined },
  limit: number,
): Promise<{ more: boolean; jobs: Array<{ id: string; score: number }>; members: string[] }> {
  const [low, high] = keyIndexRange(flowKey, window.after, window.from, window.to);
  await ctx.ensureModel();
  const [got] = (await redisCall({ name: "ZRANGE BYLEX", repeatSafe: true }, () =>
    pipelineRead(ctx.redis, [["zrange", ctx.keys.topic(topic).flow.fkidx, low, high, "BYLEX", "LIMIT", 0, limit + 1]]),
  )) as [string[]];
  const members = got.slice(0, limit);
  // A member is "<key>\n<due, 15 digits>\n<id>": the key holds no control character.
  const jobs = members.map((m) => ({ id: idOfIndexMember(m), score: Number(m.slice(flowKey.length + 1, flowKey.length + 16)) }));
  return { more: got.length > limit, jobs, members };
}

/** The expiresAt of each of a topic's jobs that may still expire (its exp set: never started), else null. */
async function expiriesOf(ctx: QueueContext, topic: string, ids: string[]): Promise<Array<string | number | null>> {
  if (ids.length === 0) return [];
  const [scores] = (await redisCall({ name: "ZMSCORE", repeatSafe: true }, () =>
    pipelineRead(ctx.redis, [["zmscore", ctx.keys.topic(topic).exp, ...ids]]),
  )) as [Array<string | number | null>];
  return scores;
}

export async function listJobs(ctx: QueueContext, topic: string, options: ListJobsOptions): Promise<{ jobs: ListedJob[]; next: ListPosition | null }> {
  const limit = Math.min(Math.max(1, Math.floor(options.limit ?? DEFAULT_LIST_LIMIT)), MAX_LIST_LIMIT);
  const t = ctx.keys.topic(topic);
  // A topic's scheduled jobs are its due set's and, once it is shaped, its keyed jobs' (fdue): one page of both.
  const sets = options.state === "scheduled" ? [t.due, t.flow.fdue] : [t.lease];
  const byKey = options.flowKey;
  // Two phases: the page's ids from the set (a flow key's scheduled jobs: its range of the index; a label's jobs: a step
  // of its index's walk), then their metas (and records) by their keys, and the scheduled ones' expiries beside them.
  const page: { more: boolean; jobs: Array<{ id: string; score: number }>; walked?: LabelStep } =
    options.label !== undefined
      ? await labelPage(ctx, topic, options.label, { ...options, limit })
      : byKey !== undefined && options.state === "scheduled"
        ? await keyPage(ctx, topic, byKey, options, limit)
        : replies.listJobs.parse(await ctx.run(lua.listJobs, sets, [...windowArgs(options.after, options.from, options.to), limit]));
  const ids = page.jobs.map((j) => j.id);
  const [read, expiries] = await Promise.all([
    readJobs(ctx, ids, options.payload === true || "labels", LIST_PAGE_BYTES),
    options.state === "scheduled" ? expiriesOf(ctx, topic, ids) : Promise.resolve([]),
  ]);
  // Past the byte budget the page ends early; the cursor resumes after the last job read.
  const listed = page.jobs.slice(0, read.length);
  const more = page.more || listed.length < page.jobs.length;
  const jobs: ListedJob[] = [];
  const inflight = options.state === "inflight";
  for (const [i, { id, score }] of listed.entries()) {
    const { record, meta } = read[i]!;
    // Finished between the two reads: no longer in the set.
    if (meta?.st !== undefined) continue;
    // In flight, a flow key's jobs are those whose meta names it (from their claim): the page is filtered.
    if (byKey !== undefined && inflight && meta?.k !== byKey) continue;
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
    if (record?.labels !== undefined) job.labels = record.labels;
    const expiresAt = expiries[i];
    if (expiresAt !== undefined && expiresAt !== null) job.expiresAt = Number(expiresAt);
    jobs.push(job);
  }
  if (page.walked !== undefined) return { jobs, next: labelStepNext(page.walked, listed.at(-1) ?? null) };
  const last = listed.at(-1);
  return { jobs, next: more && last ? { score: last.score, id: last.id } : null };
}

/** A page of the jobs carrying a label in one state, as the other listings' pages: one step of the label's walk. */
async function labelPage(
  ctx: QueueContext,
  topic: string,
  label: string,
  o: { state: "scheduled" | "inflight"; after?: ListPosition | undefined; from?: number | undefined; to?: number | undefined; limit: number },
): Promise<{ more: boolean; jobs: Array<{ id: string; score: number }>; walked: LabelStep }> {
  const walked = await labelStep(ctx, topic, label, { after: o.after, states: [o.state], most: o.limit, from: o.from, to: o.to, prune: true });
  return { more: walked.next !== null, jobs: walked.jobs, walked };
}
