/**
 * Topic → handler, one {@link Handlers} per deployment (each delayline() call
 * makes its own, src/delayline.ts); a topic without one is delivered by the
 * built-in `http` handler.
 */

/** What a handler gets for one job. */
export interface JobContext {
  id: string;
  topic: string;
  /** 1 for the first delivery; a handler can use id + attempt to stay idempotent. */
  attempt: number;
  /** When the job was due, epoch ms. */
  dueAt: number;
  payload: unknown;
  /** The schedule whose occurrence made this job, and that occurrence (epoch ms), when a schedule made it. */
  schedule?: { id: string; scheduledFor: number };
  /**
   * An ingested webhook's provider headers (`POST /v1/hooks/:topic`), lower-case
   * names such as `x-github-event`: the allowlist of src/producer/webhook-headers.ts.
   * The http handler sends them on with the delivery.
   */
  webhookHeaders?: Record<string, string>;
  /** The job's http target, when it was enqueued with one. */
  target?: { url: string; method?: string; headers?: Record<string, string> };
  /** Aborted when the job's timeout passes. */
  signal: AbortSignal;
  /** fetch that counts toward the tick's subrequest budget; use it for outbound calls. */
  fetch: typeof fetch;
}

/**
 * Throw to retry, optionally after a given delay (overrides the backoff
 * policy, capped). `httpStatus`, when the failure was an HTTP response, goes
 * into the job's attempt history.
 */
export class RetryableError extends Error {
  override name = "RetryableError";
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

/**
 * Throw to send the job straight to the dead-letter list, whatever attempts
 * remain. `httpStatus`, when the failure was an HTTP response, goes into the
 * job's attempt history.
 */
export class PermanentError extends Error {
  override name = "PermanentError";
  constructor(
    message: string,
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

/** One job's result from a batch handler: nothing or `true` for success, an Error for failure. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing for a job means success.
export type BatchResult = void | undefined | true | Error;

export type JobHandler = (job: JobContext) => unknown | Promise<unknown>;
export type BatchHandler = (jobs: JobContext[]) => BatchResult[] | Promise<BatchResult[]>;

/** Options of a handler. */
export interface HandlerOptions {
  /** Jobs handled at once for this topic; lower than the topic's setting wins. Default: the topic's `concurrency`, else 10. */
  concurrency?: number;
}

export interface BatchHandlerOptions extends HandlerOptions {
  /** The handler gets up to this many jobs per call (e.g. 128 events per report). Required. */
  batchSize: number;
}

export type Registered = { kind: "single"; fn: JobHandler; options: HandlerOptions } | { kind: "batch"; fn: BatchHandler; options: BatchHandlerOptions };

/**
 * A topic's code handler: a function taking one job; `{ handler, concurrency }`
 * for one with options; or `{ batchHandler, batchSize }` for one that takes
 * up to `batchSize` jobs per call and returns a result per job.
 */
export type HandlerDefinition = JobHandler | ({ handler: JobHandler } & HandlerOptions) | ({ batchHandler: BatchHandler } & BatchHandlerOptions);

/**
 * One deployment's code handlers by topic: what delayline({ handlers }) was
 * given, and what its Worker defines or removes later. Its tick, fanned-out
 * chunks and drains read it at each chunk, so a change applies from the next
 * chunk claimed in this isolate; other isolates of the deployment see only
 * what their own module load and requests did.
 */
export class Handlers {
  private readonly byTopic = new Map<string, Registered>();

  /** With `definitions` defined (see {@link define}). */
  constructor(definitions: Record<string, HandlerDefinition> = {}) {
    for (const [topic, definition] of Object.entries(definitions)) this.define(topic, definition);
  }

  /** Makes `definition` the handler of `topic`, replacing any it had. */
  define(topic: string, definition: HandlerDefinition): void {
    this.byTopic.set(topic, registered(definition));
  }

  /** Removes a topic's handler: its jobs go back to the http handler. */
  remove(topic: string): void {
    this.byTopic.delete(topic);
  }

  /** The code handler of a topic, if it has one. */
  get(topic: string): Registered | undefined {
    return this.byTopic.get(topic);
  }
}

function registered(definition: HandlerDefinition): Registered {
  if (typeof definition === "function") return { kind: "single", fn: definition, options: {} };
  if ("batchHandler" in definition) {
    const { batchHandler, ...options } = definition;
    if (!Number.isInteger(options.batchSize) || options.batchSize < 1 || options.batchSize > 1_000) {
      throw new RangeError("batchSize must be a whole number from 1 to 1,000");
    }
    return { kind: "batch", fn: batchHandler, options };
  }
  const { handler, ...options } = definition;
  return { kind: "single", fn: handler, options };
}
