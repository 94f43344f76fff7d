import { createRoute, z, type RouteHandler } from "@hono/zod-openapi";
import { RedisUnavailableError } from "../../queue/errors.js";
import { MAIN_SHARD } from "../../queue/ids.js";
import { oneCallShards, shardReadDeadline, type AppEnv } from "../context.js";
import { partialFields, partialOf } from "../schema-parts.js";

const ShardHealth = z
  .object({ shard: z.string(), lastTickAt: z.number().nullable(), tickAgeMs: z.number().nullable() })
  .openapi("ShardHealth", { description: "A shard that answered, and when the cron last started its tick" });

const Health = z
  .object({
    ok: z.boolean().openapi({ description: "true when every shard answered" }),
    redis: z.enum(["up", "partial", "down"]).openapi({ description: "up: every shard answered; partial: some did; down: none did" }),
    lastTickAt: z.number().nullable().openapi({ description: "when the cron last started the main shard's tick (epoch ms)" }),
    tickAgeMs: z.number().nullable(),
    shards: z.array(ShardHealth),
    ...partialFields,
  })
  .openapi("Health");

export const healthRoute = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  summary: "Liveness, each shard's Redis reachability and tick heartbeat (no auth)",
  security: [],
  responses: {
    200: { description: "Every shard answered, or some did (`partial: true`)", content: { "application/json": { schema: Health } } },
    503: { description: "No shard's Redis answered", content: { "application/json": { schema: Health } } },
  },
});

/** Whether each shard answers PING, then its heartbeat: every shard at once, each within the deadline of reads across shards. */
export const health: RouteHandler<typeof healthRoute, AppEnv> = async (c) => {
  const s = c.get("settings");
  // Two calls one after another per shard: the isolate's shared clients.
  const shards = oneCallShards(s);
  const now = Date.now();
  const read = await shards
    .readEach(
      async (queue, shard) => {
        if (!(await queue.health.isUp())) throw new RedisUnavailableError(`shard "${shard}" did not answer PING`);
        const lastTickAt = await queue.health.lastTickAt();
        return { shard, lastTickAt, tickAgeMs: lastTickAt === null ? null : now - lastTickAt };
      },
      shardReadDeadline(s, shards),
    )
    .catch((error: unknown) => {
      if (error instanceof RedisUnavailableError) return null;
      throw error;
    });
  if (!read) return c.json({ ok: false, redis: "down" as const, lastTickAt: null, tickAgeMs: null, shards: [], ...partialOf(shards.names) }, 503);
  const main = read.answers.find((a) => a.shard === MAIN_SHARD)?.value;
  const redis = read.missing.length === 0 ? ("up" as const) : ("partial" as const);
  return c.json(
    {
      ok: read.missing.length === 0,
      redis,
      lastTickAt: main?.lastTickAt ?? null,
      tickAgeMs: main?.tickAgeMs ?? null,
      shards: read.answers.map((a) => a.value),
      ...partialOf(read.missing),
    },
    200,
  );
};
