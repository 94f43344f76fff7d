import { createRoute, z } from "@hono/zod-openapi";
import { normalizeBackoff } from "../../queue/policy/backoff.js";
import type { TopicPatch } from "../../queue/topics.js";
import type { TopicStats } from "../../queue/queue.js";
import { json, problemResponses, router, shardReadDeadline, topicQueue, wakeSoonJobs } from "../context.js";
import { listTopicsAcrossShards, readPageTopics } from "../../queue/shard-listing.js";
import { forbiddenTarget } from "../../handlers/ssrf.js";
import { ApiProblem, invalid } from "../problem.js";
import { lineageOf, refuseDerivedSettings, refuseSubscriptionTopic } from "../derived-topics.js";
import { derivedNameOf, rootOf } from "../../queue/ids.js";
import { forgetWebhookSecret } from "../webhook-secrets.js";
import { ClaimBody, ClaimedView } from "../job-schemas.js";
import { iso, partialOf, TopicRef } from "../schema-parts.js";
import { TopicList, topicPageQuery, TopicSettingsBody, TopicView } from "../topic-schemas.js";
import { decodeTopicCursor, encodeTopicCursor } from "../topic-cursor.js";
import { DEFAULT_TOPIC_PAGE_LIMIT, MAX_TOPIC_PAGE_LIMIT, TOPIC_BUSIEST_KEYS } from "../../limits.js";

const TopicParam = z.object({ topic: TopicRef.openapi({ param: { name: "topic", in: "path" } }) });

function view({ metrics: _histograms, ...s }: TopicStats) {
  // Histograms are shown by /v1/stats and /metrics.
  return { ...s, ...lineageOf(s.topic), oldestReadyDueAt: s.oldestReadyDueAt === null ? null : iso(s.oldestReadyDueAt) };
}

const pauseRoute = (paused: boolean) =>
  createRoute({
    method: "post",
    path: paused ? "/{topic}/pause" : "/{topic}/resume",
    operationId: paused ? "pauseTopic" : "resumeTopic",
    summary: paused ? "Pause a topic: nothing is dispatched or claimed" : "Resume a paused topic",
    request: { params: TopicParam },
    responses: { 200: { description: "The topic", ...json(TopicView) }, ...problemResponses([401, 422, 503]) },
  });

