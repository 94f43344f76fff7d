import { BULK_CALL_BYTES, BULK_CANCEL_BATCH } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { topicOfJobId } from "./ids.js";
import { keyPage, windowArgs } from "./job-reads.js";
import { labelStep, labelStepNext } from "./labels.js";
import * as lua from "./lua.generated.js";
import { replies } from "./replies.js";
import type { CancelWindowOptions, ListPosition } from "./views.js";

// Changes to scheduled jobs: cancelling them (one, a due window, or given
// ids) and moving one to another due time. Jobs in flight are never touched.

/** The keys cancel-jobs.lua takes for these jobs of `topic`: the topic's sets, then each job's meta and record keys. */
function cancelKeys(ctx: QueueContext, topic: string, ids: readonly string[]): string[] {
  const t = ctx.keys.topic(topic);
  return [t.due, t.lease, t.done, t.flow.fdue, t.flow.fkidx, t.exp, ...ids.flatMap((id) => [ctx.keys.job(id).meta, ctx.keys.job(id).record])];
}

export async function cancel(ctx: QueueContext, id: string): Promise<"cancelled" | "not-found" | "inflight"> {
  const topic = topicOfJobId(id);
  if (!topic) return "not-found";
  const t = ctx.keys.topic(topic);
  const k = ctx.keys.job(id);
  return replies.cancel.parse(
    await ctx.run(
      lua.cancel,
      [t.due, t.lease, t.done, k.meta, k.record, t.conf, t.flow.fdue, t.flow.fsched, t.flow.fready, t.flow.fkidx, t.exp],
      [id, ctx.now()],
    ),
  );
}

/**
 * One bounded step of cancelling a due window, in two phases: the next page
 * of the window's ids from the position — the due set's and the keyed jobs'
 * (fdue) as one (list-jobs.lua), or with `flowKey` that key's range of the
 * keys' index — then cancel-jobs.lua on those ids with their keys, which
 * skips any that moved meanwhile.
 */
export async function cancelWindow(
  ctx: QueueContext,
  topic: string,
  options: CancelWindowOptions = {},
): Promise<{ cancelled: number; inflight: number; next: ListPosition | null }> {
  const t = ctx.keys.topic(topic);
  const window = { after: options.after, from: options.dueFrom, to: options.dueTo };
  if (options.label !== undefined) return cancelLabelled(ctx, topic, options.label, window);
  let page: { more: boolean; jobs: Array<{ id: string; score: number }> };
  let listed: Array<string | number>;
  if (options.flowKey !== undefined) {
    const keyed = await keyPage(ctx, topic, options.flowKey, window, BULK_CANCEL_BATCH);
    page = keyed;
    listed = keyed.members;
  } else {
    page = replies.listJobs.parse(await ctx.run(lua.listJobs, [t.due, t.flow.fdue], [...windowArgs(window.after, window.from, window.to), BULK_CANCEL_BATCH]));
    listed = page.jobs.flatMap((j) => [j.id, j.score]);
  }
  const raw = await ctx.run(
    lua.cancelJobs,
    cancelKeys(
      ctx,
      topic,
      page.jobs.map((j) => j.id),
    ),
    [ctx.now(), options.flowKey !== undefined ? "key" : "window", BULK_CALL_BYTES, page.more ? "1" : "0", ...listed],
  );
  return replies.cancelJobs.window.parse(raw);
}

/**
 * A step of cancelling the scheduled jobs carrying a label (within the due
 * window): a step of the label's walk, then cancel-jobs.lua on the scheduled
 * jobs it found, as a window's page. In flight: the labelled jobs the step
 * passed in flight, not the topic's.
 */
async function cancelLabelled(
  ctx: QueueContext,
  topic: string,
  label: string,
  window: { after?: ListPosition | undefined; from?: number | undefined; to?: number | undefined },
): Promise<{ cancelled: number; inflight: number; next: ListPosition | null }> {
  const walked = await labelStep(ctx, topic, label, { ...window, states: ["scheduled", "inflight"], most: BULK_CANCEL_BATCH, prune: true });
  const scheduled = walked.jobs.filter((j) => j.state === "scheduled");
  const inflight = walked.jobs.length - scheduled.length;
  if (scheduled.length === 0) return { cancelled: 0, inflight, next: walked.next };
  const raw = await ctx.run(
    lua.cancelJobs,
    cancelKeys(
      ctx,
      topic,
      scheduled.map((j) => j.id),
    ),
    [ctx.now(), "window", BULK_CALL_BYTES, walked.next ? "1" : "0", ...scheduled.flatMap((j) => [j.id, j.score])],
  );
  const r = replies.cancelJobs.window.parse(raw);
  return { cancelled: r.cancelled, inflight, next: labelStepNext({ ...walked, jobs: scheduled }, r.next) };
}

export async function cancelIds(ctx: QueueContext, topic: string, ids: string[]): Promise<{ cancelled: number; inflight: number; notScheduled: number }> {
  const total = { cancelled: 0, inflight: 0, notScheduled: 0 };
  const unique = [...new Set(ids)];
  for (let at = 0; at < unique.length; ) {
    const batch = unique.slice(at, at + BULK_CANCEL_BATCH);
    const raw = await ctx.run(lua.cancelJobs, cancelKeys(ctx, topic, batch), [ctx.now(), "ids", BULK_CALL_BYTES, "", ...batch]);
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
  const k = ctx.keys.job(id);
  return replies.reschedule.parse(
    await ctx.run(
      lua.reschedule,
      [t.due, t.lease, ctx.keys.topicIndex, k.record, t.conf, t.flow.fdue, t.flow.fsched, t.flow.fready, t.flow.fkidx],
      [id, due, topic],
    ),
  );
}
