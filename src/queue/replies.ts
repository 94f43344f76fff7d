import { z } from "zod";
import { Code } from "./codes.js";
import { coded, time } from "./reply-parts.js";
import { flowReplies } from "./flow-replies.js";
import { SCHEDULES_INDEX_MEMBER } from "./keys.js";
import { malformed } from "./malformed.js";
import { topicLimitOf, writeReplies } from "./write-replies.js";
import type { LeaseExtension } from "./views.js";
import {
  flatHash,
  intReply,
  metaSchema,
  nullableString,
  NUMERIC_TEXT,
  numericReply,
  parseDefinition,
  parseRecord,
  parseState,
  vectorText,
  type JobMeta,
  type JobRecord,
  type StoredSchedule,
} from "./types.js";

// What each Lua script answers, decoded in one place per script (named as
// in lua.generated.ts): the shape its header's Returns describes, its codes
// read through src/queue/codes.ts, and the stored documents it carries parsed
// by their schemas. A reply of another shape is a bug, so decoding throws.

const more = coded(Code.More, { More: true, Done: false });
const score = z.union([z.string(), z.number()]);
const listedValue = z.union([z.string(), z.number(), z.null()]);
const cell = z.union([z.string(), z.number()]);

const fenced = coded(Code.Fenced, { Applied: true, Stale: false });
const ours = coded(Code.Lock, { Ours: true, NotOurs: false });
const paused = coded(Code.Paused, { Paused: true, Active: false });
const asleep = coded(Code.Asleep, { Asleep: true, Awake: false });
/** The tick's sleep mark as stored (src/tick/sleep-mark.ts): "1" a loop sleeps, "c" no loop runs till the next cron; null: unset. */
export const sleepMark = z
  .union([z.string(), z.number(), z.null()])
  .transform((v): "1" | "c" | null => (v === "c" ? "c" : v === null || v === "" ? null : "1"));
const heldBy = coded(Code.HeldBy, {
  Nothing: null,
  Concurrency: "concurrency",
  Rate: "rate",
  Paused: "paused",
  Mode: "mode",
  Bytes: "bytes",
  Shaped: "shaped",
} as const);

const leaseChange = coded(Code.Lease, { Extended: "extended", Stale: "stale", Unknown: "not-found", Push: "push" } as const);

/** A bounded step of a walk: how many it handled, and where the next step starts (null: the window holds no more). */
const step = z.tuple([intReply, more, score, z.string()]).transform(([count, hasMore, at, id]) => ({
  count,
  next: hasMore ? { score: numericReply.parse(at), id } : null,
}));

/** Job ids, as a script returns a list (an empty Lua table arrives as an empty array). */
const idList = z.array(z.string());

/** claim.lua's reply before its jobs: the topic as the claim left it. */
const claimHead = z
  .tuple([time, numericReply, numericReply, paused, numericReply, heldBy, time, numericReply, flatHash, idList, idList, idList])
  .transform(([nextDueAt, retried, dead, isPaused, rateLimitedForMs, held, nextLookAt, leaseDeadline, conf, sweepDone, sweepDead, orphans]) => ({
    nextDueAt,
    reaped: { retried, dead },
    paused: isPaused,
    rateLimitedForMs,
    heldBy: held,
    nextLookAt,
    leaseDeadline,
    conf,
    sweepDone,
    sweepDead,
    orphans,
  }));
const CLAIM_HEAD = 12;

/** A Redis number as Lua returns it (an integer) or as Redis stores it (a numeric string, e.g. a score). */
function numericCell(v: unknown, script: string, what: string): number {
  if (typeof v === "number") return v;
  if (typeof v === "string" && NUMERIC_TEXT.test(v)) return Number(v);
  return malformed(script, what, v);
}

/**
 * claim.lua: the topic as the claim left it (next due time, leases reaped,
 * whether it is paused, how long the rate limit holds, what held jobs back,
 * its index score, the lease deadline of a job due now, the conf it read,
 * the ids to sweep and the orphans), then per job taken its id, attempt, due time and record. The jobs, up to a
 * thousand, are read by hand rather than by a schema per cell (in workerd
 * zod walks a schema instead of compiling it); they are checked as strictly.
 */
