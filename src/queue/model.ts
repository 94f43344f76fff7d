import { BULK_CALL_BYTES } from "../limits.js";
import type { QueueContext } from "./context.js";
import * as lua from "./lua.generated.js";
import { pipelineRead, redisCall } from "./redis.js";
import { replies } from "./replies.js";
import { runScript } from "./scripts.js";

// The move from the hash model (one record hash, one meta hash and done
// buckets for the whole deployment, a dead-letter hash per topic) to per-job
// keys (src/queue/keys.ts), done on first use: every Queue operation awaits
// ensureModel before its first Redis call, and once the deployment's marker
// says "2" an isolate checks it no more. migrate-model.lua does the moving;
// this module finds the ids to move.

/** The data model this code reads and writes, as `<p>:model` holds it once migrated. */
const MODEL_VERSION = "2";

/** Ids per migrate-model.lua call (each takes 5 keys; the script also stops at BULK_CALL_BYTES of values read). */
const MIGRATE_BATCH = 250;

/** Topics per page of the registry walk (one SSCAN and one pipelined request of HLENs each). */
const TOPIC_PAGE = 500;

/** Per isolate: the prefixes found migrated (by this isolate or another), which need no check again. */
const migrated = new Set<string>();

/**
 * Per Queue (in a Worker, per request): its check and migration while it
 * runs. Not shared across requests: workerd cancels a request's pending
 * continuations once the request that started the awaited I/O ends, so a
 * promise from a request that is cancelled meanwhile could hang another. A
 * failed one is forgotten, so the next operation tries again.
 */
const running = new WeakMap<QueueContext, Promise<void>>();

/**
 * Resolves once the deployment's data is in the per-job model: once an
 * isolate found it so for a prefix, at no cost; before that, one GET per
 * Queue (concurrent first requests of a cold isolate each ask once), and the
 * first time, the migration.
 *
 * Two Queues may migrate at once (two isolates, or two first requests of
 * one), and so may one that still runs and one that already finished:
 * nothing is lost or duplicated, because every move is one
 * migrate-model.lua call, atomic in Redis, that reads an id's old copies,
 * writes its new keys only where they are absent (SET NX: a key written
 * since holds the newer state) and deletes the old copies in the same call.
 * So an id is never in both models between calls, a second move of it finds
 * no old copy and writes nothing, and which Queue moved it is immaterial.
 * The marker is set only after this Queue saw every old hash empty; a
 * Queue's own operations wait for its own migration, whatever the marker.
 */
export function ensureModel(ctx: QueueContext): Promise<void> {
  const prefix = ctx.keys.prefix;
  if (migrated.has(prefix)) return Promise.resolve();
  let mine = running.get(ctx);
  if (!mine) {
    mine = migrateIfNeeded(ctx).then(
      () => {
        migrated.add(prefix);
      },
      (err: unknown) => {
        running.delete(ctx);
        throw err;
      },
    );
    running.set(ctx, mine);
  }
  return mine;
}

async function migrateIfNeeded(ctx: QueueContext): Promise<void> {
  const marker = await redisCall({ name: "GET", repeatSafe: true }, () => ctx.redis.get<string>(ctx.keys.model));
  if (marker !== null && String(marker) === MODEL_VERSION) return;
  const now = ctx.now();
  const k = ctx.keys;
  const buckets = legacyBuckets(ctx, now);
  // The record hash first: a job found there is live, and its old done record (a replayed letter's) goes with it.
  for (const hash of [k.legacyJobs, k.legacyMeta, ...buckets]) await drain(ctx, hash, buckets, (id) => id.slice(0, id.length - 27));
  let cursor = "0";
  do {
    const [next, topics] = await redisCall({ name: "SSCAN", repeatSafe: true }, () => ctx.redis.sscan(k.topics, cursor, { count: TOPIC_PAGE }));
    cursor = String(next);
    const names = topics.map(String);
    if (names.length === 0) continue;
    const lengths = await redisCall({ name: "pipeline HLEN", repeatSafe: true }, () =>
      pipelineRead(
        ctx.redis,
        names.map((t) => ["HLEN", k.topic(t).deadEntries]),
      ),
    );
    for (const [i, topic] of names.entries()) {
      if (Number(lengths[i]) > 0) await drain(ctx, k.topic(topic).deadEntries, buckets, () => topic);
    }
  } while (cursor !== "0");
  await redisCall({ name: "SET", repeatSafe: true }, () => ctx.redis.set(k.model, MODEL_VERSION));
}

