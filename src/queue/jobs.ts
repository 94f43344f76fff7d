import { cutErrorText } from "../error-text.js";
import { MAX_BATCH } from "./bounds.js";
import { contentHash } from "./content-keys.js";
import type { QueueContext } from "./context.js";
import { type Candidates, cappedTopicPart, type DropWants, readCandidates } from "./enqueue-caps.js";
import { FlowKeyFullError, TopicContendedError, TopicFullError, TopicLimitError } from "./errors.js";
import { newJobId, topicOfJobId } from "./ids.js";
import { flowKeyList, keyIndexMember, scheduledMember } from "./keys.js";
import * as lua from "./lua.generated.js";
import { observationVector } from "./metrics.js";
import { decideAfterFailure } from "./policy/backoff.js";
import { pipeline, redisCall } from "./redis.js";
import { type CapKinds, registrations } from "./registrations.js";
import { replies } from "./replies.js";
import { prioritizedTopics, shapedTopics } from "./shaped-topics.js";
import { fitRequest } from "./request-size.js";
import { topicSettings } from "./topic-admin.js";
import { parseRecord, type JobRecord } from "./types.js";
import type { EnqueueInput, EnqueueResult, LeaseExtension, NackFailure, Outcome, SettleOptions } from "./views.js";

// A job's way through the queue: enqueued, claimed under a lease (a pull
// consumer's may be extended), settled (acked, retried or dead-lettered). Each step is one Lua script, or, for the
// single enqueue without an idempotency key of a topic this isolate registered
// and found uncapped within the last minute, one pipeline whose order keeps it safe.
// A topic with a maxLength or caps on its flow keys (maxKeyLength) is checked
// by the enqueue script; one that drops its oldest jobs has their ids read
// first (enqueue-caps.ts), as the script must be given the keys it writes.

/** Times an enqueue reads a dropOldest topic's oldest jobs and calls the script; past it, other calls kept changing them first (nothing stored). */
const DROP_ROUNDS = 10;

interface PlannedJob {
  id: string;
  dueAt: number;
  record: string;
  topic: string;
  flowKey?: string;
}

/** A batch as enqueue.lua takes it, before the capped topics' part: its jobs' keys and arguments. */
interface PlannedBatch {
  keys: string[];
  args: Array<string | number>;
  jobs: PlannedJob[];
  /** Topics the call registers (flag "r"). */
  newTopics: Set<string>;
  /** The labels' part (enqueue.lua's last): per label of a topic, its keys and the numbers of its jobs. */
  labelKeys: string[];
  labelArgs: Array<string | number>;
}