export const topics = router()
  .openapi(
    createRoute({
      method: "get",
      path: "/",
      operationId: "listTopics",
      summary: "One page of the registered topics (name order) with their settings and stats",
      description: `Pages with \`cursor\` and \`limit\` (default ${DEFAULT_TOPIC_PAGE_LIMIT}, at most ${MAX_TOPIC_PAGE_LIMIT}): a page reads one bounded script call for the names and one per topic, and answers ~0.45 KB per topic (≤ ~230 KB at the largest limit) whatever the number of topics.`,
      request: { query: z.object(topicPageQuery(DEFAULT_TOPIC_PAGE_LIMIT, MAX_TOPIC_PAGE_LIMIT, "")) },
      responses: { 200: { description: "Topics", ...json(TopicList) }, ...problemResponses([401, 422, 503]) },
    }),
    async (c) => {
      const { cursor, limit } = c.req.valid("query");
      const after = cursor === undefined ? undefined : decodeTopicCursor(cursor);
      if (after && "refused" in after) throw invalid("query", [{ path: "cursor", message: after.refused }]);
      const shards = c.get("shards");
      const deadline = shardReadDeadline(c.get("settings"), c.get("shards"));
      const page = await listTopicsAcrossShards(shards, { limit, ...(after ? { after: after.after } : {}) }, deadline);
      const stats = await readPageTopics(shards, page, (queue, topic) => queue.topicStats(topic), deadline);
      return c.json(
        {
          topics: stats.values.map(view),
          total: page.total,
          nextCursor: page.next === null ? null : encodeTopicCursor(page.next),
          ...partialOf(stats.missing),
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/{topic}",
      operationId: "getTopic",
      summary: "A topic's settings and stats",
      request: { params: TopicParam },
      responses: { 200: { description: "The topic", ...json(TopicView) }, ...problemResponses([401, 422, 503]) },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const queue = topicQueue(c, topic);
      const stats = await queue.topicStats(topic);
      if (!stats.flowKeys) return c.json(view(stats), 200);
      const busiest = await queue.busiestFlowKeys(topic, TOPIC_BUSIEST_KEYS);
      return c.json({ ...view(stats), flowKeys: { ...stats.flowKeys, busiest } }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/{topic}",
      operationId: "configureTopic",
      summary: "Change a topic's settings (null resets a field; secrets are write-only)",
      request: { params: TopicParam, body: { ...json(TopicSettingsBody), required: true } },
      responses: { 200: { description: "The topic", ...json(TopicView) }, ...problemResponses([400, 401, 415, 422, 503]) },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      const body = c.req.valid("json");
      refuseDerivedSettings(topic, body);
      const refused = body.url ? forbiddenTarget(body.url, c.get("settings").allowPrivateTargets) : null;
      if (refused) throw invalid("body", [{ path: "url", message: refused }]);
      const { backoff, ...rest } = body;
      const patch: TopicPatch = { ...rest };
      if (backoff !== undefined) patch.backoff = backoff === null ? null : normalizeBackoff(backoff);
      const queue = topicQueue(c, topic);
      await queue.configureTopic(topic, patch);
      if (patch.paused === false || patch.mode === "push") await wakeSoonJobs(c, [{ topic, dueAt: Date.now() }]);
      if (body.webhookSecret !== undefined) forgetWebhookSecret(c.get("settings"), topic);
      return c.json(view(await queue.topicStats(topic)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/{topic}",
      operationId: "deleteTopic",
      summary: "Delete a topic: 409 unless it is empty (purge=true drops its scheduled jobs and dead letters too)",
      request: {
        params: TopicParam,
        query: z.object({
          purge: z
            .enum(["true", "false"])
            .default("false")
            .openapi({ description: "Also drop the topic's scheduled jobs and dead letters. Jobs in flight always make it 409." }),
        }),
      },
      responses: {
        200: {
          description: "Deleted",
          ...json(z.object({ topic: TopicRef, deleted: z.literal(true), purged: z.object({ scheduled: z.number().int(), dead: z.number().int() }) })),
        },
        ...problemResponses([401, 409, 422, 503]),
      },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      refuseSubscriptionTopic(topic, "delete");
      const purge = c.req.valid("query").purge === "true";
      const r = await topicQueue(c, topic).deleteTopic(topic, { purge });
      if (r.result === "inflight") {
        throw new ApiProblem(
          409,
          `topic ${topic} has ${r.inflight} job(s) in flight; delete it once they have settled (pause it first to stop new deliveries)`,
        );
      }
      if (r.result === "not-empty") {
        throw new ApiProblem(
          409,
          `topic ${topic} holds ${r.scheduled} scheduled job(s) and ${r.dead} dead letter(s); delete with ?purge=true to drop them too`,
        );
      }
      forgetWebhookSecret(c.get("settings"), topic);
      return c.json({ topic, deleted: true as const, purged: r.purged }, 200);
    },
  )
  .openapi(pauseRoute(true), async (c) => {
    const { topic } = c.req.valid("param");
    await topicQueue(c, topic).configureTopic(topic, { paused: true });
    return c.json(view(await topicQueue(c, topic).topicStats(topic)), 200);
  })
  .openapi(pauseRoute(false), async (c) => {
    const { topic } = c.req.valid("param");
    await topicQueue(c, topic).configureTopic(topic, { paused: false });
    // While the tick sleeps, the jobs that waited for the resume start from here.
    await wakeSoonJobs(c, [{ topic, dueAt: Date.now() }]);
    return c.json(view(await topicQueue(c, topic).topicStats(topic)), 200);
  })
  .openapi(
    createRoute({
      method: "post",
      path: "/{topic}/claim",
      operationId: "claimJobs",
      summary: "Pull consumers: lease due jobs of a pull-mode topic",
      request: { params: TopicParam, body: { ...json(ClaimBody), required: false } },
      responses: {
        200: { description: "Leased jobs (possibly none)", ...json(z.object({ jobs: z.array(ClaimedView) })) },
        ...problemResponses([400, 401, 409, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { topic } = c.req.valid("param");
      if (derivedNameOf(topic) !== null)
        throw new ApiProblem(409, `topic ${topic} is derived from ${rootOf(topic)}: its jobs are pushed, never claimed over HTTP`);
      // An empty body is not validated: its defaults are the schema's all the same.
      const { max, leaseMs } = ClaimBody.parse(c.req.valid("json") ?? {});
      const { jobs, heldBy } = await topicQueue(c, topic).claim(topic, { max, leaseMs, mode: "pull" });
      if (heldBy === "mode") throw new ApiProblem(409, `topic ${topic} is in push mode; set mode: "pull" to claim over HTTP`);
      return c.json(
        { jobs: jobs.map((j) => ({ id: j.id, attempt: j.attempt, payload: j.record.payload, dueAt: iso(j.dueAt), leaseExpiresAt: iso(j.leaseExpiresAt) })) },
        200,
      );
    },
  );
