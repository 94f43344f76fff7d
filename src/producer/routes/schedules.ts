import { createRoute, z } from "@hono/zod-openapi";
import { DEFAULT_DEAD_LIST_LIMIT, MAX_LIST_LIMIT } from "../../limits.js";
import { normalizeBackoff } from "../../queue/policy/backoff.js";
import type { Queue } from "../../queue/queue.js";
import type { JobTemplate, StoredSchedule } from "../../queue/schedules.js";
import { pauseSchedule, resumeSchedule, ScheduleConflictError, ScheduleTimeError, upsertSchedule, type ScheduleInput } from "../../schedules/lifecycle.js";
import { shownTimes } from "../../schedules/shown-times.js";
import { json, problemResponses, router, shardReadDeadline, wakeSoonSchedule, type AppEnv } from "../context.js";
import { findSchedule, listSchedulesAcrossShards, type ShardSchedule } from "../../queue/shard-schedules.js";
import type { Context } from "hono";
import { ApiProblem, invalid } from "../problem.js";
import { partialOf } from "../schema-parts.js";
import { ScheduleBody, ScheduleId, ScheduleList, ScheduleView } from "../schedule-schemas.js";
import { checkPayloadAndTarget } from "./jobs.js";

const IdParam = z.object({ id: ScheduleId.openapi({ param: { name: "id", in: "path" } }) });

/** POST /{id}/pause or /{id}/resume: answers the schedule as it now is. */
function lifecycleRoute<A extends "pause" | "resume">(action: A, summary: string) {
  return createRoute({
    method: "post",
    path: `/{id}/${action}` as `/{id}/${A}`,
    operationId: `${action}Schedule`,
    summary,
    request: { params: IdParam },
    responses: { 200: { description: "The schedule", ...json(ScheduleView) }, ...problemResponses([401, 404, 409, 503]) },
  });
}

/** The schedule a change found, or the 404 of an id that names none. */
function found(id: string, s: StoredSchedule | null): StoredSchedule {
  if (!s) throw new ApiProblem(404, `no schedule ${id}`);
  return s;
}

/** Every shard's copy of schedule `id`, its home first (see src/queue/shard-schedules.ts); none when there is none. */
const schedulesOf = (c: Context<AppEnv>, id: string) => findSchedule(c.get("shards"), id, shardReadDeadline(c.get("settings"), c.get("shards")));

/** {@link schedulesOf}, and 404 when there is none. */
async function copiesOf(c: Context<AppEnv>, id: string): Promise<[ShardSchedule, ...ShardSchedule[]]> {
  const copies = await schedulesOf(c, id);
  if (copies.length === 0) throw new ApiProblem(404, `no schedule ${id}`);
  return copies as [ShardSchedule, ...ShardSchedule[]];
}

function toInput(body: ScheduleBody): ScheduleInput {
  const job: JobTemplate = { topic: body.topic, payload: body.payload ?? null };
  if (body.target !== undefined) job.target = body.target;
  if (body.maxAttempts !== undefined) job.maxAttempts = body.maxAttempts;
  if (body.backoff !== undefined) job.backoff = normalizeBackoff(body.backoff);
  if (body.timeoutMs !== undefined) job.timeoutMs = body.timeoutMs;
  const input: ScheduleInput = { timezone: body.timezone, grace: body.grace, job };
  if (body.cron !== undefined) input.cron = body.cron;
  if (body.every !== undefined) input.every = body.every;
  if (body.startAt !== undefined) input.startAt = body.startAt;
  if (body.endAt !== undefined) input.endAt = body.endAt;
  if (body.limit !== undefined) input.limit = body.limit;
  return input;
}

/** The API's view of a schedule; the last job's state is looked up (null past retention). A time that cannot be shown reads null (see `unreadable`). */
async function view(queue: Queue, s: StoredSchedule): Promise<z.input<typeof ScheduleView>> {
  const d = s.definition;
  const st = s.state;
  const times = shownTimes(d, st);
  const lastJob = st.lastJobId ? await queue.get(st.lastJobId) : null;
  return {
    id: s.id,
    cron: d.cron ?? null,
    every: d.every ?? null,
    timezone: d.timezone,
    startAt: times.startAt,
    endAt: times.endAt,
    limit: d.limit ?? null,
    grace: d.grace,
    topic: d.job.topic,
    payload: d.job.payload,
    ...(d.job.target ? { target: d.job.target } : {}),
    ...(d.job.maxAttempts !== undefined ? { maxAttempts: d.job.maxAttempts } : {}),
    ...(d.job.backoff !== undefined ? { backoff: d.job.backoff } : {}),
    ...(d.job.timeoutMs !== undefined ? { timeoutMs: d.job.timeoutMs } : {}),
    paused: st.paused,
    nextRunAt: times.nextRunAt,
    nextRuns: times.nextRuns,
    runs: st.runs,
    lastRunAt: times.lastRunAt,
    lastJobId: st.lastJobId,
    lastJobState: lastJob?.state ?? null,
    createdAt: times.createdAt,
    updatedAt: times.updatedAt,
    ...(times.unreadable.length > 0 ? { unreadable: times.unreadable } : {}),
  };
}

