import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { DRY_RUN_IDS } from "../../limits.js";
import type { DeadFilter, ListPosition, Queue } from "../../queue/queue.js";
import type { DeadEntry } from "../../queue/types.js";
import { topicOfJobId } from "../../queue/ids.js";
import { type AppEnv, jobQueue, json, problemResponses, router, topicQueue, wakeSoonJobs } from "../context.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { ApiProblem, invalid } from "../problem.js";
import { DeadEntryView, DeadQuery, PurgeQuery, PurgeResult, ReplayBody, ReplayResult } from "../dead-schemas.js";
import { changesOf, replayEdited } from "../replay-edits.js";
import { checkPayloadAndTarget } from "./jobs.js";
import { historyView } from "../job-schemas.js";
import { iso, JobId, TopicRef } from "../schema-parts.js";

const TopicParam = z.object({ topic: TopicRef.openapi({ param: { name: "topic", in: "path" } }) });
const LetterParam = TopicParam.extend({ id: JobId.openapi({ param: { name: "id", in: "path" } }) });

/** The position a request's cursor holds (422 when it is not one of this topic's dead letters). */
function positionOf(cursor: string | undefined, topic: string, where: "query" | "body", byLabel: boolean): ListPosition | undefined {
  if (cursor === undefined) return undefined;
  const p = decodeCursor(cursor, "dead", topic, byLabel);
  if ("refused" in p) throw invalid(where, [{ path: "cursor", message: p.refused }]);
  return p;
}

/** Where a query's page of dead letters starts, once its failedFrom–failedTo window is checked (422 when it runs backwards). */
function queryStart(
  topic: string,
  q: { cursor?: string | undefined; failedFrom?: number | undefined; failedTo?: number | undefined; label?: string | undefined },
) {
  if (q.failedFrom !== undefined && q.failedTo !== undefined && q.failedFrom > q.failedTo)
    throw invalid("query", [{ path: "failedTo", message: "must not be before failedFrom" }]);
  return positionOf(q.cursor, topic, "query", q.label !== undefined);
}

/** A dead-letter walk's cursor (of a walk by label when the filter has one). */
const cursorOf = (next: ListPosition | null, filter: { label?: string }) => (next ? encodeCursor("dead", next, filter.label !== undefined) : null);

/** A dead letter as the API shows it. */
function deadView(e: DeadEntry) {
  return {
    id: e.id,
    attempts: e.attempts,
    lastError: e.lastError,
    failedAt: iso(e.failedAt),
    payload: e.job.payload,
    ...(e.job.labels !== undefined ? { labels: e.job.labels } : {}),
    history: historyView(e.history),
  };
}

const defined = <T extends object>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };

type Filter = DeadFilter & { after?: ListPosition };

/** What a replay (given ids, or a step of a filter's walk) would put back, by reads alone. */
async function dryReplay(queue: Queue, topic: string, ids: string[] | undefined, filter: Filter) {
  if (ids) {
    const r = await queue.dryRun.replayIds(topic, ids);
    return { dryRun: true as const, replayed: r.ids.length, ids: r.ids.slice(0, DRY_RUN_IDS), notFound: r.notFound, nextCursor: null };
  }
  const r = await queue.dryRun.deadStep(topic, filter, "replay");
  return {
    dryRun: true as const,
    replayed: r.ids.length,
    ids: r.ids.slice(0, DRY_RUN_IDS),
    notFound: [],
    nextCursor: cursorOf(r.next, filter),
  };
}

/** A replay: given ids or a step of a filter's walk, with the body's edits when it has any. */
async function replay(c: Context<AppEnv>, topic: string, body: z.output<typeof ReplayBody>, filter: Filter, timing: { dueAt: number; spreadMs?: number }) {
  const queue = topicQueue(c, topic);
  if (changesOf(body, topic).length > 0) {
    // With edits, a step's letters are picked as a dry run picks them, then replayed by id.
    const step = body.ids ? { ids: body.ids, next: null } : await queue.dryRun.deadStep(topic, filter, "replay");
    const r = await replayEdited(c, topic, step.ids, body, timing);
    return { ...r, notFound: body.ids ? r.notFound : [], nextCursor: cursorOf(step.next, filter) };
  }
  if (body.ids) return { ...(await queue.replayDeadLetters(topic, { ids: body.ids, ...timing })), nextCursor: null };
  const r = await queue.replayDeadLettersStep(topic, { ...filter, ...timing });
  return { replayed: r.replayed, notFound: [], nextCursor: cursorOf(r.next, filter) };
}

