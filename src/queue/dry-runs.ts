import { BULK_CALL_BYTES, BULK_CANCEL_BATCH, DEAD_BATCH, LUA_READ_BATCH } from "../limits.js";
import type { QueueContext } from "./context.js";
import { pageDead } from "./dead-letters.js";
import { topicOfJobId } from "./ids.js";
import { keyPage, windowArgs } from "./job-reads.js";
import { labelStep, labelStepNext } from "./labels.js";
import * as lua from "./lua.generated.js";
import { pipelineRead, redisCall } from "./redis.js";
import { replies } from "./replies.js";
import type { CancelWindowOptions, DeadFilter, ListPosition } from "./views.js";

// Dry runs of the bulk operations: what a call of a bulk cancel, replay or
// purge would touch, found by reads alone (no script that writes, no write
// command). A step of a walk lists the same page of ids its real call lists,
// then makes on what it reads the checks the real call's script makes, and
// reaches exactly as far: the script reads metas LUA_READ_BATCH at a time and
// stops after the batch that passes BULK_CALL_BYTES, and so does the count
// here. So a dry step answers the real step's count and cursor, and a real
// call right after, with nothing changed between, touches the same jobs.

/** What a dry step found: the ids the real call would change, in its order, and where its walk goes on (null: done). */
interface DryStep {
  ids: string[];
  next: ListPosition | null;
}

const utf8 = new TextEncoder();
/** Bytes of a stored text, as a script's `#text` counts them. */
const bytesOf = (text: string | null) => (text === null ? 0 : utf8.encode(text).length);

/** Reads in one request, after the data model is seen to (as every script call does first). */
async function read(ctx: QueueContext, name: string, commands: Array<Array<string | number>>): Promise<unknown[]> {
  await ctx.ensureModel();
  return redisCall({ name, repeatSafe: true }, () => pipelineRead(ctx.redis, commands));
}

/** Each id's score in a set, or null where it is not in it. */
async function scoresIn(ctx: QueueContext, key: string, ids: string[]): Promise<Array<string | null>> {
  if (ids.length === 0) return [];
  const [scores] = await read(ctx, "ZMSCORE", [["zmscore", key, ...ids]]);
  return scores as Array<string | null>;
}

/** Metas are read this many at a time here: a few of the script's batches per request. */
const READ_CHUNK = 4 * LUA_READ_BATCH;

/**
 * The metas (text, null for none) of the first `ids` a real step's script
 * reads before its byte budget ends it: as many as it looks at.
 */
async function metasInReach(ctx: QueueContext, ids: string[]): Promise<Array<string | null>> {
  const texts: Array<string | null> = [];
  let reach = 0;
  let bytes = 0;
  while (reach < ids.length && bytes <= BULK_CALL_BYTES) {
    if (reach >= texts.length) {
      const [chunk] = await read(ctx, "MGET", [["mget", ...ids.slice(texts.length, texts.length + READ_CHUNK).map((id) => ctx.keys.job(id).meta)]]);
      texts.push(...(chunk as Array<string | null>));
    }
    const last = Math.min(reach + LUA_READ_BATCH, ids.length);
    for (let i = reach; i < last; i++) bytes += bytesOf(texts[i]!);
    reach = last;
  }
  return texts.slice(0, reach);
}

/** Where a walk goes on after the first `reach` of a page (null when the window holds no more). */
function nextOf(page: { more: boolean; rows: Array<{ id: string; score: number }> }, reach: number): ListPosition | null {
  const last = page.rows[reach - 1];
  return (page.more || reach < page.rows.length) && last ? { score: last.score, id: last.id } : null;
}

/** A Queue's dry runs (`queue.dryRun`): what a call of a bulk operation would touch, by reads alone. */
export class DryRuns {
  constructor(private readonly ctx: QueueContext) {}

  /** A bulk cancel of given ids (Queue.cancelIds). */
  cancelIds(topic: string, ids: string[]) {
    return cancelIds(this.ctx, topic, ids);
  }

  /** A step of a bulk cancel by due window (Queue.cancelWindow). */
  cancelWindow(topic: string, options: CancelWindowOptions = {}) {
    return cancelWindow(this.ctx, topic, options);
  }

