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
      const queue = topicQueue(c, topic);
      const page = await queue.listFlowKeys(topic, { limit, ...(cursor ? { cursor } : {}) });
      const lengths = await queue.flowKeyLengths(
        topic,
        page.keys.map((k) => k.key),
      );
      return c.json({ keys: page.keys.map((k, i) => ({ topic, key: k.key, settings: k.settings, length: lengths[i]! })), nextCursor: page.cursor }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/{topic}/flow-keys/{key}",
      operationId: "getFlowKey",
      summary: "A flow key's own settings and its length (404 when it has neither settings of its own nor pending jobs)",
      description:
        "A key without settings of its own takes the topic's flow settings: its `settings` are {}. Its `length` counts its jobs scheduled and waiting, exactly.",
      request: { params: KeyParam },
      responses: { 200: { description: "The key", ...json(FlowKeyView) }, ...problemResponses([401, 404, 422, 503]) },
    }),
    async (c) => {
      const { topic, key } = c.req.valid("param");
      const queue = topicQueue(c, topic);
      const [settings, [length]] = await Promise.all([queue.flowKeySettings(topic, key), queue.flowKeyLengths(topic, [key])]);
      if (settings === null && length === 0)
        throw new ApiProblem(404, `flow key ${JSON.stringify(key)} of topic ${topic} has no settings of its own and no pending jobs`);
      return c.json({ topic, key, settings: settings ?? {}, length: length! }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/{topic}/flow-keys/{key}",
      operationId: "setFlowKey",
      summary: "Set a flow key's own settings (replacing what it had): limits, weight, paused, maxKeyLength",
      description:
        "Makes the topic shaped. A key paused, or parked at its parallelism, that this leaves unpaused takes its turn again at once. A maxKeyLength holds from the next enqueue on this isolate, and within a minute on every other (as a topic's maxLength does).",
      request: { params: KeyParam, body: { ...json(FlowKeyBody), required: true } },
      responses: { 200: { description: "The key", ...json(FlowKeyView) }, ...problemResponses([400, 401, 415, 422, 503]) },
    }),
    async (c) => {
      const { topic, key } = c.req.valid("param");
      const settings = c.req.valid("json");
      const queue = topicQueue(c, topic);
      await queue.setFlowKey(topic, key, settings);
      if (!settings.paused) await wakeSoonJobs(c, [{ topic, dueAt: Date.now() }]);
      const [length] = await queue.flowKeyLengths(topic, [key]);
      return c.json({ topic, key, settings, length: length! }, 200);
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
