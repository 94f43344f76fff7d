import { cutErrorText } from "../error-text.js";
import { FLOW_PROMOTE_BATCH } from "../limits.js";
import { CLAIM_CANDIDATES, MAX_BATCH } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { TopicLimitError } from "./errors.js";
import { newJobId, topicOfJobId } from "./ids.js";
import { flowKeyList, scheduledMember } from "./keys.js";
import * as lua from "./lua.generated.js";
import { observationVector } from "./metrics.js";
import { decideAfterFailure } from "./policy/backoff.js";
import { migrateOrphans } from "./model.js";
import { pipeline, pipelineRead, redisCall } from "./redis.js";
import { registrations } from "./registrations.js";
import { replies } from "./replies.js";
import { shapedTopics } from "./shaped-topics.js";
import { fitRequest } from "./request-size.js";
import { topicSettings } from "./topic-admin.js";
import { decodeTopicConf } from "./topics.js";
import { parseRecord, type JobRecord } from "./types.js";
import type { ClaimedJob, ClaimOptions, ClaimResult, EnqueueInput, EnqueueResult, NackFailure, Outcome, SettleOptions } from "./views.js";

// A job's way through the queue: enqueued, claimed under a lease, settled
// (acked, retried or dead-lettered). Each step is one Lua script, or, for the
// single enqueue of a known topic, one pipeline whose order keeps it safe.

/** A lease outlasts the handler's timeout by this much, so a slow settle is not mistaken for a dead worker. */
const LEASE_MARGIN_MS = 30_000;

export async function enqueueBatch(ctx: QueueContext, inputs: EnqueueInput[]): Promise<EnqueueResult[]> {
  if (inputs.length === 0) return [];
  if (inputs.length > MAX_BATCH) throw new RangeError(`a batch holds at most ${MAX_BATCH} jobs`);
  const now = ctx.now();
  const seen = registrations(ctx.keys.prefix);
  const keys = [ctx.keys.topics, ctx.keys.topicIndex];
  const args: Array<string | number> = [inputs.length, ctx.idempotencyWindowMs, ctx.maxTopics];
  const planned: Array<{ topic: string }> = [];
  const newTopics = new Set<string>();
  const jobs: Array<{ id: string; dueAt: number; record: string; topic: string }> = [];
  for (const input of inputs) {
    const id = newJobId(input.topic, now, ctx.shard);
    const dueAt = input.runAt !== undefined ? Math.max(now, Math.round(input.runAt)) : now + Math.max(0, Math.round(input.delayMs ?? 0));
    // No createdAt: it is the time in the id's ULID, minted from `now` (parseRecord fills it in).
    const record: Omit<JobRecord, "createdAt"> = { payload: input.payload };
    if (input.maxAttempts !== undefined) record.maxAttempts = input.maxAttempts;
    if (input.backoff !== undefined) record.backoff = input.backoff;
    if (input.target !== undefined) record.target = input.target;
    if (input.timeoutMs !== undefined) record.timeoutMs = input.timeoutMs;
    if (input.idempotencyKey !== undefined) record.idempotencyKey = input.idempotencyKey;
    if (input.webhookHeaders !== undefined) record.webhookHeaders = input.webhookHeaders;
    const keyed = isKeyed(input);
    if (input.flowKey !== undefined) record.flowKey = input.flowKey;
    if (input.priority) record.priority = input.priority;
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
    );
    let flags = input.idempotencyKey !== undefined ? "i" : "-";
    if (keyed) flags += "k";
    if (!seen.isRegistered(input.topic, now)) {
      flags += "r";
      newTopics.add(input.topic);
    }
    jobs.push({ id, dueAt, record: JSON.stringify(record), topic: input.topic });
    args.push(id, dueAt, jobs[jobs.length - 1]!.record, input.topic, flags, input.flowKey ?? "", input.priority ?? 0);
    planned.push({ topic: input.topic });
  }
  fitRequest(ctx.requestBudgetBytes, "batch", lua.enqueue, keys, args); // before either write below: the EVAL form counted is larger than the pipeline's request
  const only = jobs[0]!;
  if (inputs.length === 1 && inputs[0]!.idempotencyKey === undefined && newTopics.size === 0) {
    await enqueueOne(ctx, only, inputs[0]!);
    return [{ id: only.id, topic: only.topic, dueAt: only.dueAt, deduplicated: false }];
  }
  const reply = replies.enqueue.parse(await ctx.run(lua.enqueue, keys, args, { keyed: inputs.every((i) => i.idempotencyKey !== undefined) }));
  if (reply.result === "topic-limit") throw new TopicLimitError(reply.count, reply.limit);
  for (const t of newTopics) seen.noteRegistered(t, now);
  // enqueue.lua marked the topics of keyed jobs shaped: their claims take the shaped path at once.
  for (const input of inputs) if (isKeyed(input)) shapedTopics(ctx.keys.prefix).add(input.topic);
  return planned.map((p, i) => ({ ...reply.jobs[i]!, topic: p.topic }));
}

