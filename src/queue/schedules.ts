import { MAIN_SHARD } from "./ids.js";
import type { Redis } from "@upstash/redis/cloudflare";
import { z } from "zod";
import { MAX_LIST_LIMIT, REQUEST_BUDGET_BYTES } from "../limits.js";
import type { Keys } from "./keys.js";
import * as lua from "./lua.generated.js";
import { redisCall } from "./redis.js";
import { replies } from "./replies.js";
import { fitRequest } from "./request-size.js";
import { runScript } from "./scripts.js";
import { TopicLimitError } from "./errors.js";
import { nullableString, parseDefinition, parseState, type ScheduleDefinition, type ScheduleState, type StoredSchedule } from "./types.js";

export type { JobTemplate, ScheduleDefinition, ScheduleState, StoredSchedule } from "./types.js";

/** One occurrence to fire (see {@link Schedules.fire}). */
export interface Firing {
  id: string;
  /** The state it was read at: it fires only if it is still there. */
  read: ScheduleState;
  jobId: string;
  /** The job record JSON to store. */
  record: string;
  /** The occurrence the job is for (its due time). */
  occurrence: number;
  /** The state after it (rev unchanged). */
  state: ScheduleState;
  topic: string;
}

/** Most schedules one fire call takes. */
const FIRE_BATCH = 100;

/**
 * Schedules in Redis: definitions, states, the due set the tick fires from
 * and the topic index's "~schedules" member (src/queue/lua/lib/index.lua).
 * Every change is one fenced script: a write is a compare-and-set on the
 * revision its caller read, a fire stores a job only for the occurrence the
 * tick read, so no interleaving stores two jobs for one occurrence.
 */