/** The two old done buckets a job finished within the retention window before `now` may be in (the old model's). */
function legacyBuckets(ctx: QueueContext, now: number): [string, string] {
  return [ctx.keys.legacyDone(now, ctx.retentionMs), ctx.keys.legacyDone(now - ctx.retentionMs, ctx.retentionMs)];
}

/**
 * Moves every id of one old hash, a batch at a time, until it is empty.
 * HRANDFIELD answers field names only (HSCAN would carry every payload over
 * the wire); each call of the script drops every id it looked at from every
 * old hash, so the hash shrinks by each batch. An isolate of the old version
 * may still write to it: the loop stops after twice the rounds the hash's
 * first length needs, and what such an isolate enqueues later is found by
 * the claim (migrateOrphans).
 */
async function drain(ctx: QueueContext, hash: string, buckets: [string, string], topicOf: (id: string) => string): Promise<void> {
  const length = Number(await redisCall({ name: "HLEN", repeatSafe: true }, () => ctx.redis.hlen(hash)));
  const rounds = 2 * Math.ceil(length / MIGRATE_BATCH) + 2;
  for (let round = 0; round < rounds; round++) {
    const ids = await redisCall({ name: "HRANDFIELD", repeatSafe: true }, () => ctx.redis.hrandfield(hash, MIGRATE_BATCH));
    if (!Array.isArray(ids) || ids.length === 0) return;
    await migrateIds(ctx, ids.map(String), buckets, topicOf, false);
  }
}

/** Runs migrate-model.lua over `ids` (sending again what a call left for its byte budget); answers the ids moved and the orphans dropped. */
async function migrateIds(
  ctx: QueueContext,
  ids: string[],
  buckets: [string, string],
  topicOf: (id: string) => string,
  dropOrphans: boolean,
): Promise<{ moved: number; dropped: string[] }> {
  const k = ctx.keys;
  let moved = 0;
  const dropped: string[] = [];
  for (let rest = ids; rest.length > 0; ) {
    const batch = rest.slice(0, MIGRATE_BATCH);
    const keys = [k.legacyJobs, k.legacyMeta, ...buckets];
    for (const id of batch) {
      const job = k.job(id);
      const t = k.topic(topicOf(id));
      keys.push(job.record, job.meta, t.done, t.deadEntries, t.due);
    }
    const reply = replies.migrateModel.parse(await runScript(ctx.redis, lua.migrateModel, keys, [dropOrphans ? 1 : 0, BULK_CALL_BYTES, ...batch]));
    if (reply.looked < 1) throw new Error(`migrate-model dealt with none of ${batch.length} ids`);
    moved += reply.moved;
    dropped.push(...reply.dropped);
    rest = rest.slice(reply.looked);
  }
  return { moved, dropped };
}

/**
 * For due ids of `topic` that a claim found without a record: jobs an
 * isolate of the old version enqueued (or retried) after the migration, in
 * the old hashes. Moves those that are there (they stay due, for the next
 * claim to take); drops from the due set those found in neither model, which
 * nothing could ever run, and answers them.
 */
export async function migrateOrphans(ctx: QueueContext, topic: string, ids: readonly string[]): Promise<{ moved: number; dropped: string[] }> {
  if (ids.length === 0) return { moved: 0, dropped: [] };
  return migrateIds(ctx, [...ids], legacyBuckets(ctx, ctx.now()), () => topic, true);
}