/**
 * The steady-traffic path: one job, no idempotency key, of a topic this
 * isolate registered, in one request and no script: three commands, five for
 * a keyed job. The order makes it safe without one: the record exists before
 * its id is due, the id is due (a keyed job's: known by id, its topic marked
 * shaped, then in its key's scheduled set) before the topic index hears of
 * it, so a claim between two of the commands either misses the job (and the
 * index then still leads to it) or takes it (and the index entry that follows
 * is merely early, which costs one empty claim). A keyed job's topic is
 * marked shaped every time, before its key's set names the job: a topic
 * deleted meanwhile (by another isolate) is shaped again, never left holding
 * keyed jobs its plain claims would not see.
 */
async function enqueueOne(ctx: QueueContext, job: { id: string; dueAt: number; record: string; topic: string }, input: EnqueueInput): Promise<void> {
  const t = ctx.keys.topic(job.topic);
  const index = ["zadd", ctx.keys.topicIndex, "lt", job.dueAt, job.topic];
  const record = ["set", ctx.keys.job(job.id).record, job.record];
  const keyed = isKeyed(input);
  const commands = keyed
    ? [
        record,
        ["zadd", t.flow.fdue, job.dueAt, job.id],
        ["hset", t.conf, "shaped", "1"],
        ["zadd", t.flow.fsched, job.dueAt, scheduledMember(input.flowKey ?? "", input.priority ?? 0, job.id)],
        index,
      ]
    : [record, ["zadd", t.due, job.dueAt, job.id], index];
  await ctx.ensureModel();
  // Not repeat-safe: a repeat after a lost reply re-creates a job claimed (or finished) meanwhile.
  await redisCall({ name: keyed ? "enqueue pipeline (SET, ZADD, HSET, ZADD, ZADD)" : "enqueue pipeline (SET, ZADD, ZADD)", repeatSafe: false }, () =>
    pipeline(ctx.redis, commands),
  );
  if (keyed) shapedTopics(ctx.keys.prefix).add(job.topic);
}

/** A job a shaped topic serves by its key's turns: it has a flow key or a priority (lua/lib/flow.lua). */
function isKeyed(input: EnqueueInput): boolean {
  return input.flowKey !== undefined || (input.priority ?? 0) > 0;
}

export async function claim(ctx: QueueContext, topic: string, options: ClaimOptions): Promise<ClaimResult> {
  const max = Number.isFinite(options.max) ? Math.min(Math.max(0, Math.floor(options.max)), MAX_BATCH) : 0;
  const now = options.now ?? ctx.now();
  const mode = options.mode ?? "push";
  const lead = Math.max(0, Math.floor(options.leadMs ?? 0));
  const asked: ClaimAsk = { now, max, mode, lead, leaseMs: options.leaseMs };
  await ctx.ensureModel();
  const shaped = shapedTopics(ctx.keys.prefix);
  let requests = 2;
  let reply = shaped.has(topic) ? undefined : replies.claim.parse(await claimPlain(ctx, topic, asked));
  // A shaped topic answers a plain claim with nothing done: claim it as one.
  if (reply === undefined || reply.heldBy === "shaped") {
    if (reply) requests += 2;
    shaped.add(topic);
    reply = replies.claim.parse(await claimShaped(ctx, topic, { ...asked, lead: 0 }));
  }
  const { jobs, leaseDeadline, conf, sweepDone, sweepDead, orphans, heldBy, ...rest } = reply;
  if (conf.shaped === "1") shaped.add(topic);
  if (sweepDone.length + sweepDead.length > 0) {
    await sweep(ctx, topic, now, sweepDone, sweepDead);
    requests++;
  }
  if (orphans.length > 0) {
    await migrateOrphans(ctx, topic, orphans);
    requests++;
  }
  return {
    // A job taken ahead is leased from its due time.
    jobs: jobs.map(
      (j): ClaimedJob => ({
        id: j.id,
        topic,
        attempt: j.attempt,
        dueAt: j.dueAt,
        leaseExpiresAt: leaseDeadline + Math.max(0, j.dueAt - now),
        record: j.record,
      }),
    ),
    ...rest,
    heldBy: heldBy === "shaped" ? null : heldBy,
    topic: mode === "push" && heldBy !== "mode" ? decodeTopicConf(conf, ctx.defaults) : null,
    requests,
  };
}

/** What a claim asks for, as claim.lua takes it. */
interface ClaimAsk {
  now: number;
  max: number;
  mode: "push" | "pull";
  lead: number;
  leaseMs: number | undefined;
}