export async function enqueueBatch(ctx: QueueContext, inputs: EnqueueInput[]): Promise<EnqueueResult[]> {
  if (inputs.length === 0) return [];
  if (inputs.length > MAX_BATCH) throw new RangeError(`a batch holds at most ${MAX_BATCH} jobs`);
  const now = ctx.now();
  const seen = registrations(ctx.keys.prefix);
  // Every topic but those this isolate registered and found uncapped, without content dedup, within the window has its conf read.
  const checked = [...new Set(inputs.map((i) => i.topic))].filter((t) => seen.capOf(t, now) !== "none" || seen.contentDedupOf(t, now) !== 0);
  const batch = planBatch(ctx, inputs, now, await contentKeys(ctx, inputs, new Set(checked), now));
  const single = inputs.length === 1 ? inputs[0]! : undefined;
  if (single && single.idempotencyKey === undefined && checked.length === 0 && !single.labels?.length && markedFor(ctx, single)) {
    // Before the write: the EVAL form counted is larger than the pipeline's request.
    scriptRequest(ctx, batch, [], new Map(), now);
    return [await enqueuePipelined(ctx, batch.jobs[0]!, single)];
  }
  // A topic known to drop its oldest jobs has them read before the first call, which then needs no second.
  let wanted = initialDropWants(
    batch,
    checked.filter((t) => seen.capOf(t, now) === "dropOldest"),
    (t) => seen.kindsOf(t, now),
  );
  const candidates = new Map<string, Candidates>();
  // A finished-mode key is no guard against a repeat after its job ended, which a lost reply can precede.
  const keyed = inputs.every((i) => i.idempotencyKey !== undefined && i.idempotencyUntil !== "finished");
  let reads = 0;
  for (let round = 1; ; round++) {
    if (wanted.size > 0) await readCandidates(ctx, wanted, reads++, candidates);
    const { keys, args } = scriptRequest(ctx, batch, checked, candidates, now);
    const reply = replies.enqueue.parse(await ctx.run(lua.enqueue, keys, args, { keyed }), inputs.length);
    if (reply.result === "topic-limit") throw new TopicLimitError(reply.count, reply.limit);
    if (reply.result === "topic-full") throw new TopicFullError(reply.topic, reply.pending, reply.maxLength, reply.adding);
    if (reply.result === "flow-key-full") throw new FlowKeyFullError(reply.topic, reply.flowKey, reply.pending, reply.maxKeyLength, reply.adding);
    if (reply.result === "few-candidates") {
      if (round === DROP_ROUNDS) {
        throw new TopicContendedError(
          `topic ${reply.short[0]!.topic} drops its oldest jobs, and concurrent calls changed them ${DROP_ROUNDS} times while this request read them; nothing was stored: retry`,
        );
      }
      wanted = new Map();
      for (const { topic, flowKey, count } of reply.short) {
        const w = wanted.get(topic) ?? { topic: 0, keys: new Map<string, number>() };
        if (flowKey === "") w.topic = count;
        else w.keys.set(flowKey, count);
        wanted.set(topic, w);
      }
      continue;
    }
    for (const input of inputs) noteMarks(ctx, input);
    for (const { topic, cap, kinds, contentDedupMs } of reply.caps) {
      if (batch.newTopics.has(topic)) seen.noteRegistered(topic, now, cap, kinds, contentDedupMs);
      else seen.noteCap(topic, cap, kinds, contentDedupMs);
    }
    return batch.jobs.map((j, i) => ({ ...reply.jobs[i]!, topic: j.topic }));
  }
}

/** What a call may drop from each of `dropping` (topics known to drop their oldest): as many as it adds to the topic, and to each flow key. */
function initialDropWants(batch: PlannedBatch, dropping: string[], kindsOf: (topic: string) => CapKinds): Map<string, DropWants> {
  const wanted = new Map<string, DropWants>();
  for (const topic of dropping) {
    const kinds = kindsOf(topic);
    const jobs = batch.jobs.filter((j) => j.topic === topic);
    const keys = new Map<string, number>();
    if (kinds.keys) for (const j of jobs) if (j.flowKey !== undefined) keys.set(j.flowKey, (keys.get(j.flowKey) ?? 0) + 1);
    wanted.set(topic, { topic: kinds.topic ? jobs.length : 0, keys });
  }
  return wanted;
}

/**
 * Each job's content key (undefined: none): for a job of a checked topic not known to be without content dedup, whose
 * script call then reads whether the topic dedups by content. A job with an idempotency key gets one too: the client
 * gives every enqueue a key of its own.
 */
async function contentKeys(ctx: QueueContext, inputs: EnqueueInput[], checked: Set<string>, now: number): Promise<Array<string | undefined>> {
  const seen = registrations(ctx.keys.prefix);
  return Promise.all(
    inputs.map(async (input) =>
      input.contentDedup !== false && checked.has(input.topic) && seen.contentDedupOf(input.topic, now) !== 0
        ? ctx.keys.contentDedup(input.topic, await contentHash(input))
        : undefined,
    ),
  );
}

