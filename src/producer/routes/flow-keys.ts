import { createRoute, z } from "@hono/zod-openapi";
import { json, problemResponses, router, topicQueue, wakeSoonJobs } from "../context.js";
import { ApiProblem } from "../problem.js";
import { FlowKey, TopicName } from "../schema-parts.js";
import { FlowKeyBody, FlowKeyList, FlowKeyView } from "../topic-schemas.js";

const TopicParam = z.object({ topic: TopicName.openapi({ param: { name: "topic", in: "path" } }) });
const KeyParam = TopicParam.extend({ key: FlowKey.openapi({ param: { name: "key", in: "path" } }) });

/** One shaped topic's flow keys' own settings: set, read, listed, removed. */
export const flowKeys = router()
  .openapi(
    createRoute({
      method: "get",
      path: "/{topic}/flow-keys",
      operationId: "listFlowKeys",
      summary: "A page of a topic's flow keys that have settings of their own",
      description:
        "Keys without settings of their own take the topic's flow settings and are not listed. Pages follow `cursor`, in no particular order: a key that has settings of its own the whole walk long is listed at least once (a later page may list it again).",
      request: {
        params: TopicParam,
        query: z.object({
          cursor: z.string().max(64).optional().openapi({ description: "the `nextCursor` of the previous page" }),
          limit: z.coerce
            .number()
            .int()
            .min(1)
            .max(1_000)
            .default(100)
            .openapi({ description: "about how many keys a page holds (default 100): a hint, so a page may hold more or fewer" }),
        }),
      },
      responses: {
        200: { description: "Keys", ...json(FlowKeyList) },
        ...problemResponses([401, 422, 503]),
      },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const { cursor, limit } = c.req.valid("query");
      const page = await topicQueue(c, topic).listFlowKeys(topic, { limit, ...(cursor ? { cursor } : {}) });
      return c.json({ keys: page.keys.map((k) => ({ topic, key: k.key, settings: k.settings })), nextCursor: page.cursor }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/{topic}/flow-keys/{key}",
      operationId: "getFlowKey",
      summary: "A flow key's own settings (404 when it has none: it takes the topic's flow settings)",
      request: { params: KeyParam },
      responses: { 200: { description: "The key", ...json(FlowKeyView) }, ...problemResponses([401, 404, 422, 503]) },
    }),
    async (c) => {
      const { topic, key } = c.req.valid("param");
      const settings = await topicQueue(c, topic).flowKeySettings(topic, key);
      if (settings === null) throw new ApiProblem(404, `flow key ${JSON.stringify(key)} of topic ${topic} has no settings of its own`);
      return c.json({ topic, key, settings }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/{topic}/flow-keys/{key}",
      operationId: "setFlowKey",
      summary: "Set a flow key's own settings (replacing what it had): limits, weight, paused",
      description: "Makes the topic shaped. A key paused, or parked at its parallelism, that this leaves unpaused takes its turn again at once.",
      request: { params: KeyParam, body: { ...json(FlowKeyBody), required: true } },
      responses: { 200: { description: "The key", ...json(FlowKeyView) }, ...problemResponses([400, 401, 415, 422, 503]) },
    }),
    async (c) => {
      const { topic, key } = c.req.valid("param");
      const settings = c.req.valid("json");
      await topicQueue(c, topic).setFlowKey(topic, key, settings);
      if (!settings.paused) await wakeSoonJobs(c, [{ topic, dueAt: Date.now() }]);
      return c.json({ topic, key, settings }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/{topic}/flow-keys/{key}",
      operationId: "deleteFlowKey",
      summary: "Remove a flow key's own settings: it takes the topic's flow settings again (and is unpaused)",
      request: { params: KeyParam },
      responses: { 204: { description: "Removed" }, ...problemResponses([401, 404, 422, 503]) },
    }),
    async (c) => {
      const { topic, key } = c.req.valid("param");
      if (!(await topicQueue(c, topic).setFlowKey(topic, key, null))) {
        throw new ApiProblem(404, `flow key ${JSON.stringify(key)} of topic ${topic} has no settings of its own`);
      }
      await wakeSoonJobs(c, [{ topic, dueAt: Date.now() }]);
      return c.body(null, 204);
    },
  );