function claimReply(raw: unknown) {
  if (!Array.isArray(raw) || (raw.length - CLAIM_HEAD) % 4 !== 0) return malformed("claim", "the reply", raw);
  const head = claimHead.parse(raw.slice(0, CLAIM_HEAD));
  const jobs: Array<{ id: string; attempt: number; dueAt: number; record: JobRecord }> = [];
  for (let i = CLAIM_HEAD; i < raw.length; i += 4) {
    const id: unknown = raw[i];
    const attempt: unknown = raw[i + 1];
    const record: unknown = raw[i + 3];
    if (typeof id !== "string") return malformed("claim", "a job id", id);
    if (!Number.isSafeInteger(attempt)) return malformed("claim", "an attempt", attempt);
    if (typeof record !== "string") return malformed("claim", "a record", record);
    jobs.push({ id, attempt: attempt as number, dueAt: numericCell(raw[i + 2], "claim", "a due time"), record: parseRecord(record, id) });
  }
  return { ...head, jobs };
}

/** settle.lua: per outcome, whether it applied (Code.Fenced); `n` outcomes were sent. */
function settleReply(raw: unknown, n: number): boolean[] {
  if (!Array.isArray(raw) || raw.length !== n) return malformed("settle", `the reply to ${n} outcomes`, raw);
  const applied: boolean[] = [];
  for (const code of raw) {
    if (code === Code.Fenced.Applied) applied.push(true);
    else if (code === Code.Fenced.Stale) applied.push(false);
    else return malformed("settle", "a code", code);
  }
  return applied;
}

