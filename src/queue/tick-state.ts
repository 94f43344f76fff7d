import { z } from "zod";
import type { QueueContext } from "./context.js";
import * as lua from "./lua.generated.js";
import { redisCall } from "./redis.js";
import { replies, sleepMark } from "./replies.js";
import type { PeekOptions, PeekResult, TickSleep, TickLook, TickStatus } from "./tick-views.js";

// What the tick keeps in Redis beside the jobs: its poll of the topic index
// (which renews its lock and carries its sleep mark, status and backlog
// samples), its status and its sleep mark, and a cron's look while no loop runs. The lock itself is lock.ts's, the
// heartbeat health.ts's.

export async function tickStatus(ctx: QueueContext): Promise<TickStatus | null> {
  const raw = await redisCall({ name: "GET", repeatSafe: true }, () => ctx.redis.get<string>(ctx.keys.tickStatus));
  return raw === null ? null : tickStatusSchema.parse(JSON.parse(raw));
}

export async function peek(ctx: QueueContext, options: PeekOptions): Promise<PeekResult> {
  const keys = [
    ctx.keys.topicIndex,
    ctx.keys.tickLock,
    ctx.keys.tickAsleep,
    ctx.keys.tickStatus,
    ctx.keys.parked,
    ...(options.sample?.topics ?? []).flatMap((t) => {
      const k = ctx.keys.topic(t);
      return [k.due, k.lease, k.metrics];
    }),
  ];
  const mark = options.sleepMark === undefined ? "" : options.sleepMark === "clear" ? "-" : String(options.sleepMark);
  const args = [
    options.renewLock?.token ?? "",
    options.renewLock?.ttlMs ?? 0,
    mark,
    options.status ? JSON.stringify(options.status) : "",
    options.sample ? Math.floor(options.sample.at / 60_000) : "",
    options.now,
    Math.max(1, Math.floor(options.limit)),
    options.listToSample ? "1" : "0",
    options.listToSample ?? 0,
  ];
  return replies.peek.parse(await ctx.run(lua.peek, keys, args));
}

export async function tickSleep(ctx: QueueContext): Promise<TickSleep> {
  return sleepMark.parse(await redisCall({ name: "GET", repeatSafe: true }, () => ctx.redis.get(ctx.keys.tickAsleep)));
}

export async function look(ctx: QueueContext, heartbeatAt: number): Promise<TickLook> {
  return replies.look.parse(await ctx.run(lua.look, [ctx.keys.tickLast, ctx.keys.tickLock, ctx.keys.tickAsleep, ctx.keys.topicIndex], [heartbeatAt]));
}

const tickStatusSchema = z.object({
  startedAt: z.number(),
  updatedAt: z.number(),
  rounds: z.number(),
  claimed: z.number(),
  subrequests: z.number(),
  budget: z.number(),
  asleep: z.boolean(),
  ended: z.string().nullable(),
}) satisfies z.ZodType<TickStatus>;