export class Schedules {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly maxTopics: number,
    /** Largest request a schedule write may make (see QueueOptions.requestBudgetBytes). Default REQUEST_BUDGET_BYTES. */
    private readonly requestBudgetBytes: number = REQUEST_BUDGET_BYTES,
    /** The shard these schedules are on: the ids of the jobs their occurrences store name it. Default `main`. */
    readonly shard: string = MAIN_SHARD,
  ) {}

  async get(id: string): Promise<StoredSchedule | null> {
    const [def, state] = await Promise.all([
      redisCall({ name: "HGET", repeatSafe: true }, () => this.redis.hget<string>(this.keys.scheduleDefs, id)),
      redisCall({ name: "HGET", repeatSafe: true }, () => this.redis.hget<string>(this.keys.scheduleState, id)),
    ]);
    if (typeof def !== "string" || typeof state !== "string") return null;
    return { id, definition: parseDefinition(def), state: parseState(state) };
  }

  /** A page of schedules in id order; `cursor` is the last id of the page before. */
  async list(options: { limit: number; cursor?: string }): Promise<{ schedules: StoredSchedule[]; cursor: string | null }> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), MAX_LIST_LIMIT);
    const from: "-" | `(${string}` = options.cursor ? `(${options.cursor}` : "-";
    const ids = z
      .array(z.string())
      .parse(
        await redisCall({ name: "ZRANGE", repeatSafe: true }, () =>
          this.redis.zrange(this.keys.scheduleIds, from, "+", { byLex: true, offset: 0, count: limit + 1 }),
        ),
      );
    const page = ids.slice(0, limit);
    if (page.length === 0) return { schedules: [], cursor: null };
    // Without automatic deserialization HMGET arrives as an array of values (or null when no field exists).
    const values = z.array(nullableString).nullable();
    const [defs, states] = await Promise.all([
      redisCall({ name: "HMGET", repeatSafe: true }, async () => values.parse(await this.redis.hmget(this.keys.scheduleDefs, ...page))),
      redisCall({ name: "HMGET", repeatSafe: true }, async () => values.parse(await this.redis.hmget(this.keys.scheduleState, ...page))),
    ]);
    const schedules: StoredSchedule[] = [];
    for (const [i, id] of page.entries()) {
      const def = defs?.[i];
      const state = states?.[i];
      // Deleted between the two reads: left out.
      if (typeof def === "string" && typeof state === "string") schedules.push({ id, definition: parseDefinition(def), state: parseState(state) });
    }
    return { schedules, cursor: ids.length > limit ? page[page.length - 1]! : null };
  }

  /**
   * Writes a schedule if it is still at revision `readRev` (0: it must not
   * exist): its definition (null: keep it), its new state (rev readRev + 1)
   * and its place in the due set. Returns false when it changed meanwhile.
   */
  async write(id: string, readRev: number, definition: ScheduleDefinition | null, state: ScheduleState): Promise<boolean> {
    if (state.rev !== readRev + 1) throw new RangeError("a write moves the revision by one");
    const k = this.keys;
    const keys = [k.scheduleDefs, k.scheduleState, k.scheduleIds, k.schedulesDue, k.topicIndex, k.topics];
    const args = [
      id,
      readRev,
      definition ? JSON.stringify(definition) : "",
      JSON.stringify(state),
      state.next ?? "",
      definition?.job.topic ?? "",
      this.maxTopics,
    ];
    // A definition carries its job's payload, which escaping can double on the wire.
    fitRequest(this.requestBudgetBytes, "schedule", lua.scheduleWrite, keys, args);
    const reply = replies.scheduleWrite.parse(await runScript(this.redis, lua.scheduleWrite, keys, args));
    if (reply.result === "topic-limit") throw new TopicLimitError(reply.count, reply.limit);
    return reply.result === "written";
  }

  /** Deletes a schedule; false when there was none. Jobs it stored stay. */
  async delete(id: string): Promise<boolean> {
    const k = this.keys;
    return replies.scheduleDelete.parse(
      await runScript(this.redis, lua.scheduleDelete, [k.scheduleDefs, k.scheduleState, k.scheduleIds, k.schedulesDue, k.topicIndex], [id]),
    );
  }

  /** Schedules whose next occurrence is at or before `now`, earliest first (at most FIRE_BATCH). */
  async due(now: number): Promise<{ schedules: StoredSchedule[]; more: boolean }> {
    const k = this.keys;
    return replies.schedulesDue.parse(await runScript(this.redis, lua.schedulesDue, [k.schedulesDue, k.scheduleDefs, k.scheduleState], [now, FIRE_BATCH]));
  }

  /**
   * Stores each firing's job and advances its schedule, each only if it is
   * still at what was read. Firings go in calls whose requests fit the
   * request budget (a firing carries its job's record, payload and all):
   * each call is atomic for its own firings, and the schedules' due head the
   * last one answers is the one after all of them.
   */
  async fire(firings: Firing[]): Promise<{ fired: boolean[]; nextAt: number | null }> {
    if (firings.length === 0) return { fired: [], nextAt: null };
    const fired: boolean[] = [];
    let nextAt: number | null = null;
    for (let from = 0; from < firings.length; ) {
      // A record's JSON text can double on the wire (escapes): half the budget for the records, the rest for all else.
      let to = from + 1;
      let bytes = firings[from]!.record.length;
      while (to < firings.length && bytes + firings[to]!.record.length <= this.requestBudgetBytes / 4) bytes += firings[to++]!.record.length;
      const r = await this.fireCall(firings.slice(from, to));
      fired.push(...r.fired);
      nextAt = r.nextAt;
      from = to;
    }
    return { fired, nextAt };
  }

  private async fireCall(firings: Firing[]): Promise<{ fired: boolean[]; nextAt: number | null }> {
    const k = this.keys;
    // Per firing: its topic's due set and its job's record key (schedule-fire.lua).
    const keys = [k.scheduleState, k.schedulesDue, k.topicIndex, k.topics, ...firings.flatMap((f) => [k.topic(f.topic).due, k.job(f.jobId).record])];
    const args: Array<string | number> = [firings.length];
    for (const f of firings) {
      if (f.read.next === null) throw new RangeError(`schedule ${f.id} has no occurrence to fire`);
      args.push(f.id, f.read.rev, f.read.next, f.jobId, f.record, f.occurrence, JSON.stringify(f.state), f.state.next ?? "");
    }
    fitRequest(this.requestBudgetBytes, "schedule firing", lua.scheduleFire, keys, args);
    return replies.scheduleFire.parse(await runScript(this.redis, lua.scheduleFire, keys, args));
  }
}