/** The jobs' ids, records, keys and arguments (see enqueue.lua's header). */
function planBatch(ctx: QueueContext, inputs: EnqueueInput[], now: number, contentKeyOf: Array<string | undefined>): PlannedBatch {
  const seen = registrations(ctx.keys.prefix);
  const keys = [ctx.keys.topics, ctx.keys.topicIndex];
  const args: Array<string | number> = [inputs.length, ctx.idempotencyWindowMs, ctx.maxTopics];
  const newTopics = new Set<string>();
  const jobs: PlannedJob[] = [];
  for (const [i, input] of inputs.entries()) {
    const id = newJobId(input.topic, now, ctx.shard);
    const dueAt = dueOf(input, now);
    const record = recordOf(input);
    const t = ctx.keys.topic(input.topic);
    keys.push(
      t.due,
      input.idempotencyKey !== undefined ? ctx.keys.idempotency(input.topic, input.idempotencyKey) : t.due,
      t.purged,
      ctx.keys.job(id).record,
      t.lease,
      t.done,
      t.deadAt,
      t.flow.fdue,
      t.flow.fsched,
      t.conf,
      t.flow.fkidx,
      contentKeyOf[i] ?? t.due,
      t.exp,
    );
    let flags = input.idempotencyKey === undefined ? "-" : input.idempotencyUntil === "finished" ? "if" : "i";
    if (contentKeyOf[i] !== undefined) flags += "c";
    if (isKeyed(input)) flags += "k";
    if (!seen.isRegistered(input.topic, now)) {
      flags += "r";
      newTopics.add(input.topic);
    }
    const job: PlannedJob = { id, dueAt, record: JSON.stringify(record), topic: input.topic };
    if (input.flowKey !== undefined) job.flowKey = input.flowKey;
    jobs.push(job);
    args.push(
      id,
      dueAt,
      job.record,
      input.topic,
      flags,
      input.flowKey ?? "",
      input.priority ?? 0,
      input.expiresAt === undefined ? "" : Math.round(input.expiresAt),
    );
  }
  return { keys, args, jobs, newTopics, ...labelPart(ctx, inputs) };
}

/** enqueue.lua's labels' part: a group per label of a topic, with the numbers (from 1) of the jobs carrying it. */
function labelPart(ctx: QueueContext, inputs: EnqueueInput[]): { labelKeys: string[]; labelArgs: Array<string | number> } {
  const groups = new Map<string, { topic: string; label: string; jobs: number[] }>();
  for (const [i, input] of inputs.entries()) {
    for (const label of new Set(input.labels)) {
      const key = ctx.keys.labelIndex(input.topic, label);
      const group = groups.get(key) ?? { topic: input.topic, label, jobs: [] };
      group.jobs.push(i + 1);
      groups.set(key, group);
    }
  }
  const labelKeys: string[] = [];
  const labelArgs: Array<string | number> = [groups.size];
  for (const [key, g] of groups) {
    labelKeys.push(key, ctx.keys.labelSet(g.topic));
    labelArgs.push(g.label, g.jobs.length, ...g.jobs);
  }
  return { labelKeys, labelArgs };
}

/** When a new job is due: at `runAt` (a time past means now), else `delayMs` from now. */
export function dueOf(input: Pick<EnqueueInput, "runAt" | "delayMs">, now: number): number {
  return input.runAt !== undefined ? Math.max(now, Math.round(input.runAt)) : now + Math.max(0, Math.round(input.delayMs ?? 0));
}

/** A job's record as stored (see JobRecord), its fields in the order given. */
export function recordOf(input: EnqueueInput): Omit<JobRecord, "createdAt"> {
  // No createdAt: it is the time in the id's ULID, minted from `now` (parseRecord fills it in).
  // Labels first: Lua reads them from the record's start without decoding the payload (lua/lib/labels.lua).
  const record: Omit<JobRecord, "createdAt"> = input.labels?.length
    ? { labels: [...new Set(input.labels)], payload: input.payload }
    : { payload: input.payload };
  if (input.maxAttempts !== undefined) record.maxAttempts = input.maxAttempts;
  if (input.backoff !== undefined) record.backoff = input.backoff;
  if (input.target !== undefined) record.target = input.target;
  if (input.timeoutMs !== undefined) record.timeoutMs = input.timeoutMs;
  if (input.idempotencyKey !== undefined) record.idempotencyKey = input.idempotencyKey;
  if (input.webhookHeaders !== undefined) record.webhookHeaders = input.webhookHeaders;
  if (input.flowKey !== undefined) record.flowKey = input.flowKey;
  if (input.priority) record.priority = input.priority;
  if (input.expiresAt !== undefined) record.expiresAt = Math.round(input.expiresAt);
  return record;
}

/**
 * The script call's keys and arguments: the batch's, then each checked topic's part with its candidates
 * (enqueue-caps.ts). Throws RequestTooLargeError past the request budget, before anything is sent.
 */
