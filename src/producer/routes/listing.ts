import { createRoute, z } from "@hono/zod-openapi";
import { json, problemResponses, router } from "../context.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { invalid } from "../problem.js";
import { iso, JobPage, ListQuery, TopicName } from "../schemas.js";

const TopicParam = z.object({ topic: TopicName.openapi({ param: { name: "topic", in: "path" } }) });

export const listing = router().openapi(
  createRoute({
    method: "get",
    path: "/{topic}/jobs",
    summary: "A page of a topic's scheduled jobs (due order) or jobs in flight (lease-deadline order)",
    request: { params: TopicParam, query: ListQuery },
    responses: { 200: { description: "A page", ...json(JobPage) }, ...problemResponses([401, 422, 503]) },
  }),
  async (c) => {
    const { topic } = c.req.valid("param");
    const { state, from, to, limit, cursor, payload } = c.req.valid("query");
    if (from !== undefined && to !== undefined && from > to) throw invalid("query", [{ path: "to", message: "must not be before from" }]);
    const after = cursor === undefined ? undefined : decodeCursor(cursor, state, topic);
    if (after && "refused" in after) throw invalid("query", [{ path: "cursor", message: after.refused }]);
    const page = await c.get("queue").listJobs(topic, {
      state,
      limit,
      payload,
      ...(from === undefined ? {} : { from }),
      ...(to === undefined ? {} : { to }),
      ...(after ? { after } : {}),
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
        })),
        nextCursor: page.next ? encodeCursor(state, page.next) : null,
      },
      200,
    );
  },
);