  /** A replay of given ids (Queue.replayDeadLetters). */
  replayIds(topic: string, ids: string[]) {
    return replayIds(this.ctx, topic, ids);
  }

  /** A step of a replay or purge by filter (Queue.replayDeadLettersStep, Queue.purgeDeadLettersStep). */
  deadStep(topic: string, options: DeadFilter & { after?: ListPosition }, op: "replay" | "purge") {
    return deadStep(this.ctx, topic, options, op);
  }
}

/**
 * A bulk cancel of given ids: those scheduled (in the due set, or keyed in
 * fdue: cancel-jobs.lua takes them), and of the rest those in flight and
 * those neither. Queue.cancelIds calls the script until every id is handled,
 * so no byte budget ends it early.
 */
async function cancelIds(ctx: QueueContext, topic: string, ids: string[]): Promise<{ ids: string[]; inflight: number; notScheduled: number }> {
  const unique = [...new Set(ids)];
  const t = ctx.keys.topic(topic);
  const due = await scoresIn(ctx, t.due, unique);
  const keyed = await scoresIn(ctx, t.flow.fdue, unique);
  const scheduled = unique.filter((_, i) => due[i] !== null || keyed[i] !== null);
  const rest = unique.filter((_, i) => due[i] === null && keyed[i] === null);
  const lease = await scoresIn(ctx, t.lease, rest);
  const inflight = lease.filter((s) => s !== null).length;
  return { ids: scheduled, inflight, notScheduled: rest.length - inflight };
}

/**
 * A step of a bulk cancel by due window, or by flow key: the page
 * cancel-jobs.lua would get (the due set and fdue merged, or the key's range
 * of the keys' index), and of it the jobs still scheduled as listed, as far
 * as the script would reach — its byte budget counts the metas of the jobs
 * it takes, and the records it reads for keyed jobs never claimed (their
 * flow key; not on a key's walk, whose page names it) — and the topic's jobs
 * in flight.
 */
async function cancelWindow(ctx: QueueContext, topic: string, options: CancelWindowOptions): Promise<DryStep & { inflight: number }> {
  const t = ctx.keys.topic(topic);
  const window = { after: options.after, from: options.dueFrom, to: options.dueTo };
  const byKey = options.flowKey !== undefined;
  const keyed = byKey ? await keyPage(ctx, topic, options.flowKey!, window, BULK_CANCEL_BATCH) : undefined;
  const walked = options.label === undefined ? undefined : await labelledPage(ctx, topic, options.label, window);
  const page =
    keyed ??
    walked ??
    replies.listJobs.parse(await ctx.run(lua.listJobs, [t.due, t.flow.fdue], [...windowArgs(window.after, window.from, window.to), BULK_CANCEL_BATCH]));
  const ids = page.jobs.map((j) => j.id);
  const due = keyed ? ids.map(() => null) : await scoresIn(ctx, t.due, ids);
  const inFdue = await scoresIn(ctx, t.flow.fdue, ids);
  const indexed = keyed ? await scoresIn(ctx, t.flow.fkidx, keyed.members) : [];
  const scheduled = (i: number) => {
    const score = due[i] ?? inFdue[i];
    if (score === null || score === undefined) return false;
    return byKey ? indexed[i] !== null : Number(score) === page.jobs[i]!.score;
  };
  const taken: string[] = [];
  const seen = new Set<string>();
  let reach = 0;
  let bytes = 0;
  while (reach < ids.length && bytes <= BULK_CALL_BYTES) {
    const last = Math.min(reach + LUA_READ_BATCH, ids.length);
    const take: Array<{ id: string; i: number }> = [];
    for (let i = reach; i < last; i++) {
      const id = ids[i]!;
      if (scheduled(i) && !seen.has(id)) {
        seen.add(id);
        take.push({ id, i });
      }
    }
    if (take.length > 0) {
      const [metas] = (await read(ctx, "MGET", [["mget", ...take.map(({ id }) => ctx.keys.job(id).meta)]])) as [Array<string | null>];
      const unnamed = take.filter(({ i }, k) => !byKey && inFdue[i] !== null && !namesKey(metas[k]!));
      if (unnamed.length > 0) {
        const [records] = (await read(ctx, "MGET", [["mget", ...unnamed.map(({ id }) => ctx.keys.job(id).record)]])) as [Array<string | null>];
        for (const r of records) bytes += bytesOf(r);
      }
      for (const m of metas) bytes += bytesOf(m);
      taken.push(...take.map(({ id }) => id));
    }
    reach = last;
  }
  const next = nextOf({ more: page.more, rows: page.jobs }, reach);
  if (walked) return { ids: taken, next: labelStepNext(walked.step, next), inflight: walked.inflight };
  const [inflight] = await read(ctx, "ZCARD", [["zcard", t.lease]]);
  return { ids: taken, next, inflight: Number(inflight) };
}

