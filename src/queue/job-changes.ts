import { BULK_CALL_BYTES, BULK_CANCEL_BATCH } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { topicOfJobId } from "./ids.js";
import * as lua from "./lua.generated.js";
import { replies } from "./replies.js";
import type { CancelWindowOptions, ListPosition } from "./views.js";

// Changes to scheduled jobs: cancelling them (one, a due window, or given
// ids) and moving one to another due time. Jobs in flight are never touched.

/** The keys cancel.lua and cancel-jobs.lua take, for a job finishing at `now`. */
function cancelKeys(ctx: QueueContext, topic: string, now: number): string[] {
  const t = ctx.keys.topic(topic);
  return [t.due, t.lease, ctx.keys.jobs, ctx.keys.meta, ctx.doneKey(now)];
}

export async function cancel(ctx: QueueContext, id: string): Promise<"cancelled" | "not-found" | "inflight"> {
  const topic = topicOfJobId(id);
  if (!topic) return "not-found";
  const now = ctx.now();
  return replies.cancel.parse(await ctx.run(lua.cancel, cancelKeys(ctx, topic, now), [id, now, ctx.doneTtlMs]));
}

export async function cancelWindow(
  ctx: QueueContext,
  topic: string,
  options: CancelWindowOptions = {},
): Promise<{ cancelled: number; inflight: number; next: ListPosition | null }> {
  const now = ctx.now();
  const raw = await ctx.run(lua.cancelJobs, cancelKeys(ctx, topic, now), [
    now,
    ctx.doneTtlMs,
    "window",
    options.dueFrom === undefined ? "-inf" : Math.round(options.dueFrom),
    options.dueTo === undefined ? "+inf" : Math.round(options.dueTo),
    options.after ? Math.round(options.after.score) : "",
    options.after?.id ?? "",
    BULK_CANCEL_BATCH,
    BULK_CALL_BYTES,
  ]);
  return replies.cancelJobs.window.parse(raw);
}

export async function cancelIds(ctx: QueueContext, topic: string, ids: string[]): Promise<{ cancelled: number; inflight: number; notScheduled: number }> {
  const total = { cancelled: 0, inflight: 0, notScheduled: 0 };
  const unique = [...new Set(ids)];
  for (let at = 0; at < unique.length; ) {
    const now = ctx.now();
    const batch = unique.slice(at, at + BULK_CANCEL_BATCH);
    const raw = await ctx.run(lua.cancelJobs, cancelKeys(ctx, topic, now), [
      now,
      ctx.doneTtlMs,
      "ids",
      "-inf",
      "+inf",
      "",
      "",
      BULK_CANCEL_BATCH,
      BULK_CALL_BYTES,
      ...batch,
    ]);
    const r = replies.cancelJobs.ids.parse(raw);
    total.cancelled += r.cancelled;
    total.inflight += r.inflight;
    total.notScheduled += r.notScheduled;
    at += Math.max(1, r.handled);
  }
  return total;
}

export async function reschedule(ctx: QueueContext, id: string, dueAt: number): Promise<"rescheduled" | "not-found" | "inflight"> {
  const topic = topicOfJobId(id);
  if (!topic) return "not-found";
  const t = ctx.keys.topic(topic);
  const due = Math.max(ctx.now(), Math.round(dueAt));
  return replies.reschedule.parse(await ctx.run(lua.reschedule, [t.due, t.lease, ctx.keys.topicIndex], [id, due, topic]));
}
