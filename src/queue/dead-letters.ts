import { DEFAULT_DEAD_LIST_LIMIT } from "../limits.js";
import { BULK_CALL_BYTES, DEAD_BATCH, LIST_PAGE_BYTES, MAX_LIST_LIMIT } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { topicOfJobId } from "./ids.js";
import { readJobs, windowArgs } from "./job-reads.js";
import * as lua from "./lua.generated.js";
import { redisCall } from "./redis.js";
import { type LabelStep, labelStep, labelStepNext } from "./labels.js";
import { replies } from "./replies.js";
import { type DeadEntry, type JobMeta, type JobRecord, metaSchema, parseRecord } from "./types.js";
import type { DeadFilter, DeadLettersOptions, ListPosition } from "./views.js";

// A topic's dead letters: listing them, reading one, replaying them onto the
// schedule and dropping them. A letter is its job's two keys (record
// untouched, meta with state "dead") and its id in the topic's dead-letter
// set; the entry callers see is composed here from the two. Every call that
// touches many letters is a bounded step of two phases: a page of ids from
// the set (list-dead.lua), then the script that re-checks and changes them by
// their keys.

/**
 * One page of a topic's letter ids (list-dead.lua), newest or oldest first;
 * with a label, a step of its walk (label-page.lua: in enqueue order),
 * whose `walked` says where the walk goes on.
 */
export async function pageDead(
  ctx: QueueContext,
  topic: string,
  o: DeadFilter & { after?: ListPosition | undefined; limit: number; order: "newest" | "oldest" },
  prune = true,
): Promise<{ more: boolean; letters: Array<{ id: string; score: number }>; walked?: LabelStep }> {
  if (o.label !== undefined) {
    const walked = await labelStep(ctx, topic, o.label, { after: o.after, states: ["dead"], most: o.limit, from: o.failedFrom, to: o.failedTo, prune });
    return { more: walked.next !== null, letters: walked.jobs, walked };
  }
  const raw = await ctx.run(lua.listDead, [ctx.keys.topic(topic).deadAt], [...windowArgs(o.after, o.failedFrom, o.failedTo), o.limit, o.order]);
  return replies.listDead.parse(raw);
}

/** The entry of a letter from its record and meta; null when the job is no dead letter (any more). */
function entryOf(id: string, record: JobRecord | null, meta: JobMeta | null): DeadEntry | null {
  if (!record || !meta || (meta.st !== "dead" && meta.st !== "expired") || meta.f === undefined) return null;
  return { id, attempts: meta.a, lastError: meta.e ?? null, failedAt: meta.f, history: meta.h ?? [], job: record };
}

export async function deadLetters(
  ctx: QueueContext,
  topic: string,
  options: DeadLettersOptions = {},
): Promise<{ entries: DeadEntry[]; next: ListPosition | null }> {
  const limit = Math.min(Math.max(1, Math.floor(options.limit ?? DEFAULT_DEAD_LIST_LIMIT)), MAX_LIST_LIMIT);
  const page = await pageDead(ctx, topic, { ...options, limit, order: "newest" });
  const read = await readJobs(
    ctx,
    page.letters.map((l) => l.id),
    true,
    LIST_PAGE_BYTES,
  );
  // Past the byte budget the page ends early; the cursor resumes after the last letter read.
  const listed = page.letters.slice(0, read.length);
  const entries: DeadEntry[] = [];
  for (const [i, { id }] of listed.entries()) {
    // Replayed or dropped between the two reads: left out.
    const entry = entryOf(id, read[i]!.record, read[i]!.meta);
    if (entry) entries.push(entry);
  }
  if (page.walked) return { entries, next: labelStepNext(page.walked, listed.at(-1) ?? null) };
  const last = listed.at(-1);
  const more = page.more || listed.length < page.letters.length;
  return { entries, next: more && last ? { score: last.score, id: last.id } : null };
}

export async function deadLetter(ctx: QueueContext, id: string): Promise<DeadEntry | null> {
  const topic = topicOfJobId(id);
  if (!topic) return null;
  // The one read here that runs no script, which would see to the data model first.
  await ctx.ensureModel();
  const k = ctx.keys.job(id);
  const raw = await redisCall({ name: "MGET", repeatSafe: true }, () => ctx.redis.mget<Array<string | null>>(k.record, k.meta));
  const [record, meta] = raw.map((v) => (v === null || v === undefined ? null : typeof v === "string" ? v : JSON.stringify(v)));
  if (!record || !meta) return null;
  return entryOf(id, parseRecord(record, id), metaSchema.parse(JSON.parse(meta)));
}

/** Where replay-dead.lua puts letters back, and how it spreads them. */
type ReplayOptions = { dueAt?: number; spreadMs?: number };

export async function replayDeadLetters(
  ctx: QueueContext,
  topic: string,
  options: ReplayOptions & { ids: string[] },
): Promise<{ replayed: number; notFound: string[] }> {
  const unique = [...new Set(options.ids)];
  // An id of another topic, or no job id at all, is no letter of this one: its keys are not asked for.
  const ours = unique.filter((id) => topicOfJobId(id) === topic);
  const missing = new Set(unique.filter((id) => topicOfJobId(id) !== topic));
  let replayed = 0;
  for (let at = 0; at < ours.length; ) {
    const batch = ours.slice(at, at + DEAD_BATCH);
    const r = replies.replayDead.ids.parse(
      await ctx.run(
        lua.replayDead,
        [...replayKeys(ctx, topic), ...batch.map((id) => ctx.keys.job(id).meta)],
        [...replayArgs(ctx, topic, options, "ids"), ...batch],
      ),
    );
    replayed += r.replayed;
    for (const id of r.notFound) missing.add(id);
    at += Math.max(1, r.handled);
  }
  return { replayed, notFound: unique.filter((id) => missing.has(id)) };
}

