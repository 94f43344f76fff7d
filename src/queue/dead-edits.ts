import { BULK_CALL_BYTES, DEAD_BATCH } from "../limits.js";
import type { QueueContext } from "./context.js";
import { readJobs } from "./job-reads.js";
import * as lua from "./lua.generated.js";
import { replies } from "./replies.js";
import type { JobRecord } from "./types.js";

// A replay with edits, the queue's part: the records of letters to change,
// and edit-dead.lua, which writes their new records (the caller replays them
// next) or finishes them as moved to another topic (the caller enqueued
// their new jobs first). Each is bounded: records are read within a byte
// budget, and the script reads metas within one.

/** The records of those of `ids` (the topic's) that are dead letters, read within a byte budget: `looked` says how many of the ids were. */
export async function deadRecords(
  ctx: QueueContext,
  ids: string[],
): Promise<{ letters: Array<{ id: string; record: JobRecord }>; notFound: string[]; looked: number }> {
  const ours = ids.slice(0, DEAD_BATCH);
  const read = await readJobs(ctx, ours, true, BULK_CALL_BYTES);
  const letters: Array<{ id: string; record: JobRecord }> = [];
  const notFound: string[] = [];
  for (const [i, { record, meta }] of read.entries()) {
    const id = ours[i]!;
    if (record && (meta?.st === "dead" || meta?.st === "expired")) letters.push({ id, record });
    else notFound.push(id);
  }
  return { letters, notFound, looked: read.length };
}

/**
 * Changes letters that are still dead (edit-dead.lua), each with its value:
 * "record", its new record; "move", the id of the job that took its place.
 * `changes` names the fields changed, for the marker in each history.
 * Answers the ids changed.
 */
export async function editDeadLetters(
  ctx: QueueContext,
  topic: string,
  mode: "record" | "move",
  letters: Array<{ id: string; value: string }>,
  changes: string[],
): Promise<string[]> {
  const t = ctx.keys.topic(topic);
  const changed: string[] = [];
  for (let at = 0; at < letters.length; ) {
    const batch = letters.slice(at, at + DEAD_BATCH);
    const raw = await ctx.run(
      lua.editDead,
      [t.deadAt, t.done, ...ctx.keys.jobPairs(batch.map((l) => l.id))],
      [mode, ctx.now(), JSON.stringify(changes), BULK_CALL_BYTES, ...batch.flatMap((l) => [l.id, l.value])],
    );
    const r = replies.editDead.parse(raw);
    changed.push(...r.changed);
    at += Math.max(1, r.handled);
  }
  return changed;
}
