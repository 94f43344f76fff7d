import { cutErrorText } from "../error-text.js";
import { deliverySigner } from "../protocol/sign.js";
import { Deadlines } from "../handlers/deadlines.js";
import { deliverHttp, type HttpDelivery } from "../handlers/http.js";
import { PermanentError, RetryableError, type BatchResult, type JobContext, type JobHandler, type Registered } from "../handlers/registry.js";
import { forbiddenTarget } from "../handlers/ssrf.js";
import { decideAfterFailure } from "../queue/policy/backoff.js";
import type { ClaimedJob, Outcome } from "../queue/queue.js";
import type { TopicSecrets, TopicSettings } from "../queue/topics.js";
import { Semaphore, type Claimant } from "./budget.js";

/** What dispatching one topic's chunk needs. */
export interface DispatchContext {
  /** The topic's code handler (its deployment's, src/handlers/registry.ts); without one, the http handler delivers. */
  handler: Registered | undefined;
  settings: TopicSettings;
  secrets: TopicSecrets;
  /** The deployment's SIGNING_SECRET, for topics without their own. */
  deploymentSigningSecret?: string;
  allowPrivateTargets: boolean;
  /** Counts toward the subrequest budget. */
  fetch: typeof fetch;
  /** Shared by all topics of the tick. */
  overall: Semaphore;
  /** Whom the chunk takes `overall`'s slots for: its topic, with its weight. Default: nobody in particular. */
  claimant?: Claimant;
  /** The topic's handler slots ({@link handlerSlots}), shared by its chunks running side by side. Default: this chunk's own. */
  topicSlots?: Semaphore;
  now: () => number;
  /** Resolves at `at` (epoch ms): a job claimed ahead of its due time starts then. Default: jobs start at once. */
  until?: (at: number) => Promise<void>;
  /** Told each outcome as soon as its handler ends (before the whole chunk has). */
  onOutcome?: (outcome: Outcome) => void;
  /** Told as handlers start, with how many jobs they took (a batch's, one otherwise). */
  onStart?: (jobs: number) => void;
}

/** The error text kept with a job: its message, cut as every error text is. */
function errorText(err: unknown): string {
  return cutErrorText(err instanceof Error ? err.message || err.name : String(err));
}

/**
 * Runs `work` with an AbortController whose signal fires after `ms` (timed by
 * the chunk's `deadlines`); a timeout is a retryable failure. `work` gets the
 * controller itself, so the http handler aborts its request through it
 * rather than through a second controller listening to this one.
 */
async function withTimeout<T>(deadlines: Deadlines, ms: number, work: (controller: AbortController) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let cancel = () => {};
  const timedOut = new Promise<never>((_, reject) => {
    cancel = deadlines.add(ms, () => {
      controller.abort(new Error(`timed out after ${ms} ms`));
      reject(new RetryableError(`timed out after ${ms} ms`));
    });
  });
  try {
    return await Promise.race([work(controller), timedOut]);
  } finally {
    cancel();
  }
}

/** When the handler started and ended, by the dispatch clock, and the HTTP status an http delivery got. */
interface Run {
  startedAt: number;
  endedAt: number;
  httpStatus?: number;
}

/** The HTTP status a failure carries (the http handler's, or a code handler's that set one). */
function httpStatusOf(err: Error): number | undefined {
  return err instanceof RetryableError || err instanceof PermanentError ? err.httpStatus : undefined;
}

function outcomeOf(job: ClaimedJob, result: BatchResult | Error, ctx: DispatchContext, run: Run): Outcome {
  const observed = { latenessMs: run.startedAt - job.dueAt, durationMs: run.endedAt - run.startedAt };
  if (!(result instanceof Error)) {
    const ack: Outcome = { id: job.id, attempt: job.attempt, kind: "ack", observed, startedAt: run.startedAt };
    if (run.httpStatus !== undefined) ack.httpStatus = run.httpStatus;
    return ack;
  }
  const httpStatus = httpStatusOf(result);
  const decision = decideAfterFailure({
    attempt: job.attempt,
    maxAttempts: job.record.maxAttempts ?? ctx.settings.maxAttempts,
    backoff: job.record.backoff ?? ctx.settings.backoff,
    now: ctx.now(),
    permanent: result instanceof PermanentError,
    ...(result instanceof RetryableError && result.retryAfterMs !== undefined ? { retryAfterMs: result.retryAfterMs } : {}),
  });
  const error = errorText(result);
  const attempt = { observed, startedAt: run.startedAt, ...(httpStatus === undefined ? {} : { httpStatus }) };
  return decision.kind === "retry"
    ? { id: job.id, attempt: job.attempt, kind: "retry", at: decision.at, error, ...attempt }
    : { id: job.id, attempt: job.attempt, kind: "dead", error, ...attempt };
}

