import { DEFAULT_DEAD_LIST_LIMIT } from "../limits.js";
import { BULK_CALL_BYTES, DEAD_BATCH, LIST_PAGE_BYTES, MAX_LIST_LIMIT } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { topicOfJobId } from "./ids.js";
import * as lua from "./lua.generated.js";
import { redisCall } from "./redis.js";
import { replies } from "./replies.js";
import { deadEntrySchema, type DeadEntry } from "./types.js";
import type { DeadFilter, DeadLettersOptions, ListPosition } from "./views.js";

// A topic's dead letters: listing them, reading one, replaying them onto the
// schedule and dropping them. Every call that touches many letters is a
// bounded step, and each first moves letters kept the way earlier versions
// kept them (a list) to where they are kept now.

/** Moves a topic's dead letters of earlier versions (a list) to where they are kept now, a bounded batch per call. */
async function migrateDead(ctx: QueueContext, topic: string): Promise<void> {
  const t = ctx.keys.topic(topic);
  while (replies.migrateDead.parse(await ctx.run(lua.migrateDead, [t.deadLegacy, t.deadAt, t.deadEntries], [DEAD_BATCH])) > 0);
}

export async function deadLetters(
  ctx: QueueContext,
  topic: string,
  options: DeadLettersOptions = {},
): Promise<{ entries: DeadEntry[]; next: ListPosition | null }> {
  await migrateDead(ctx, topic);
  const t = ctx.keys.topic(topic);
  const limit = Math.min(Math.max(1, Math.floor(options.limit ?? DEFAULT_DEAD_LIST_LIMIT)), MAX_LIST_LIMIT);
  const raw = await ctx.run(
    lua.listDead,
    [t.deadAt, t.deadEntries],
    [
      options.after ? Math.round(options.after.score) : "",
      options.after?.id ?? "",
      options.failedFrom === undefined ? "-inf" : Math.round(options.failedFrom),
      options.failedTo === undefined ? "+inf" : Math.round(options.failedTo),
      limit,
      LIST_PAGE_BYTES,
    ],
  );
  const page = replies.listDead.parse(raw);
  const last = page.letters.at(-1);
  return {
    entries: page.letters.flatMap((l) => (l.entry ? [l.entry] : [])),
    next: page.more && last ? { score: last.score, id: last.id } : null,
  };
}

export async function deadLetter(ctx: QueueContext, id: string): Promise<DeadEntry | null> {
  const topic = topicOfJobId(id);
  if (!topic) return null;
  await migrateDead(ctx, topic);
  const raw = await redisCall({ name: "HGET", repeatSafe: true }, () => ctx.redis.hget<string>(ctx.keys.topic(topic).deadEntries, id));
  return raw === null ? null : deadEntrySchema.parse(typeof raw === "string" ? JSON.parse(raw) : raw);
}

/** Where replay-dead.lua puts letters back, and how it spreads them. */
type ReplayOptions = { dueAt?: number; spreadMs?: number };

export async function replayDeadLetters(
  ctx: QueueContext,
  topic: string,
  options: ReplayOptions & { ids: string[] },
): Promise<{ replayed: number; notFound: string[] }> {
  await migrateDead(ctx, topic);
  const unique = [...new Set(options.ids)];
  const total = { replayed: 0, notFound: [] as string[] };
  for (let at = 0; at < unique.length; ) {
    const r = replies.replayDead.ids.parse(
      await ctx.run(lua.replayDead, replayKeys(ctx, topic), [...replayArgs(ctx, topic, options, "ids"), ...unique.slice(at, at + DEAD_BATCH)]),
    );
    total.replayed += r.replayed;
    total.notFound.push(...r.notFound);
    at += Math.max(1, r.handled);
  }
  return total;
}

export async function replayDeadLettersStep(
  ctx: QueueContext,
  topic: string,
  options: DeadFilter & ReplayOptions & { after?: ListPosition } = {},
): Promise<{ replayed: number; next: ListPosition | null }> {
  await migrateDead(ctx, topic);
  const raw = await ctx.run(lua.replayDead, replayKeys(ctx, topic), [...replayArgs(ctx, topic, options, "walk"), ...walkArgs(options)]);
  const { count, next } = replies.replayDead.walk.parse(raw);
  return { replayed: count, next };
}

export async function purgeDeadLettersStep(
  ctx: QueueContext,
  topic: string,
  options: DeadFilter & { after?: ListPosition } = {},
): Promise<{ purged: number; next: ListPosition | null }> {
  await migrateDead(ctx, topic);
  const t = ctx.keys.topic(topic);
  const raw = await ctx.run(lua.purgeDead, [t.deadAt, t.deadEntries], [DEAD_BATCH, BULK_CALL_BYTES, "walk", ...walkArgs(options)]);
  const { count, next } = replies.purgeDead.walk.parse(raw);
  return { purged: count, next };
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
  await migrateDead(ctx, topic);
  const t = ctx.keys.topic(topic);
  return replies.purgeDead.ids.parse(await ctx.run(lua.purgeDead, [t.deadAt, t.deadEntries], [1, BULK_CALL_BYTES, "ids", id])) === 1;
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

function replayKeys(ctx: QueueContext, topic: string): string[] {
  const t = ctx.keys.topic(topic);
  return [t.deadAt, t.deadEntries, t.due, ctx.keys.jobs, ctx.keys.meta, ctx.keys.topicIndex];
}

function replayArgs(ctx: QueueContext, topic: string, options: ReplayOptions, mode: "ids" | "walk"): Array<string | number> {
  const due = Math.max(ctx.now(), Math.round(options.dueAt ?? 0));
  return [due, Math.max(0, Math.round(options.spreadMs ?? 0)), Math.floor(Math.random() * 2 ** 31), topic, DEAD_BATCH, BULK_CALL_BYTES, mode, ctx.now()];
}

/** The window and filter arguments of a walk (replay-dead.lua, purge-dead.lua). */
function walkArgs(o: DeadFilter & { after?: ListPosition }): Array<string | number> {
  return [
    o.failedFrom === undefined ? "-inf" : Math.round(o.failedFrom),
    o.failedTo === undefined ? "+inf" : Math.round(o.failedTo),
    o.after ? Math.round(o.after.score) : "",
    o.after?.id ?? "",
    o.errorContains ?? "",
  ];
}