export async function replayDeadLettersStep(
  ctx: QueueContext,
  topic: string,
  options: DeadFilter & ReplayOptions & { after?: ListPosition } = {},
): Promise<{ replayed: number; next: ListPosition | null }> {
  const r = await walkStep(ctx, topic, options, "replayDead", (ids) => ({
    keys: [...replayKeys(ctx, topic), ...ids.map((id) => ctx.keys.job(id).meta)],
    args: replayArgs(ctx, topic, options, "walk"),
  }));
  return { replayed: r.count, next: r.next };
}

export async function purgeDeadLettersStep(
  ctx: QueueContext,
  topic: string,
  options: DeadFilter & { after?: ListPosition } = {},
): Promise<{ purged: number; next: ListPosition | null }> {
  const r = await walkStep(ctx, topic, options, "purgeDead", (ids) => ({
    keys: [ctx.keys.topic(topic).deadAt, ...ctx.keys.jobPairs(ids)],
    args: [BULK_CALL_BYTES, "walk"],
  }));
  return { purged: r.count, next: r.next };
}

/** The scripts that walk a topic's letters, by name. */
const WALK_SCRIPTS = { replayDead: lua.replayDead, purgeDead: lua.purgeDead } as const;

/**
 * One step of a walk over a topic's letters, oldest first (replay-dead.lua,
 * purge-dead.lua): a page of ids from the set, then `script` with the keys
 * and leading arguments `call` gives for them, the filter and the page after
 * those. Answers how many letters the script changed and where the walk goes on.
 */
async function walkStep(
  ctx: QueueContext,
  topic: string,
  options: DeadFilter & { after?: ListPosition },
  script: "replayDead" | "purgeDead",
  call: (ids: string[]) => { keys: string[]; args: Array<string | number> },
): Promise<{ count: number; next: ListPosition | null }> {
  const page = await pageDead(ctx, topic, { ...options, limit: DEAD_BATCH, order: "oldest" });
  // A label's step may find none of its letters among the members it looked at, and go on all the same.
  if (page.letters.length === 0) return { count: 0, next: page.walked?.next ?? null };
  const { keys, args } = call(page.letters.map((l) => l.id));
  const r = replies[script].walk.parse(await ctx.run(WALK_SCRIPTS[script], keys, [...args, ...walkArgs(options, page)]));
  return page.walked ? { count: r.count, next: labelStepNext(page.walked, r.next) } : r;
}

export async function replayDeadLettersMatching(ctx: QueueContext, topic: string, options: DeadFilter & ReplayOptions = {}): Promise<number> {
  return everyStep(async (after) => {
    const r = await replayDeadLettersStep(ctx, topic, { ...options, ...(after ? { after } : {}) });
    return { count: r.replayed, next: r.next };
  });
}

export async function purgeDeadLetters(ctx: QueueContext, topic: string, filter: DeadFilter = {}): Promise<number> {
  return everyStep(async (after) => {
    const r = await purgeDeadLettersStep(ctx, topic, { ...filter, ...(after ? { after } : {}) });
    return { count: r.purged, next: r.next };
  });
}

export async function deleteDeadLetter(ctx: QueueContext, topic: string, id: string): Promise<boolean> {
  // An id of another topic, or no job id at all, is no letter of this one.
  if (topicOfJobId(id) !== topic) return false;
  const t = ctx.keys.topic(topic);
  return replies.purgeDead.ids.parse(await ctx.run(lua.purgeDead, [t.deadAt, ...ctx.keys.jobPairs([id])], [BULK_CALL_BYTES, "ids", id])) === 1;
}

/** Runs bounded steps of a walk, each from where the last one stopped, until the walk ends; returns the sum of their counts. */
async function everyStep(step: (after: ListPosition | undefined) => Promise<{ count: number; next: ListPosition | null }>): Promise<number> {
  let total = 0;
  let after: ListPosition | undefined;
  for (;;) {
    const r = await step(after);
    total += r.count;
    if (!r.next) return total;
    after = r.next;
  }
}

/** replay-dead.lua's fixed keys; the metas of the ids follow. */
function replayKeys(ctx: QueueContext, topic: string): string[] {
  const t = ctx.keys.topic(topic);
  return [t.deadAt, t.due, ctx.keys.topicIndex, t.flow.fdue, t.flow.fsched, t.flow.fkidx];
}

function replayArgs(ctx: QueueContext, topic: string, options: ReplayOptions, mode: "ids" | "walk"): Array<string | number> {
  const due = Math.max(ctx.now(), Math.round(options.dueAt ?? 0));
  return [due, Math.max(0, Math.round(options.spreadMs ?? 0)), Math.floor(Math.random() * 2 ** 31), topic, BULK_CALL_BYTES, mode, ctx.now()];
}

/** The filter and the paged letters of a walk's step (replay-dead.lua, purge-dead.lua). */
function walkArgs(o: DeadFilter, page: { more: boolean; letters: Array<{ id: string; score: number }> }): Array<string | number> {
  return [o.errorContains ?? "", page.more ? 1 : 0, ...page.letters.flatMap((l) => [l.id, l.score])];
}
