import { createRoute, z } from "@hono/zod-openapi";
import type { EnqueueInput, EnqueueResult, Queue, UpsertInput } from "../../queue/queue.js";
import { topicOfJobId } from "../../queue/ids.js";
import { normalizeBackoff } from "../../queue/policy/backoff.js";
import type { Context, MiddlewareHandler } from "hono";
import { jobQueue, json, problemResponses, router, wakeSoonJobs, type AppEnv } from "../context.js";
import type { Settings } from "../../env.js";
import { forbiddenTarget } from "../../handlers/ssrf.js";
import { serializedBytes } from "../body.js";
import { enqueuedView, PartialBatchError } from "../batch-split.js";
import { ApiProblem, invalid, validationProblem } from "../problem.js";
import { AckBody, BatchBody, EnqueueResponse, ExtendBody, ExtendedView, historyView, JobBody, JobView, NackBody, RescheduleBody } from "../job-schemas.js";
import { iso, JobId } from "../schema-parts.js";

const IdParam = z.object({ id: JobId.openapi({ param: { name: "id", in: "path" } }) });
const IdempotencyHeader = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(200)
    .optional()
    .openapi({ param: { name: "idempotency-key", in: "header" } }),
});

/**
 * The checks of a job a schema cannot make: the payload's size, and a target
 * the deployment would refuse to deliver to (refused here, so no job is
 * stored that could only ever die). `at` prefixes the JSON paths named.
 */
export function checkPayloadAndTarget(body: { payload?: unknown; target?: { url: string } }, settings: Settings, at = ""): void {
  const maxPayloadBytes = settings.maxPayloadBytes;
  const size = serializedBytes(body.payload ?? null);
  if (size > maxPayloadBytes) {
    throw new ApiProblem(413, `${at}payload is ${size} bytes serialized; the limit is ${maxPayloadBytes}`);
  }
  const refused = body.target ? forbiddenTarget(body.target.url, settings.allowPrivateTargets) : null;
  if (refused) throw invalid("body", [{ path: `${at}target.url`, message: refused }]);
}

/**
 * Checks what a schema cannot — the payload's size, and a target the
 * deployment would refuse to deliver to (refused here, so no job is stored
 * that could only ever die) — and builds the job for the queue.
 */
function toInput(body: JobBody, settings: Settings, index?: number): EnqueueInput {
  checkPayloadAndTarget(body, settings, index === undefined ? "" : `jobs[${index}].`);
  const input: EnqueueInput = { topic: body.topic, payload: body.payload ?? null };
  if (body.delay !== undefined) input.delayMs = body.delay;
  if (body.runAt !== undefined) input.runAt = body.runAt;
  if (body.maxAttempts !== undefined) input.maxAttempts = body.maxAttempts;
  if (body.backoff !== undefined) input.backoff = normalizeBackoff(body.backoff);
  if (body.target !== undefined) input.target = body.target;
  if (body.timeoutMs !== undefined) input.timeoutMs = body.timeoutMs;
  if (body.idempotencyKey !== undefined) input.idempotencyKey = body.idempotencyKey;
  if (body.idempotencyUntil !== undefined) input.idempotencyUntil = body.idempotencyUntil;
  if (body.flowKey !== undefined) input.flowKey = body.flowKey;
  if (body.priority !== undefined) input.priority = body.priority;
  if (body.labels !== undefined && body.labels.length > 0) input.labels = [...new Set(body.labels)];
  const expiresAt = expiryOf(body, Date.now(), index === undefined ? "" : `jobs[${index}].`);
  if (expiresAt !== undefined) input.expiresAt = expiresAt;
  return input;
}

/**
 * A job's expiresAt (epoch ms) from its body's `expiresAt` or `ttl` (from
 * `now`), or undefined for none. One that would not come after the job's due
 * time (a past `runAt` means now) could only ever expire: refused with 422.
 */