/** A topic's dead letters: paged, replayed, purged, deleted one by one. */
export const dead = router()
  .openapi(
    createRoute({
      method: "get",
      path: "/{topic}/dead",
      operationId: "listDeadLetters",
      summary: "Dead letters, newest first",
      request: { params: TopicParam, query: DeadQuery },
      responses: {
        200: { description: "A page", ...json(z.object({ entries: z.array(DeadEntryView), nextCursor: z.string().nullable() })) },
        ...problemResponses([401, 422, 503]),
      },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const q = c.req.valid("query");
      const page = await topicQueue(c, topic).deadLetters(topic, {
        limit: q.limit,
        ...defined({ after: queryStart(topic, q), failedFrom: q.failedFrom, failedTo: q.failedTo, label: q.label }),
      });
      return c.json({ entries: page.entries.map(deadView), nextCursor: cursorOf(page.next, q) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/{topic}/dead/replay",
      operationId: "replayDeadLetters",
      summary: "Put dead jobs back on the schedule with fresh attempts: given ids, all, or those a filter picks, a bounded batch per call",
      request: { params: TopicParam, body: { ...json(ReplayBody), required: true } },
      responses: {
        200: { description: "Replayed, the ids that were not dead letters, and where to go on", ...json(ReplayResult) },
        ...problemResponses([400, 401, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const body = c.req.valid("json");
      // The edits are checked as an enqueue checks them, before anything reaches Redis.
      checkPayloadAndTarget(body, c.get("settings"));
      const after = positionOf(body.cursor, topic, "body", body.label !== undefined);
      const filter = defined({ failedFrom: body.failedFrom, failedTo: body.failedTo, errorContains: body.error, label: body.label, after });
      if (body.dryRun) return c.json(await dryReplay(topicQueue(c, topic), topic, body.ids, filter), 200);
      const dueAt = Date.now() + (body.delay ?? 0);
      const timing = { dueAt, ...defined({ spreadMs: body.spread }) };
      const result = await replay(c, topic, body, filter, timing);
      if (result.replayed > 0) await wakeSoonJobs(c, [{ topic: body.topic ?? topic, dueAt: Math.max(Date.now(), dueAt) }]);
      return c.json(result, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/{topic}/dead",
      operationId: "purgeDeadLetters",
      summary: "Drop a topic's dead letters — all, or those a filter picks — a bounded batch per call",
      request: { params: TopicParam, query: PurgeQuery },
      responses: {
        200: { description: "Purged, and where to go on (null when done)", ...json(PurgeResult) },
        ...problemResponses([401, 422, 503]),
      },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const q = c.req.valid("query");
      const filter = defined({ failedFrom: q.failedFrom, failedTo: q.failedTo, errorContains: q.error, label: q.label, after: queryStart(topic, q) });
      if (q.dryRun) {
        const r = await topicQueue(c, topic).dryRun.deadStep(topic, filter, "purge");
        return c.json({ dryRun: true as const, purged: r.ids.length, ids: r.ids.slice(0, DRY_RUN_IDS), nextCursor: cursorOf(r.next, filter) }, 200);
      }
      const r = await topicQueue(c, topic).purgeDeadLettersStep(topic, filter);
      return c.json({ purged: r.purged, nextCursor: cursorOf(r.next, filter) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/{topic}/dead/{id}",
      operationId: "deleteDeadLetter",
      summary: "Drop one dead letter",
      request: { params: LetterParam },
      responses: {
        200: { description: "Dropped", ...json(z.object({ id: JobId, deleted: z.literal(true) })) },
        ...problemResponses([401, 404, 422, 503]),
      },
    }),
    async (c) => {
      const { topic, id } = c.req.valid("param");
      // An id that is not one of this topic's jobs cannot be among its letters.
      if (topicOfJobId(id) !== topic || !(await jobQueue(c, id).deleteDeadLetter(topic, id)))
        throw new ApiProblem(404, `topic ${topic} holds no dead letter ${id}`);
      return c.json({ id, deleted: true as const }, 200);
    },
  );
