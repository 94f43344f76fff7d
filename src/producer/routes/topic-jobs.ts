import { createRoute, z } from "@hono/zod-openapi";
import { json, problemResponses, router, topicQueue } from "../context.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { invalid } from "../problem.js";
import { DRY_RUN_IDS } from "../../limits.js";
import { topicOfJobId } from "../../queue/ids.js";
import { BulkCancelBody, BulkCancelResult, JobPage, ListQuery } from "../job-schemas.js";
import { iso, TopicRef } from "../schema-parts.js";

const TopicParam = z.object({ topic: TopicRef.openapi({ param: { name: "topic", in: "path" } }) });

/** A topic's jobs as a set: listed page by page, cancelled in bulk. */
export const topicJobs = router()
  .openapi(
    createRoute({
      method: "get",
      path: "/{topic}/jobs",
      operationId: "listTopicJobs",
      summary: "A page of a topic's scheduled jobs (due order), jobs in flight (lease-deadline order) or dead letters (newest first)",
      request: { params: TopicParam, query: ListQuery },
      responses: { 200: { description: "A page", ...json(JobPage) }, ...problemResponses([401, 422, 503]) },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const { state, from, to, limit, cursor, payload, flowKey, label } = c.req.valid("query");
      if (from !== undefined && to !== undefined && from > to) throw invalid("query", [{ path: "to", message: "must not be before from" }]);
      if (flowKey !== undefined && label !== undefined) throw invalid("query", [{ path: "label", message: "give flowKey or label, not both" }]);
      const byLabel = label !== undefined;
      const after = cursor === undefined ? undefined : decodeCursor(cursor, state, topic, byLabel);
      if (after && "refused" in after) throw invalid("query", [{ path: "cursor", message: after.refused }]);
      if (state === "dead") {
        const letters = await topicQueue(c, topic).deadLetters(topic, {
          limit,
          ...(from === undefined ? {} : { failedFrom: from }),
          ...(to === undefined ? {} : { failedTo: to }),
          ...(after ? { after } : {}),
          ...(label === undefined ? {} : { label }),
        });
        // A dead letter's flow key is its record's: the page is filtered (it may hold fewer than limit).
        const entries = flowKey === undefined ? letters.entries : letters.entries.filter((e) => e.job.flowKey === flowKey);
        return c.json(
          {
            jobs: entries.map((e) => ({
              id: e.id,
              state: "dead" as const,
              dueAt: null,
              attempts: e.attempts,
              lastError: e.lastError,
              createdAt: iso(e.job.createdAt),
              failedAt: iso(e.failedAt),
              ...(payload ? { payload: e.job.payload } : {}),
              ...(e.job.labels !== undefined ? { labels: e.job.labels } : {}),
            })),
            nextCursor: letters.next ? encodeCursor("dead", letters.next, byLabel) : null,
          },
          200,
        );
      }
      const page = await topicQueue(c, topic).listJobs(topic, {
        state,
        limit,
        payload,
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
        ...(after ? { after } : {}),
        ...(flowKey === undefined ? {} : { flowKey }),
        ...(label === undefined ? {} : { label }),
      });
      return c.json(
        {
          jobs: page.jobs.map((j) => ({
            id: j.id,
            state: j.state,
            dueAt: j.dueAt === null ? null : iso(j.dueAt),
            attempts: j.attempts,
            lastError: j.lastError,
            createdAt: iso(j.createdAt),
            ...(j.leaseExpiresAt === undefined ? {} : { leaseExpiresAt: iso(j.leaseExpiresAt) }),
            ...(payload ? { payload: j.payload } : {}),
            ...(j.scheduleId !== undefined && j.scheduledFor !== undefined ? { scheduleId: j.scheduleId, scheduledFor: iso(j.scheduledFor) } : {}),
            ...(j.labels !== undefined ? { labels: j.labels } : {}),
            ...(j.expiresAt === undefined ? {} : { expiresAt: iso(j.expiresAt) }),
          })),
          nextCursor: page.next ? encodeCursor(state, page.next, byLabel) : null,
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/{topic}/jobs/cancel",
      operationId: "cancelTopicJobs",
      summary: "Cancel scheduled jobs: given ids, a due window, one flow key's or one label's (within a due window or not), or all, a bounded batch per call",
      request: { params: TopicParam, body: { ...json(BulkCancelBody), required: true } },
      responses: { 200: { description: "Cancelled, and where to go on", ...json(BulkCancelResult) }, ...problemResponses([400, 401, 415, 422, 503]) },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const body = c.req.valid("json");
      const queue = topicQueue(c, topic);
      if (body.ids) {
        const foreign = body.ids.findIndex((id) => topicOfJobId(id) !== topic);
        if (foreign >= 0) throw invalid("body", [{ path: `ids[${foreign}]`, message: `not a job id of topic ${topic}` }]);
        if (body.dryRun) {
          const r = await queue.dryRun.cancelIds(topic, body.ids);
          return c.json({ ...dryAnswer(r.ids), inflight: r.inflight, notScheduled: r.notScheduled, nextCursor: null }, 200);
        }
        const r = await queue.cancelIds(topic, body.ids);
        return c.json({ cancelled: r.cancelled, inflight: r.inflight, notScheduled: r.notScheduled, nextCursor: null }, 200);
      }
      const byLabel = body.label !== undefined;
      const after = body.cursor === undefined ? undefined : decodeCursor(body.cursor, "scheduled", topic, byLabel);
      if (after && "refused" in after) throw invalid("body", [{ path: "cursor", message: after.refused }]);
      const window = {
        ...(body.dueFrom === undefined ? {} : { dueFrom: body.dueFrom }),
        ...(body.dueTo === undefined ? {} : { dueTo: body.dueTo }),
        ...(after ? { after } : {}),
        ...(body.flowKey === undefined ? {} : { flowKey: body.flowKey }),
        ...(body.label === undefined ? {} : { label: body.label }),
      };
      if (body.dryRun) {
        const r = await queue.dryRun.cancelWindow(topic, window);
        return c.json({ ...dryAnswer(r.ids), inflight: r.inflight, nextCursor: r.next ? encodeCursor("scheduled", r.next, byLabel) : null }, 200);
      }
      const r = await queue.cancelWindow(topic, window);
      return c.json({ cancelled: r.cancelled, inflight: r.inflight, nextCursor: r.next ? encodeCursor("scheduled", r.next, byLabel) : null }, 200);
    },
  );

/** A dry run's count and first ids of the jobs a cancel would take. */
const dryAnswer = (ids: string[]) => ({ dryRun: true as const, cancelled: ids.length, ids: ids.slice(0, DRY_RUN_IDS) });
