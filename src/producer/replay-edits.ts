import type { Context } from "hono";
import { topicOfJobId } from "../queue/ids.js";
import type { EnqueueInput, Queue } from "../queue/queue.js";
import type { JobRecord, Target } from "../queue/types.js";
import { type AppEnv, topicQueue, wakeSoonJobs } from "./context.js";

// A dead-letter replay with edits: each replayed job gets the same new
// payload, target or webhook headers. In its own topic a letter keeps its id:
// its record is rewritten while it is still dead (an "edited" marker in its
// history), then it is replayed as any letter is. Into another topic it
// becomes a new job there (ids name their topic), enqueued first with an
// idempotency key of its letter's id, so a retry after a failure between the
// two steps finds that job again rather than making another; then the letter
// is finished as "moved", its history naming the new job. Nothing is lost:
// a letter leaves the dead letters only once its new job is stored.

/** The fields a replay may change, in the order a history's marker names them. */
const EDITABLE = ["payload", "target", "webhookHeaders", "topic"] as const;

/** What a replay changes in each job it puts back. */
export interface ReplayEdits {
  payload?: unknown;
  target?: Target | undefined;
  webhookHeaders?: Record<string, string> | undefined;
  topic?: string | undefined;
}

/** When replayed jobs are due: from `dueAt`, spread at random over `spreadMs`. */
interface Timing {
  dueAt: number;
  spreadMs?: number;
}

/** The fields a replay's body changes; a topic naming the letters' own changes nothing. */
export function changesOf(edits: ReplayEdits, topic: string): string[] {
  return EDITABLE.filter((f) => edits[f] !== undefined && !(f === "topic" && edits.topic === topic));
}

/** A letter's record with the edits made, as stored (no createdAt: the id's ULID holds it). */
function editedRecord(record: JobRecord, edits: ReplayEdits): Omit<JobRecord, "createdAt"> {
  const { createdAt: _createdAt, ...stored } = record;
  if (edits.payload !== undefined) stored.payload = edits.payload;
  if (edits.target !== undefined) stored.target = edits.target;
  if (edits.webhookHeaders !== undefined) stored.webhookHeaders = edits.webhookHeaders;
  return stored;
}

const dueOf = (timing: Timing) => timing.dueAt + Math.floor(Math.random() * (timing.spreadMs ?? 0));

/**
 * The job a letter becomes in another topic: its record with the edits, keyed
 * by the letter's id (no job key, schedule or key of its own), and never
 * merged into another job by the topic's content dedup: a replay is asked for.
 */
function movedInput(letter: { id: string; record: JobRecord }, edits: ReplayEdits & { topic: string }, timing: Timing): EnqueueInput {
  const { payload, maxAttempts, backoff, target, timeoutMs, webhookHeaders, flowKey, priority, labels } = editedRecord(letter.record, edits);
  const kept = Object.entries({ maxAttempts, backoff, target, timeoutMs, webhookHeaders, flowKey, priority, labels }).filter(([, v]) => v !== undefined);
  return { topic: edits.topic, payload, runAt: dueOf(timing), idempotencyKey: `replay:${letter.id}`, contentDedup: false, ...Object.fromEntries(kept) };
}

/**
 * Moves letters into another topic: their new jobs first, then the letters
 * finished as moved. A letter that stopped being dead between the read and
 * the move (another call replayed or purged it) stays as it is, and the job
 * made for it is cancelled — unless an earlier try of this replay made it
 * (its idempotency key found it), whose letter that try may have moved.
 */
async function moveLetters(
  c: Context<AppEnv>,
  from: Queue,
  topic: string,
  letters: Array<{ id: string; record: JobRecord }>,
  edits: ReplayEdits & { topic: string },
  changes: string[],
  timing: Timing,
) {
  const to = topicQueue(c, edits.topic);
  const stored = await to.enqueueBatch(letters.map((l) => movedInput(l, edits, timing)));
  const moved = new Set(
    await from.editDeadLetters(
      topic,
      "move",
      letters.map((l, i) => ({ id: l.id, value: stored[i]!.id })),
      changes,
    ),
  );
  const movedTo: Record<string, string> = {};
  const gone: string[] = [];
  for (const [i, l] of letters.entries()) {
    if (moved.has(l.id)) movedTo[l.id] = stored[i]!.id;
    else {
      gone.push(l.id);
      if (!stored[i]!.deduplicated) await to.cancel(stored[i]!.id);
    }
  }
  await wakeSoonJobs(
    c,
    stored.filter((_, i) => moved.has(letters[i]!.id)),
  );
  return { movedTo, gone };
}

/**
 * Replays the topic's given letters with edits (`changes` names the fields),
 * a bounded batch of records read at a time. Answers as a replay by ids does,
 * with, into another topic, each letter's new job.
 */
export async function replayEdited(
  c: Context<AppEnv>,
  topic: string,
  ids: string[],
  edits: ReplayEdits,
  timing: Timing,
): Promise<{ replayed: number; notFound: string[]; movedTo?: Record<string, string> }> {
  const queue = topicQueue(c, topic);
  const changes = changesOf(edits, topic);
  const unique = [...new Set(ids)];
  // An id of another topic, or no job id at all, is no letter of this one: its keys are not read.
  const notFound = new Set(unique.filter((id) => topicOfJobId(id) !== topic));
  const movedTo: Record<string, string> = {};
  let pending = unique.filter((id) => !notFound.has(id));
  let replayed = 0;
  while (pending.length > 0) {
    const read = await queue.deadRecords(pending);
    pending = pending.slice(Math.max(1, read.looked));
    for (const id of read.notFound) notFound.add(id);
    if (read.letters.length === 0) continue;
    if (changes.includes("topic")) {
      const r = await moveLetters(c, queue, topic, read.letters, edits as ReplayEdits & { topic: string }, changes, timing);
      Object.assign(movedTo, r.movedTo);
      replayed += Object.keys(r.movedTo).length;
      for (const id of r.gone) notFound.add(id);
      continue;
    }
    const letters = read.letters.map((l) => ({ id: l.id, value: JSON.stringify(editedRecord(l.record, edits)) }));
    const edited = new Set(await queue.editDeadLetters(topic, "record", letters, changes));
    for (const l of letters) if (!edited.has(l.id)) notFound.add(l.id);
    const r = await queue.replayDeadLetters(topic, { ids: [...edited], ...timing });
    replayed += r.replayed;
    for (const id of r.notFound) notFound.add(id);
  }
  const result = { replayed, notFound: unique.filter((id) => notFound.has(id)) };
  return changes.includes("topic") ? { ...result, movedTo } : result;
}