function expiryOf(body: Pick<JobBody, "expiresAt" | "ttl" | "runAt" | "delay">, now: number, at: string): number | undefined {
  const expiresAt = body.expiresAt ?? (body.ttl === undefined ? undefined : now + body.ttl);
  if (expiresAt === undefined) return undefined;
  const due = body.runAt !== undefined ? Math.max(now, body.runAt) : now + (body.delay ?? 0);
  if (due >= expiresAt) {
    const field = body.expiresAt !== undefined ? "expiresAt" : "ttl";
    throw invalid("body", [{ path: `${at}${field}`, message: "the job would expire before it is due: expiry must come after the due time" }]);
  }
  return expiresAt;
}

/**
 * An upsert (a body with `jobKey`): what the schema cannot check — no
 * Idempotency-Key header beside it, a `runAt` no further off than `maxWait`
 * — then the job under its key. 201 for a new job, 200 for the key's pending one.
 */
async function upsertJob(c: Context<AppEnv>, body: JobBody & { jobKey: string }, header: string | undefined) {
  if (header !== undefined)
    throw invalid("header", [{ path: "idempotency-key", message: "an upsert (jobKey) takes no idempotency key: a repeat lands on the key's job anyway" }]);
  const now = Date.now();
  if (body.maxWait !== undefined && body.runAt !== undefined && body.runAt - now > body.maxWait) {
    throw invalid("body", [{ path: "runAt", message: "must not be further off than maxWait" }]);
  }
  // The schema refused an idempotencyKey beside the jobKey: the input carries none.
  const input: UpsertInput = { ...toInput(body, c.get("settings")), jobKey: body.jobKey };
  if (body.onConflict !== undefined) input.onConflict = body.onConflict;
  if (body.maxWait !== undefined) input.maxWaitMs = body.maxWait;
  const r = await c.get("shards").upsert(input);
  if (r.result !== "ignored") await wakeSoonJobs(c, [r]);
  return c.json({ id: r.id, topic: r.topic, dueAt: iso(r.dueAt), deduplicated: r.result !== "created", result: r.result }, r.result === "created" ? 201 : 200);
}

const enqueueRoute = createRoute({
  method: "post",
  path: "/",
  operationId: "enqueueJob",
  summary: "Enqueue a job, or upsert one by its jobKey",
  request: { body: { ...json(JobBody), required: true }, headers: IdempotencyHeader },
  responses: {
    201: { description: "Enqueued (an upsert: result created)", ...json(EnqueueResponse) },
    200: { description: "A repeat of an idempotency key: the existing job; an upsert: the key's pending job, replaced or ignored", ...json(EnqueueResponse) },
    ...problemResponses([400, 401, 413, 415, 422, 429, 503]),
  },
});

/**
 * The Idempotency-Key header checked as the route's header validator checks
 * it — the same schema, the same 422, before the body's checks — reading that
 * one header: the validator first copies every header of the request into an
 * object, which on the busiest route is work for nothing.
 */
const idempotencyHeader: MiddlewareHandler<AppEnv> = async (c, next) => {
  const key = c.req.header("idempotency-key");
  if (key !== undefined) {
    const checked = IdempotencyHeader.safeParse({ "idempotency-key": key });
    if (!checked.success) return validationProblem(checked.error, "header");
  }
  await next();
};

export const jobs = router();
// The document shows the route with its header; the route itself leaves the header to idempotencyHeader.
jobs.openAPIRegistry.registerPath(enqueueRoute);