function contextOf(job: ClaimedJob, signal: AbortSignal, fetcher: typeof fetch): JobContext {
  const context: JobContext = {
    id: job.id,
    topic: job.topic,
    attempt: job.attempt,
    dueAt: job.dueAt,
    payload: job.record.payload,
    signal,
    fetch: fetcher,
  };
  if (job.record.target) context.target = job.record.target;
  if (job.record.webhookHeaders) context.webhookHeaders = job.record.webhookHeaders;
  if (job.record.scheduleId !== undefined && job.record.scheduledFor !== undefined)
    context.schedule = { id: job.record.scheduleId, scheduledFor: job.record.scheduledFor };
  return context;
}

/** How the http handler delivers one topic's chunk: its URL (checked once), secrets and signature scheme. */
function httpDelivery(ctx: DispatchContext, deadlines: Deadlines): HttpDelivery {
  const secret = ctx.secrets.signingSecret ?? ctx.deploymentSigningSecret;
  const signingSecrets = [...(secret !== undefined ? [secret] : []), ...(ctx.secrets.previousSigningSecrets ?? [])];
  const delivery: HttpDelivery = {
    allowPrivate: ctx.allowPrivateTargets,
    deadlines,
    signer: deliverySigner(ctx.settings.signatureScheme, signingSecrets),
  };
  if (ctx.settings.url !== undefined) {
    delivery.topicUrl = ctx.settings.url;
    delivery.topicUrlRefused = forbiddenTarget(ctx.settings.url, ctx.allowPrivateTargets);
  }
  return delivery;
}

const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));

/** Handlers of a topic one chunk runs at once: the topic's concurrency, its code handler's, else 10. */
export function handlerSlots(handler: Registered | undefined, settings: TopicSettings): number {
  return Math.max(1, Math.min(handler?.options.concurrency ?? Infinity, settings.concurrency ?? 10));
}

/**
 * Hands one topic's claimed chunk to its handler — the registered code
 * handler, else the built-in http handler — with bounded concurrency and a
 * timeout per job (per call for batch handlers), and turns every result into
 * the outcome to settle: ack, retry by policy (or the handler's retry-after),
 * or dead on a permanent error or the last attempt. Each outcome carries how
 * late its handler started and how long it ran (Workers' clock only moves on
 * I/O, so a handler that only computes reads as 0 ms).
 */
export async function dispatchChunk(jobs: ClaimedJob[], ctx: DispatchContext): Promise<Outcome[]> {
  if (jobs.length === 0) return [];
  const registered = ctx.handler;
  const chunk: ChunkRun = {
    ctx,
    slots: ctx.topicSlots ?? new Semaphore(handlerSlots(registered, ctx.settings)),
    // One timer for the chunk's timeouts and body waits: two timers per job were some 6 % of a delivery's CPU.
    deadlines: new Deadlines(),
  };
  if (registered?.kind === "batch") return dispatchBatches(jobs, registered, chunk);
  return dispatchEach(jobs, registered?.fn, chunk);
}

/** What a chunk's handlers share while it is dispatched. */
interface ChunkRun {
  ctx: DispatchContext;
  /** The topic's handler slots (inside the tick's overall ones). */
  slots: Semaphore;
  deadlines: Deadlines;
}

const timeoutOf = (job: ClaimedJob, ctx: DispatchContext) => job.record.timeoutMs ?? ctx.settings.timeoutMs;

/** Resolves when `job` is due (a job claimed ahead waits for its time, holding no slot); nothing to wait for when it is. */
function whenDue(job: ClaimedJob, ctx: DispatchContext): Promise<void> | undefined {
  return ctx.until && job.dueAt > ctx.now() ? ctx.until(job.dueAt) : undefined;
}

/**
 * One handler call per job — the code handler's, else the http handler's
 * delivery — in lanes, as many as can run at once: each lane takes the next
 * job (in the claim's order, which is due order), waits for its due time,
 * then for a topic slot and an overall slot, runs it, and goes on to the
 * next. A job per lane rather than a promise per job waiting its turn: the
 * wait for a free slot costs nothing (most of a backlog's jobs used to wait
 * in two queues), and the chunk's jobs start in order all the same.
 */