const conflict = (err: unknown): never => {
  if (err instanceof ScheduleConflictError) throw new ApiProblem(409, err.message);
  if (err instanceof ScheduleTimeError) throw invalid("body", err.fields);
  throw err;
};

export const schedules = router()
  .openapi(
    createRoute({
      method: "put",
      path: "/{id}",
      operationId: "upsertSchedule",
      summary: "Create or replace a recurring schedule",
      description:
        "Each occurrence stores one ordinary job from the template. A replacement that keeps the timing (cron or every, timezone, startAt) keeps the next occurrence; " +
        "a new timing takes effect from its next occurrence after now.",
      request: { params: IdParam, body: { ...json(ScheduleBody), required: true } },
      responses: {
        201: { description: "Created", ...json(ScheduleView) },
        200: { description: "Replaced", ...json(ScheduleView) },
        ...problemResponses([401, 409, 413, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      checkPayloadAndTarget(body, c.get("settings"));
      const shards = c.get("shards");
      const copies = await schedulesOf(c, id);
      const home = shards.shardOf(body.topic);
      const queue = shards.queue(home)!;
      // Its topic lives elsewhere now (a new topic, or a pin moved it): written on the new shard first, then dropped
      // from the old, so a cut between the two leaves two copies (which a repeated PUT clears), never none.
      const movedFrom = copies.some((k) => k.shard === home) ? null : (copies[0]?.schedule ?? null);
      const r = await upsertSchedule(queue.schedules, id, toInput(body), Date.now(), movedFrom).catch(conflict);
      for (const stray of copies.filter((k) => k.shard !== home)) await stray.queue.schedules.delete(id);
      await wakeSoonSchedule(c, queue, r.schedule.state.next);
      return c.json(await view(queue, r.schedule), r.created ? 201 : 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/",
      operationId: "listSchedules",
      summary: "Schedules, a page at a time, in id order",
      request: {
        query: z.object({
          limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_DEAD_LIST_LIMIT),
          cursor: ScheduleId.optional().openapi({ description: "nextCursor of the previous page" }),
        }),
      },
      responses: { 200: { description: "A page", ...json(ScheduleList) }, ...problemResponses([401, 422, 503]) },
    }),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const shards = c.get("shards");
      const page = await listSchedulesAcrossShards(shards, { limit, ...(cursor ? { cursor } : {}) }, shardReadDeadline(c.get("settings"), shards));
      return c.json(
        {
          schedules: await Promise.all(page.schedules.map((k) => view(k.queue, k.schedule))),
          nextCursor: page.cursor,
          ...partialOf(page.missing),
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getSchedule",
      summary: "A schedule, with its next occurrences and its last run",
      request: { params: IdParam },
      responses: { 200: { description: "The schedule", ...json(ScheduleView) }, ...problemResponses([401, 404, 503]) },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const [home] = await copiesOf(c, id);
      return c.json(await view(home.queue, home.schedule), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/{id}",
      operationId: "deleteSchedule",
      summary: "Delete a schedule (the jobs it stored stay)",
      request: { params: IdParam },
      responses: { 204: { description: "Deleted" }, ...problemResponses([401, 404, 503]) },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      let deleted = false;
      for (const k of await schedulesOf(c, id)) deleted = (await k.queue.schedules.delete(id)) || deleted;
      if (!deleted) throw new ApiProblem(404, `no schedule ${id}`);
      return c.body(null, 204);
    },
  )
  .openapi(lifecycleRoute("pause", "Pause a schedule: its occurrences are skipped until it is resumed"), async (c) => {
    const { id } = c.req.valid("param");
    // Every copy (two only while a move was cut short): a paused schedule fires from none.
    const copies = await copiesOf(c, id);
    const paused = await Promise.all(copies.map((k) => pauseSchedule(k.queue.schedules, id).catch(conflict)));
    return c.json(await view(copies[0].queue, found(id, paused[0]!)), 200);
  })
  .openapi(lifecycleRoute("resume", "Resume a schedule from its next occurrence after now"), async (c) => {
    const { id } = c.req.valid("param");
    // Its home alone: a stray copy left by a cut-short move stays paused until a PUT clears it.
    const [home] = await copiesOf(c, id);
    const s = found(id, await resumeSchedule(home.queue.schedules, id, Date.now()).catch(conflict));
    await wakeSoonSchedule(c, home.queue, s.state.next);
    return c.json(await view(home.queue, s), 200);
  });