export const replies = {
  ...writeReplies,

  /** claim.lua: see {@link claimReply}. */
  claim: { parse: claimReply },
  ...flowReplies,

  /** settle.lua: see {@link settleReply}. */
  settle: { parse: settleReply },

  /** extend-lease.lua: extended, with the new deadline; or why not. */
  extendLease: z.tuple([leaseChange], numericReply).transform(([result, deadline], ctx): LeaseExtension => {
    if (result !== "extended") return { result };
    if (deadline === undefined) {
      ctx.addIssue({ code: "custom", message: "an extension without its deadline" });
      return z.NEVER;
    }
    return { result, leaseExpiresAt: deadline };
  }),

  /** sweep.lua: finished jobs and dead letters dropped. */
  sweep: z.tuple([intReply, intReply]),

  cancel: coded(Code.JobChange, { Changed: "cancelled", NotScheduled: "not-found", InFlight: "inflight" } as const),

  cancelJobs: {
    /** "window": a step of the walk, and the topic's jobs in flight. */
    window: z.tuple([intReply, more, score, z.string(), intReply]).transform(([cancelled, hasMore, at, id, inflight]) => ({
      cancelled,
      inflight,
      // A call that stops early has cancelled at least one job: its position is where the next one goes on.
      next: hasMore ? { score: numericReply.parse(at), id } : null,
    })),
    /** "ids": how many of the given ids were handled, and of those in flight and not scheduled. */
    ids: z
      .tuple([intReply, intReply, intReply, intReply])
      .transform(([cancelled, handled, inflight, notScheduled]) => ({ cancelled, handled, inflight, notScheduled })),
  },

  reschedule: coded(Code.JobChange, { Changed: "rescheduled", NotScheduled: "not-found", InFlight: "inflight" } as const),

  /** get.lua: the job's record and meta (finished or not), its scores in the due and lease sets, its topic's maxAttempts. */
  get: z.tuple([nullableString, nullableString, nullableString, nullableString, nullableString]).transform(([record, meta, due, lease, topicMaxAttempts]) => ({
    // Its text: parseRecord needs the id (job-reads.ts has it).
    record,
    meta: meta ? metaSchema.parse(JSON.parse(meta)) : null,
    due: due ? Number(due) : null,
    lease: lease ? Number(lease) : null,
    topicMaxAttempts: topicMaxAttempts ? Number(topicMaxAttempts) : null,
  })),

  /** list-topics.lua: topics registered, whether more names follow, the page's names. */
  listTopics: z.tuple([intReply, more], z.string()).transform(([total, hasMore, ...names]) => ({ total, more: hasMore, names })),

  /** list-jobs.lua: whether more jobs follow the page, then the page's ids and scores. */
  listJobs: z.tuple([more], listedValue).transform(([hasMore, ...rows]) => {
    const jobs: Array<{ id: string; score: number }> = [];
    for (let i = 0; i + 1 < rows.length; i += 2) jobs.push({ id: String(rows[i]), score: numericReply.parse(rows[i + 1]) });
    return { more: hasMore, jobs };
  }),

  /** read-jobs.lua: per job read, its record's text (null: not asked for, or none; parseRecord needs the id) and meta (null: none). */
  readJobs: z.array(nullableString).transform((rows) => {
    const jobs: Array<{ record: string | null; meta: JobMeta | null }> = [];
    for (let i = 0; i + 1 < rows.length; i += 2) {
      const record = rows[i] ?? null;
      const meta = rows[i + 1];
      jobs.push({ record, meta: meta ? metaSchema.parse(JSON.parse(meta)) : null });
    }
    return jobs;
  }),

  /** migrate-model.lua: how many of the ids it dealt with (the first n), how many got keys, and the orphans it dropped from their due set. */
  migrateModel: z.tuple([intReply, intReply], z.string()).transform(([looked, moved, ...dropped]) => ({ looked, moved, dropped })),

  /** list-dead.lua: whether more letters follow the page, then the page's ids and failed times. */
  listDead: z.tuple([more], listedValue).transform(([hasMore, ...rows]) => {
    const letters: Array<{ id: string; score: number }> = [];
    for (let i = 0; i + 1 < rows.length; i += 2) letters.push({ id: String(rows[i]), score: numericReply.parse(rows[i + 1]) });
    return { more: hasMore, letters };
  }),

  /** label-page.lua: whether the walk goes on, after which member, then the members of the wanted states: id, state letter, score. */
  labelPage: z.tuple([more, z.string()], listedValue).transform(([hasMore, after, ...rows]) => {
    const jobs: Array<{ id: string; state: "scheduled" | "inflight" | "dead"; score: number }> = [];
    const STATES = { s: "scheduled", i: "inflight", d: "dead" } as const;
    for (let i = 0; i + 2 < rows.length; i += 3) {
      jobs.push({ id: String(rows[i]), state: STATES[String(rows[i + 1]) as keyof typeof STATES], score: numericReply.parse(rows[i + 2]) });
    }
    return { after: hasMore ? after : null, jobs };
  }),

  replayDead: {
    ids: z.tuple([intReply, intReply], z.string()).transform(([replayed, handled, ...notFound]) => ({ replayed, handled, notFound })),
    /** Walking: letters changed, and the position the walk goes on from (purge-dead.lua's walk answers the same). */
    walk: step,
  },

  purgeDead: {
    ids: z.tuple([intReply]).transform(([purged]) => purged),
    walk: step,
  },
  editDead: z.tuple([intReply], z.string()).transform(([handled, ...changed]) => ({ handled, changed })),

  configureTopic: coded(Code.Write, { Written: "written", TopicLimit: "topic-limit" } as const),

  /** delete-topic.lua: what the call did and found, then the set of the next batch to drop and its ids. */
  deleteTopic: z
    .tuple(
      [
        coded(Code.TopicDeletion, { Deleted: "deleted", Purging: "purging", InFlight: "inflight", NotEmpty: "not-empty" } as const),
        intReply,
        intReply,
        intReply,
        intReply,
        intReply,
        z.enum(["due", "fkidx", "fdue", "dead", "done", ""]),
      ],
      z.string(),
    )
    .transform(([result, dropped, droppedDead, scheduled, inflight, dead, set, ...ids]) => ({
      result,
      dropped,
      droppedDead,
      scheduled,
      inflight,
      dead,
      batch: { set, ids },
    })),

  topicStats: z
    .tuple([
      intReply,
      intReply,
      intReply,
      intReply,
      flatHash,
      z.tuple([nullableString, nullableString, vectorText.nullable(), nullableString]),
      nullableString,
      z.union([z.tuple([intReply, intReply, intReply, intReply]), z.tuple([])]),
    ])
    .transform(([scheduled, ready, inflight, dead, conf, [dispatched, dropped, total, expired], oldest, keys]) => ({
      scheduled,
      ready,
      inflight,
      dead,
      conf,
      dispatched,
      dropped,
      expired,
      total,
      oldest,
      flowKeys: keys.length === 4 ? { inTurn: keys[0], waitingForRate: keys[1], atParallelism: keys[2], paused: keys[3] } : null,
    })),

  /** lock-acquire.lua: taken; or held, for how many ms yet, with the holder's lock value and whether the holder sleeps. */
  lockAcquire: z.tuple([ours], cell).transform(([taken, ttl, holder, sleeps]) =>
    taken
      ? ({ acquired: true } as const)
      : ({
          acquired: false,
          heldForMs: Math.max(0, Number(ttl ?? 0)),
          holder: String(holder ?? ""),
          holderAsleep: asleep.parse(sleeps),
        } as const),
  ),

  lockRelease: ours,

  /**
   * peek.lua: whether the tick lock is still ours, the due topics (the
   * schedules' member of the topic index told apart), whether more may be
   * due, when the next falls due, and the topics to sample.
   */
  look: z.tuple([coded(Code.Held, { Held: true, Free: false }), cell, time]).transform(([lockHeld, mark, earliestAt]) => ({
    lockHeld,
    sleepMark: sleepMark.parse(mark),
    earliestAt,
  })),
  peek: z.tuple([ours, more, time, z.array(z.string()), z.array(z.string())]).transform(([lockHeld, hasMore, nextAt, due, toSample]) => {
    const dueTopics: Array<{ topic: string; at: number }> = [];
    let schedulesDue = false;
    for (let i = 0; i + 1 < due.length; i += 2) {
      if (due[i] === SCHEDULES_INDEX_MEMBER) schedulesDue = true;
      else dueTopics.push({ topic: due[i]!, at: Number(due[i + 1]) });
    }
    return { lockHeld, due: dueTopics, schedulesDue, more: hasMore, nextAt, toSample: toSample.filter((t) => t !== SCHEDULES_INDEX_MEMBER) };
  }),

  /** schedule-write.lua: written, or not (changed since it was read); or the topic limit. */
  scheduleWrite: z
    .tuple([coded(Code.Write, { Written: "written", Changed: "changed", TopicLimit: "topic-limit" } as const)], intReply)
    .transform((reply) => (reply[0] === "topic-limit" ? topicLimitOf(reply) : { result: reply[0] })),

  scheduleDelete: coded(Code.Removed, { Removed: true, Missing: false }),

  schedulesDue: z.tuple([more], z.string()).transform(([hasMore, ...rows]) => {
    const schedules: StoredSchedule[] = [];
    for (let i = 0; i + 2 < rows.length; i += 3) {
      const [id, definition, state] = [rows[i]!, rows[i + 1]!, rows[i + 2]!];
      // Deleted between the index and the read: left out.
      if (definition && state) schedules.push({ id, definition: parseDefinition(definition), state: parseState(state) });
    }
    return { more: hasMore, schedules };
  }),

  /** schedule-fire.lua: per firing whether it stored its job, then the earliest due occurrence left. */
  scheduleFire: z.array(intReply).transform((reply) => ({
    fired: reply.slice(0, -1).map((r) => fenced.parse(r)),
    nextAt: time.parse(reply.at(-1)),
  })),
};