function scriptRequest(ctx: QueueContext, batch: PlannedBatch, checked: string[], candidates: Map<string, Candidates>, now: number) {
  const keys = [...batch.keys];
  const args = [...batch.args, now, checked.length];
  for (const topic of checked) {
    const part = cappedTopicPart(ctx, topic, candidates.get(topic));
    keys.push(...part.keys);
    args.push(...part.args);
  }
  // Last: the labels' part, found by its start (enqueue.lua's last argument).
  keys.push(...batch.labelKeys);
  const labelsAt = args.length + 1;
  args.push(...batch.labelArgs, labelsAt);
  fitRequest(ctx.requestBudgetBytes, "batch", lua.enqueue, keys, args);
  return { keys, args };
}

/**
 * The steady-traffic path: one job, no idempotency key and no label (a labelled job's enqueue checks its labels'
 * indexes, lua/lib/labels.lua), of a topic this isolate registered and found uncapped (and, for a keyed job, knows to
 * carry the marks it needs: markedFor), in one request and no script: three commands, four for a keyed job, five with
 * a flow key (its key's index), two more for a job with an expiry (its topic's mark and exp set). The order makes it
 * safe without one: the record exists before its id is due, the id is due (a keyed job's: known by id, then in its
 * key's scheduled set and index) before the topic index hears of it, so a claim between two of the commands either
 * misses the job (and the index then still leads to it) or takes it (and the index entry that follows is merely
 * early, which costs one empty claim). A keyed job needs its topic shaped, or plain claims would not see it: the
 * topic is, since this isolate learned so, as the marks are never taken away (a deleted topic keeps them).
 */
async function enqueuePipelined(ctx: QueueContext, job: PlannedJob, input: EnqueueInput): Promise<EnqueueResult> {
  const t = ctx.keys.topic(job.topic);
  const index = ["zadd", ctx.keys.topicIndex, "lt", job.dueAt, job.topic];
  const record = ["set", ctx.keys.job(job.id).record, job.record];
  const keyed = isKeyed(input);
  // A job of the default lane (a priority, no key) is not in the keys' index.
  const indexed = input.flowKey !== undefined ? [["zadd", t.flow.fkidx, 0, keyIndexMember(input.flowKey, job.dueAt, job.id)]] : [];
  const commands = keyed
    ? [
        record,
        ["zadd", t.flow.fdue, job.dueAt, job.id],
        ["zadd", t.flow.fsched, job.dueAt, scheduledMember(input.flowKey ?? "", input.priority ?? 0, job.id)],
        ...indexed,
        index,
      ]
    : [record, ["zadd", t.due, job.dueAt, job.id], index];
  if (input.expiresAt !== undefined) {
    // Marked and indexed before the job is due: a claim that sees the job sees the mark, and leaves the index as it starts it.
    commands.splice(1, 0, ["hset", t.conf, "expiring", "1"], ["zadd", t.exp, Math.round(input.expiresAt), job.id]);
  }
  await ctx.ensureModel();
  // Not repeat-safe: a repeat after a lost reply re-creates a job claimed (or finished) meanwhile.
  await redisCall({ name: `enqueue pipeline (${commands.map((c) => String(c[0]).toUpperCase()).join(", ")})`, repeatSafe: false }, () =>
    pipeline(ctx.redis, commands),
  );
  return { id: job.id, topic: job.topic, dueAt: job.dueAt, deduplicated: false };
}

/**
 * Whether the job's topic is known to carry the marks the job needs (a keyed job: shaped; one with a priority:
 * prioritized too), which the pipeline does not write: the script does (enqueue.lua), and no script takes them away.
 */
function markedFor(ctx: QueueContext, input: EnqueueInput): boolean {
  if (!isKeyed(input)) return true;
  if (!shapedTopics(ctx.keys.prefix).has(input.topic)) return false;
  return !input.priority || prioritizedTopics(ctx.keys.prefix).has(input.topic);
}

/** A script stored the job, marking its topic as the job needs (enqueue.lua, upsert.lua): the topic's next keyed jobs may take the pipeline. */
export function noteMarks(ctx: QueueContext, input: EnqueueInput): void {
  if (isKeyed(input)) shapedTopics(ctx.keys.prefix).add(input.topic);
  if (input.priority) prioritizedTopics(ctx.keys.prefix).add(input.topic);
}

