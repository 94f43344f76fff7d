import type { QueueContext } from "./context.js";
import { FlowKeyFullError, TopicContendedError, TopicFullError, TopicLimitError } from "./errors.js";
import { createdAtOfJobId, newJobId } from "./ids.js";
import { dueOf, isKeyed, noteMarks, recordOf } from "./jobs.js";
import * as lua from "./lua.generated.js";
import { redisCall } from "./redis.js";
import { registrations } from "./registrations.js";
import { replies } from "./replies.js";
import { fitRequest } from "./request-size.js";
import type { UpsertInput, UpsertResult } from "./views.js";

// Upserts: a job stored under a job key, one script call (upsert.lua) after
// a plain read of the key's pointer, whose job's keys the script must be
// given. The script checks the pointer still names that job, and the job's
// state, before it writes; a pointer that moved meanwhile is read again.

/** Reads of the pointer, each followed by the script; past it, other upserts of the key kept moving it first (nothing stored). */
const UPSERT_ROUNDS = 10;

export async function upsert(ctx: QueueContext, input: UpsertInput): Promise<UpsertResult> {
  const now = ctx.now();
  const seen = registrations(ctx.keys.prefix);
  const t = ctx.keys.topic(input.topic);
  const pointer = ctx.keys.jobKeyPointer(input.topic, input.jobKey);
  const id = newJobId(input.topic, now, ctx.shard);
  const dueAt = dueOf(input, now);
  // jobKey last: upsert.lua counts replacements in a field it appends after it.
  const record = JSON.stringify({ ...recordOf(input), jobKey: input.jobKey });
  const onConflict = input.onConflict ?? "replace";
  const registering = !seen.isRegistered(input.topic, now);
  let flags = registering ? "r" : "";
  if (seen.capOf(input.topic, now) !== "none") flags += "c";
  if (isKeyed(input)) flags += "k";
  const labels = [...new Set(input.labels)];
  // Labels the key's pending job carries (its pointer lists them; upsert.lua names any it did not): their indexes go in the call.
  let carried: string[] = [];
  for (let round = 1; round <= UPSERT_ROUNDS; round++) {
    await ctx.ensureModel();
    // The pointer: the key's job id, then a line per label it carries, whose indexes this call names at once.
    const pointed = await redisCall({ name: "GET", repeatSafe: true }, () => ctx.redis.get<string>(pointer));
    const [found = null, ...pointedLabels] = pointed === null ? [] : pointed.split("\n");
    carried = [...new Set([...carried, ...pointedLabels])];
    const held = ctx.keys.job(found ?? id);
    const keys = [pointer, ctx.keys.topics, ctx.keys.topicIndex, t.due, t.lease, t.conf, t.flow.fdue, t.flow.fsched, t.flow.fready];
    keys.push(held.record, held.meta, ctx.keys.job(id).record, t.flow.fkidx, t.flow.fkeys, t.exp, t.deadAt, ctx.keys.labelSet(input.topic));
    const others = carried.filter((l) => !labels.includes(l));
    keys.push(...[...labels, ...others].map((l) => ctx.keys.labelIndex(input.topic, l)));
    const args = [pointed ?? "", id, dueAt, replacedDue(found, dueAt, now, input.maxWaitMs), record, input.topic, onConflict, flags];
    const expiresAt = input.expiresAt === undefined ? "" : Math.round(input.expiresAt);
    args.push(input.flowKey ?? "", input.priority ?? 0, ctx.maxTopics, now, expiresAt, labels.length, ...labels, others.length, ...others);
    fitRequest(ctx.requestBudgetBytes, "job", lua.upsert, keys, args);
    const reply = replies.upsert.parse(await ctx.run(lua.upsert, keys, args));
    if (reply.result === "moved") continue;
    if (reply.result === "labels") {
      carried = [...new Set([...carried, ...reply.labels])];
      continue;
    }
    if (reply.result === "topic-limit") throw new TopicLimitError(reply.count, reply.limit);
    if (reply.result === "topic-full") throw new TopicFullError(reply.topic, reply.pending, reply.maxLength, reply.adding);
    if (reply.result === "flow-key-full") throw new FlowKeyFullError(reply.topic, reply.flowKey, reply.pending, reply.maxKeyLength, reply.adding);
    if (reply.result !== "ignored") noteMarks(ctx, input);
    if (reply.cap !== undefined) {
      if (registering) seen.noteRegistered(input.topic, now, reply.cap, reply.kinds);
      else seen.noteCap(input.topic, reply.cap, reply.kinds);
    }
    return { id: reply.id, topic: input.topic, dueAt: reply.dueAt, result: reply.result };
  }
  throw new TopicContendedError(
    `job key ${JSON.stringify(input.jobKey)} of topic ${input.topic} changed hands ${UPSERT_ROUNDS} times while this upsert read it; nothing was stored: retry`,
  );
}

/**
 * The due time the key's pending job takes when replaced: the new job's,
 * but no later than `maxWaitMs` after the pending job was first enqueued
 * (its id's ULID time), and never before now.
 */
function replacedDue(found: string | null, dueAt: number, now: number, maxWaitMs: number | undefined): number {
  const created = found === null ? null : createdAtOfJobId(found);
  if (created === null || maxWaitMs === undefined) return dueAt;
  return Math.max(now, Math.min(dueAt, created + Math.round(maxWaitMs)));
}