/** A step of a label's walk as job-changes.ts's cancelLabelled takes it, leaving stale members be: its scheduled jobs, and those in flight it passed. */
async function labelledPage(
  ctx: QueueContext,
  topic: string,
  label: string,
  window: { after?: ListPosition | undefined; from?: number | undefined; to?: number | undefined },
) {
  const all = await labelStep(ctx, topic, label, { ...window, states: ["scheduled", "inflight"], most: BULK_CANCEL_BATCH, prune: false });
  const jobs = all.jobs.filter((j) => j.state === "scheduled");
  return { more: all.next !== null, jobs, step: { ...all, jobs }, inflight: all.jobs.length - jobs.length };
}

/** Whether a meta names its job's flow key ("k", "" for the default lane: written by the job's first claim). */
function namesKey(meta: string | null): boolean {
  return meta !== null && typeof (JSON.parse(meta) as { k?: unknown }).k === "string";
}

/** A replay of given ids: those that are letters of the topic (in its dead-letter set, so their metas say "dead"), and the others. */
async function replayIds(ctx: QueueContext, topic: string, ids: string[]): Promise<{ ids: string[]; notFound: string[] }> {
  const unique = [...new Set(ids)];
  const ours = unique.filter((id) => topicOfJobId(id) === topic);
  const scores = await scoresIn(ctx, ctx.keys.topic(topic).deadAt, ours);
  const dead = new Set(ours.filter((_, i) => scores[i] !== null));
  return { ids: unique.filter((id) => dead.has(id)), notFound: unique.filter((id) => !dead.has(id)) };
}

/**
 * A step of a replay or purge by filter, oldest first: the page
 * replay-dead.lua or purge-dead.lua would get, and of it the letters it
 * would pick. A purge with no error text reads no meta and takes the whole
 * page; otherwise the script reads metas within its byte budget and picks
 * those whose error holds the text (lib/dead.lua pickDead).
 */
async function deadStep(ctx: QueueContext, topic: string, options: DeadFilter & { after?: ListPosition }, op: "replay" | "purge"): Promise<DryStep> {
  const page = await pageDead(ctx, topic, { ...options, limit: DEAD_BATCH, order: "oldest" }, false);
  const ids = page.letters.map((l) => l.id);
  const needle = options.errorContains ?? "";
  // A label's step goes on from its walk's position (dead-letters.ts walkStep).
  const onward = (next: ListPosition | null) => (page.walked ? (ids.length === 0 ? page.walked.next : labelStepNext(page.walked, next)) : next);
  if (op === "purge" && needle === "") return { ids, next: onward(nextOf({ more: page.more, rows: page.letters }, ids.length)) };
  const metas = await metasInReach(ctx, ids);
  const picked = ids.filter((_, i) => i < metas.length && picks(metas[i]!, needle));
  return { ids: picked, next: onward(nextOf({ more: page.more, rows: page.letters }, metas.length)) };
}

/** Whether a letter's meta (text) is a dead letter's whose error holds `needle` ("" for any), as pickDead decides. */
function picks(meta: string | null, needle: string): boolean {
  if (meta === null) return false;
  const m = JSON.parse(meta) as { st?: unknown; e?: unknown };
  return (m.st === "dead" || m.st === "expired") && (needle === "" || (typeof m.e === "string" && m.e.includes(needle)));
}