/** A job a shaped topic serves by its key's turns: it has a flow key or a priority (lua/lib/flow.lua). */
export function isKeyed(input: EnqueueInput): boolean {
  return input.flowKey !== undefined || (input.priority ?? 0) > 0;
}

export async function settle(
  ctx: QueueContext,
  topic: string,
  outcomes: Outcome[],
  options: SettleOptions = {},
): Promise<Array<{ id: string; applied: boolean }>> {
  if (outcomes.length === 0) return [];
  if (outcomes.length > MAX_BATCH) throw new RangeError(`settle at most ${MAX_BATCH} outcomes at once`);
  const now = options.now ?? ctx.now();
  const t = ctx.keys.topic(topic);
  const observed = observationVector(outcomes.map((o) => o.observed));
  const indexMode = { retries: "r", due: "c", none: "" }[options.index ?? "retries"];
  const args: Array<string | number> = [
    now,
    observed ? JSON.stringify(observed) : "",
    outcomes.length,
    topic,
    indexMode,
    ctx.retentionMs,
    Math.max(0, Math.round(options.leadMs ?? 0)),
    shapedTopics(ctx.keys.prefix).has(topic) ? "1" : "",
  ];
  for (const o of outcomes) {
    args.push(
      o.id,
      o.attempt,
      o.kind,
      o.kind === "retry" ? Math.round(o.at) : 0,
      o.kind === "ack" ? "" : cutErrorText(o.error),
      o.startedAt === undefined ? "" : Math.round(o.startedAt),
      o.observed === undefined ? "" : Math.max(0, Math.round(o.observed.durationMs)),
      o.httpStatus ?? "",
    );
  }
  const raw = await ctx.run(
    lua.settle,
    [t.due, t.lease, t.metrics, t.deadAt, t.done, ctx.keys.topicIndex, ...flowKeyList(t.flow), ...ctx.keys.jobPairs(outcomes.map((o) => o.id))],
    args,
  );
  const applied = replies.settle.parse(raw, outcomes.length);
  return outcomes.map((o, i) => ({ id: o.id, applied: applied[i]! }));
}

export async function ack(ctx: QueueContext, id: string, attempt: number): Promise<"acked" | "stale"> {
  const topic = topicOfJobId(id);
  if (!topic) return "stale";
  const [r] = await settle(ctx, topic, [{ id, attempt, kind: "ack" }], { index: "none" });
  return r!.applied ? "acked" : "stale";
}

export async function nack(ctx: QueueContext, id: string, attempt: number, failure: NackFailure): Promise<"retry" | "dead" | "stale"> {
  const topic = topicOfJobId(id);
  if (!topic) return "stale";
  await ctx.ensureModel();
  const [recordText, { settings }] = await Promise.all([
    redisCall({ name: "GET", repeatSafe: true }, () => ctx.redis.get<string>(ctx.keys.job(id).record)),
    topicSettings(ctx, topic),
  ]);
  if (recordText === null) return "stale";
  const record = parseRecord(recordText, id);
  const now = ctx.now();
  const decision = decideAfterFailure({
    attempt,
    maxAttempts: record.maxAttempts ?? settings.maxAttempts,
    backoff: record.backoff ?? settings.backoff,
    now,
    ...(failure.permanent !== undefined ? { permanent: failure.permanent } : {}),
    ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
  });
  const outcome: Outcome =
    decision.kind === "retry" ? { id, attempt, kind: "retry", at: decision.at, error: failure.error } : { id, attempt, kind: "dead", error: failure.error };
  const [r] = await settle(ctx, topic, [outcome], { now, index: "none" });
  return r!.applied ? decision.kind : "stale";
}

export async function extend(ctx: QueueContext, id: string, attempt: number, leaseMs: number): Promise<LeaseExtension> {
  const topic = topicOfJobId(id);
  if (!topic) return { result: "not-found" };
  const t = ctx.keys.topic(topic);
  const k = ctx.keys.job(id);
  const raw = await ctx.run(lua.extendLease, [t.lease, k.meta, t.conf, k.record], [id, attempt, ctx.now(), Math.round(leaseMs)]);
  return replies.extendLease.parse(raw);
}
