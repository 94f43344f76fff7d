import type { EnqueueResult } from "../queue/queue.js";
import type { SplitBatch } from "../queue/shards.js";
import { iso } from "./schema-parts.js";

/** A job as the enqueue routes show it. */
export const enqueuedView = (r: EnqueueResult) => ({
  id: r.id,
  topic: r.topic,
  dueAt: r.dueAt === null ? null : iso(r.dueAt),
  deduplicated: r.deduplicated,
  ...(r.deduplicatedBy === undefined ? {} : { deduplicatedBy: r.deduplicatedBy }),
});

/**
 * A batch whose topics live on several shards, some of whose parts were
 * stored and some not. The reply is the problem the first failing part's
 * error gives (503 naming its shard for an outage), with `stored`: the jobs
 * stored, each with its index in the batch, and `notStored`: the indexes of
 * the rest. Nothing in `notStored` is acknowledged: after an outcome unknown
 * some may be stored, so resend them with their idempotency keys.
 */
export class PartialBatchError extends Error {
  override name = "PartialBatchError";
  constructor(readonly split: SplitBatch) {
    super(`the batch's jobs on shard${split.failures.length > 1 ? "s" : ""} ${split.failures.map((f) => `"${f.shard}"`).join(", ")} were not stored`);
  }

  /** The first failing part's error, whose problem the reply is. */
  get firstError(): unknown {
    return this.split.failures[0]!.error;
  }
}

/** The reply to a {@link PartialBatchError}: `base` (the problem of its first error) with what was stored and what was not. */
export async function partialBatchProblem(err: PartialBatchError, base: Response): Promise<Response> {
  const body = (await base.json()) as Record<string, unknown>;
  const stored = err.split.results.flatMap((r, index) => (r ? [{ index, ...enqueuedView(r) }] : []));
  const notStored = err.split.failures.flatMap((f) => f.indexes).sort((a, b) => a - b);
  const detail = `${err.message}; ${stored.length} of ${err.split.results.length} were (see stored and notStored): ${String(body.detail)}`;
  return new Response(JSON.stringify({ ...body, detail, stored, notStored }), { status: base.status, headers: base.headers });
}