/** A plain topic's claim: its due set's head and expired leases read, then claim.lua with them. */
async function claimPlain(ctx: QueueContext, topic: string, asked: ClaimAsk): Promise<unknown> {
  const t = ctx.keys.topic(topic);
  // The ids the claim may take or reap, read first: the script must be given
  // every key it touches, so it cannot look them up itself. It checks each
  // again; jobs that became due between the two calls wait for the next claim.
  // Claims of one topic run side by side (the tick's chunk and its fan-out):
  // each reads CLAIM_CANDIDATES times what it may take, so those that run at
  // once find jobs left among their candidates when the first took its own.
  const [dueIds, leaseIds] = (await redisCall({ name: "claim candidates (ZRANGE, ZRANGE)", repeatSafe: true }, () =>
    pipelineRead(ctx.redis, [
      [
        "zrange",
        t.due,
        "-inf",
        asked.now + (asked.mode === "push" ? asked.lead : 0),
        "BYSCORE",
        "LIMIT",
        0,
        Math.min(asked.max * CLAIM_CANDIDATES, MAX_BATCH * CLAIM_CANDIDATES),
      ],
      ["zrange", t.lease, "-inf", asked.now, "BYSCORE", "LIMIT", 0, ctx.reapLimit],
    ]),
  )) as [string[], string[]];
  const candidates = asked.max > 0 ? dueIds : [];
  return ctx.run(
    lua.claim,
    [...claimKeys(ctx, topic), ...ctx.keys.jobPairs(candidates), ...ctx.keys.jobPairs(leaseIds)],
    [...claimArgs(ctx, topic, asked), candidates.length, leaseIds.length, "", 0, 0, 0, 1, ...candidates, ...leaseIds],
  );
}

/** A shaped topic's claim: flow-read.lua names its keys' turns and their jobs, then claim.lua with them. */
async function claimShaped(ctx: QueueContext, topic: string, asked: ClaimAsk): Promise<unknown> {
  const t = ctx.keys.topic(topic);
  const read = replies.flowRead.parse(
    await ctx.run(lua.flowRead, [t.due, t.lease, t.conf, ...flowKeyList(t.flow)], [asked.now, asked.max, ctx.reapLimit, FLOW_PROMOTE_BATCH, CLAIM_CANDIDATES]),
  );
  const jobIds: string[] = [];
  for (let i = 1; i < read.jobs.length; i += 5) jobIds.push(String(read.jobs[i]));
  return ctx.run(
    lua.claim,
    [...claimKeys(ctx, topic), ...ctx.keys.jobPairs(read.leases), ...flowKeyList(t.flow), ...ctx.keys.jobPairs(jobIds)],
    [
      ...claimArgs(ctx, topic, asked),
      0,
      read.leases.length,
      "1",
      read.jobs.length / 5,
      read.newly.length / 4,
      read.served.length / 2,
      read.rounds,
      ...read.leases,
      ...read.jobs,
      ...read.newly,
      ...read.served,
    ],
  );
}

/** claim.lua's KEYS before its candidates'. */
function claimKeys(ctx: QueueContext, topic: string): string[] {
  const t = ctx.keys.topic(topic);
  return [t.due, t.lease, t.conf, t.bucket, t.metrics, t.deadAt, t.done, ctx.keys.topicIndex];
}

/** claim.lua's ARGV[1..14]. */
function claimArgs(ctx: QueueContext, topic: string, o: ClaimAsk): Array<string | number> {
  return [
    o.now,
    o.max,
    o.leaseMs ?? "",
    Math.floor(Math.random() * 2 ** 31),
    ctx.defaults.maxAttempts,
    JSON.stringify(ctx.defaults.backoff),
    ctx.deadLetterCap,
    ctx.retentionMs,
    ctx.reapLimit,
    topic,
    o.mode,
    ctx.defaults.timeoutMs,
    LEASE_MARGIN_MS,
    o.lead,
  ];
}

/**
 * Drops the finished jobs and dead letters a claim named, with
 * their keys (sweep.lua checks each again). Safe to repeat; a failure only
 * leaves them for the next claim to name.
 */
async function sweep(ctx: QueueContext, topic: string, now: number, done: string[], dead: string[]): Promise<void> {
  if (done.length + dead.length === 0) return;
  const t = ctx.keys.topic(topic);
  replies.sweep.parse(
    await ctx.run(
      lua.sweep,
      [t.done, t.deadAt, ...ctx.keys.jobPairs(done), ...ctx.keys.jobPairs(dead)],
      [now - ctx.retentionMs, ctx.deadLetterCap, done.length, ...done, ...dead],
    ),
  );
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