jobs
  .openapi({ ...enqueueRoute, request: { body: enqueueRoute.request.body }, middleware: [idempotencyHeader], hide: true }, async (c) => {
    const body = c.req.valid("json");
    const header = c.req.header("idempotency-key");
    if (body.jobKey !== undefined) return upsertJob(c, { ...body, jobKey: body.jobKey }, header);
    const input = toInput(body, c.get("settings"));

    if (input.idempotencyKey === undefined && header !== undefined) input.idempotencyKey = header;
    if (input.idempotencyUntil !== undefined && input.idempotencyKey === undefined) {
      throw invalid("body", [{ path: "idempotencyUntil", message: "goes with an idempotency key (idempotencyKey or the Idempotency-Key header)" }]);
    }
    const r = await c.get("shards").enqueue(input);
    if (!r.deduplicated) await wakeSoonJobs(c, [r]);
    return c.json(enqueuedView(r), r.deduplicated ? 200 : 201);
  })
  .openapi(
    createRoute({
      method: "post",
      path: "/batch",
      operationId: "enqueueJobBatch",
      summary: "Enqueue up to 1,000 jobs, all or nothing on each shard",
      request: { body: { ...json(BatchBody), required: true } },
      responses: {
        201: { description: "Enqueued, in order", ...json(z.object({ jobs: z.array(EnqueueResponse) })) },
        ...problemResponses([400, 401, 413, 415, 422, 429, 503]),
      },
    }),
    async (c) => {
      const { jobs: bodies } = c.req.valid("json");
      const inputs: EnqueueInput[] = [];
      for (const [i, b] of bodies.entries()) {
        inputs.push(toInput(b, c.get("settings"), i));
      }
      const shards = c.get("shards");
      const split = await shards.enqueueBatch(inputs);
      const stored = split.results.filter((r): r is EnqueueResult => r !== undefined);
      await wakeSoonJobs(
        c,
        stored.filter((r) => !r.deduplicated),
      );
      if (split.failures.length > 0) throw stored.length === 0 ? split.failures[0]!.error : new PartialBatchError(split);
      return c.json({ jobs: stored.map(enqueuedView) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getJob",
      summary: "A job's state",
      request: { params: IdParam },
      responses: { 200: { description: "The job", ...json(JobView) }, ...problemResponses([401, 404, 503]) },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const job = await jobQueue(c, id).get(id);
      if (!job) throw unknownJob(id);
      return c.json(
        {
          id: job.id,
          topic: job.topic,
          state: job.state,
          dueAt: job.dueAt === null ? null : iso(job.dueAt),
          attempts: job.attempts,
          maxAttempts: job.maxAttempts,
          lastError: job.lastError,
          createdAt: iso(job.createdAt),
          payload: job.payload,
          ...(job.leaseExpiresAt !== undefined ? { leaseExpiresAt: iso(job.leaseExpiresAt) } : {}),
          ...(job.finishedAt !== undefined ? { finishedAt: iso(job.finishedAt) } : {}),
          ...(job.scheduleId !== undefined && job.scheduledFor !== undefined ? { scheduleId: job.scheduleId, scheduledFor: iso(job.scheduledFor) } : {}),
          ...(job.webhookHeaders !== undefined ? { webhookHeaders: job.webhookHeaders } : {}),
          ...(job.flowKey !== undefined ? { flowKey: job.flowKey } : {}),
          ...(job.priority !== undefined ? { priority: job.priority } : {}),
          ...(job.jobKey !== undefined ? { jobKey: job.jobKey, replacements: job.replacements ?? 0 } : {}),
          ...(job.labels !== undefined ? { labels: job.labels } : {}),
          ...(job.expiresAt !== undefined ? { expiresAt: iso(job.expiresAt) } : {}),
          history: historyView(job.history),
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/{id}",
      operationId: "cancelJob",
      summary: "Cancel a scheduled job",
      request: { params: IdParam },
      responses: {
        200: { description: "Cancelled", ...json(z.object({ id: JobId, state: z.literal("cancelled") })) },
        ...problemResponses([401, 404, 409, 503]),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const r = await jobQueue(c, id).cancel(id);
      if (r === "inflight") throw new ApiProblem(409, `job ${id} is in flight and cannot be cancelled`);
      if (r === "not-found") await notScheduled(jobQueue(c, id), id);
      return c.json({ id, state: "cancelled" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      path: "/{id}",
      operationId: "rescheduleJob",
      summary: "Reschedule a scheduled job",
      request: { params: IdParam, body: { ...json(RescheduleBody), required: true } },
      responses: {
        200: { description: "Rescheduled", ...json(z.object({ id: JobId, dueAt: z.string() })) },
        ...problemResponses([400, 401, 404, 409, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const dueAt = body.runAt ?? Date.now() + body.delay!;
      const r = await jobQueue(c, id).reschedule(id, dueAt);
      if (r === "inflight") throw new ApiProblem(409, `job ${id} is in flight and cannot be rescheduled`);
      if (r === "not-found") await notScheduled(jobQueue(c, id), id);
      await wakeSoonJobs(c, [{ topic: topicOfJobId(id)!, dueAt: Math.max(Date.now(), dueAt) }], jobQueue(c, id));
      return c.json({ id, dueAt: iso(Math.max(Date.now(), dueAt)) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/{id}/ack",
      operationId: "ackJob",
      summary: "Pull consumers: report success of a claimed attempt",
      request: { params: IdParam, body: { ...json(AckBody), required: true } },
      responses: {
        200: { description: "Acknowledged", ...json(z.object({ id: JobId, state: z.literal("succeeded") })) },
        ...problemResponses([400, 401, 404, 409, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const { attempt } = c.req.valid("json");
      const r = await jobQueue(c, id).ack(id, attempt);
      if (r === "stale") throw staleAttempt(id, attempt);
      return c.json({ id, state: "succeeded" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/{id}/nack",
      operationId: "nackJob",
      summary: "Pull consumers: report failure of a claimed attempt",
      request: { params: IdParam, body: { ...json(NackBody), required: true } },
      responses: {
        200: { description: "Retried by policy, or dead", ...json(z.object({ id: JobId, state: z.enum(["scheduled", "dead"]) })) },
        ...problemResponses([400, 401, 404, 409, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const { attempt, ...failure } = c.req.valid("json");
      const r = await jobQueue(c, id).nack(id, attempt, failure);
      if (r === "stale") throw new ApiProblem(409, `attempt ${attempt} of ${id} is not the one leased`);
      return c.json({ id, state: r === "retry" ? ("scheduled" as const) : ("dead" as const) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/{id}/extend",
      operationId: "extendJobLease",
      summary: "Pull consumers: move a claimed attempt's lease deadline to now + leaseMs",
      request: { params: IdParam, body: { ...json(ExtendBody), required: true } },
      responses: {
        200: { description: "Extended: the lease's new deadline", ...json(ExtendedView) },
        ...problemResponses([400, 401, 404, 409, 415, 422, 503]),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const { attempt, leaseMs } = c.req.valid("json");
      const r = await jobQueue(c, id).extend(id, attempt, leaseMs);
      if (r.result !== "extended") throw extensionRefused(r.result, id, attempt);
      return c.json({ id, attempt, leaseExpiresAt: iso(r.leaseExpiresAt) }, 200);
    },
  );

/** 404: a job the shard does not hold. */
const unknownJob = (id: string) => new ApiProblem(404, `no job ${id} (unknown, or finished longer ago than the retention window)`);

/** 409: an ack or lease extension of an attempt that is no longer leased. */
const staleAttempt = (id: string, attempt: number) =>
  new ApiProblem(409, `attempt ${attempt} of ${id} is not the one leased (the lease expired and the job was re-delivered, or it was settled already)`);

/** Why a lease was not extended: an unknown job, an attempt not leased (as a stale ack), or a push topic's job. */
function extensionRefused(result: "stale" | "not-found" | "push", id: string, attempt: number): ApiProblem {
  if (result === "not-found") return unknownJob(id);
  if (result === "push")
    return new ApiProblem(409, `${id} is a job of a push topic: the tick holds its lease, and only a pull consumer's lease can be extended`);
  return staleAttempt(id, attempt);
}

/** 404 for an unknown job, 409 for one that exists but is no longer scheduled. */
async function notScheduled(queue: Queue, id: string): Promise<never> {
  const job = await queue.get(id);
  if (!job) throw new ApiProblem(404, `no job ${id}`);
  throw new ApiProblem(409, `job ${id} is ${job.state}, not scheduled`);
}