async function dispatchEach(jobs: ClaimedJob[], handler: JobHandler | undefined, chunk: ChunkRun): Promise<Outcome[]> {
  const { ctx, slots } = chunk;
  const outcomes = new Array<Outcome>(jobs.length);
  const attempt = handler ? callHandler(handler, chunk) : deliver(chunk);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < jobs.length; i = next++) {
      const job = jobs[i]!;
      const due = whenDue(job, ctx);
      if (due) await due;
      const slot = slots.acquire();
      if (slot) await slot;
      const overall = ctx.overall.acquire(ctx.claimant);
      if (overall) await overall;
      try {
        ctx.onStart?.(1);
        const outcome = await attempt(job);
        outcomes[i] = outcome;
        ctx.onOutcome?.(outcome);
      } finally {
        ctx.overall.release(ctx.claimant);
        slots.release();
      }
    }
  };
  const lanes = Math.min(jobs.length, slots.size, ctx.overall.size);
  await Promise.all(Array.from({ length: lanes }, lane));
  return outcomes;
}

/** One attempt of a job by a code handler: its outcome (never rejects). The handler is raced against its timeout: it may ignore its signal. */
function callHandler(handler: JobHandler, chunk: ChunkRun): (job: ClaimedJob) => Promise<Outcome> {
  const { ctx, deadlines } = chunk;
  return async (job) => {
    const startedAt = ctx.now();
    try {
      await withTimeout(deadlines, timeoutOf(job, ctx), async (controller) => {
        await handler(contextOf(job, controller.signal, ctx.fetch));
      });
      return outcomeOf(job, undefined, ctx, { startedAt, endedAt: ctx.now() });
    } catch (err) {
      return outcomeOf(job, asError(err), ctx, { startedAt, endedAt: ctx.now() });
    }
  };
}

/**
 * One attempt of a job by the built-in http handler: its outcome (never
 * rejects). Its timeout aborts the request (which ends the fetch or the body
 * read at once), so unlike a code handler's it needs no race; a timeout that
 * fired before the delivery ended is a timeout, as a code handler's.
 */
function deliver(chunk: ChunkRun): (job: ClaimedJob) => Promise<Outcome> {
  const { ctx, deadlines } = chunk;
  // The topic's delivery settings, the same for each of the chunk's jobs: made once, by the first.
  let delivery: HttpDelivery | undefined;
  return async (job) => {
    const startedAt = ctx.now();
    const ms = timeoutOf(job, ctx);
    const controller = new AbortController();
    let timedOut = false;
    const cancel = deadlines.add(ms, () => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${ms} ms`));
    });
    let result: Error | undefined;
    let httpStatus: number | undefined;
    try {
      delivery ??= httpDelivery(ctx, deadlines);
      httpStatus = (await deliverHttp(contextOf(job, controller.signal, ctx.fetch), delivery, controller)).status;
    } catch (err) {
      result = asError(err);
    } finally {
      cancel();
    }
    if (timedOut) result = new RetryableError(`timed out after ${ms} ms`);
    const run: Run = { startedAt, endedAt: ctx.now() };
    if (result === undefined && httpStatus !== undefined) run.httpStatus = httpStatus;
    return outcomeOf(job, result, ctx, run);
  };
}

/** A batch handler's calls: the chunk in groups of its batchSize, one call and one timeout (the group's longest) per group. */
async function dispatchBatches(jobs: ClaimedJob[], registered: Extract<Registered, { kind: "batch" }>, chunk: ChunkRun): Promise<Outcome[]> {
  const { ctx, deadlines } = chunk;
  const outcomes: Outcome[] = [];
  const groups: ClaimedJob[][] = [];
  for (let i = 0; i < jobs.length; i += registered.options.batchSize) groups.push(jobs.slice(i, i + registered.options.batchSize));
  await Promise.all(
    groups.map(async (group) => {
      // A batch starts when its last job is due (claims for batch handlers take only due jobs).
      await whenDue(
        group.reduce((a, b) => (b.dueAt > a.dueAt ? b : a)),
        ctx,
      );
      return chunk.slots.run(() =>
        ctx.overall.run(async () => {
          let results: Array<BatchResult | Error>;
          ctx.onStart?.(group.length);
          const startedAt = ctx.now();
          try {
            const timeout = Math.max(...group.map((j) => timeoutOf(j, ctx)));
            results = await withTimeout(deadlines, timeout, async ({ signal }) => {
              const r = await registered.fn(group.map((j) => contextOf(j, signal, ctx.fetch)));
              if (!Array.isArray(r) || r.length !== group.length) {
                throw new RetryableError(`batch handler returned ${Array.isArray(r) ? r.length : typeof r} results for ${group.length} jobs`);
              }
              return r;
            });
          } catch (err) {
            results = group.map(() => asError(err));
          }
          const run = { startedAt, endedAt: ctx.now() };
          for (const [i, job] of group.entries()) {
            const o = outcomeOf(job, results[i], ctx, run);
            outcomes.push(o);
            ctx.onOutcome?.(o);
          }
        }, ctx.claimant),
      );
    }),
  );
  return outcomes;
}
