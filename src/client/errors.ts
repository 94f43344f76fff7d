/**
 * The client's errors: one class per case an operator or a program acts on
 * differently, all extending {@link DelaylineError}, each carrying the
 * problem document the API answered with (or one the client made up when
 * no answer arrived).
 */
import type { z } from "@hono/zod-openapi";
import type { ProblemType as ServerProblemType } from "../producer/problem.js";
import type * as schemas from "../producer/schemas.js";

/** An RFC 9457 problem document, as every error answer of the API carries. */
export type Problem = z.output<typeof schemas.Problem>;

/** The problem types the client makes up itself, for an answer it never got or could not read as a problem document. */
export const CLIENT_PROBLEM_TYPES = {
  /** No answer arrived (connection refused, reset, DNS). */
  network: "urn:delayline:client:network",
  /** No answer within the client's timeout. */
  timeout: "urn:delayline:client:timeout",
  /** An answer that is not a problem document (e.g. from a proxy in front of the Worker); `status` is its status. */
  notProblem: "urn:delayline:client:not-problem",
  /** A 2xx answer that is not a JSON object, as every answer of the API is: the base URL names something else; `status` is 0. */
  notTheApi: "urn:delayline:client:not-the-api",
} as const;

/** Every `type` a {@link DelaylineError} can carry: the API's (`urn:delayline:*`, listed in the OpenAPI Problem schema) or the client's own. */
export type ProblemType = ServerProblemType | (typeof CLIENT_PROBLEM_TYPES)[keyof typeof CLIENT_PROBLEM_TYPES];

/** A non-2xx answer, or none at all. `status` and `problem` say what went wrong; the class says what to do about it. */
export class DelaylineError extends Error {
  /** How many attempts were made before this error was thrown (1 when the request was not retried). */
  attempts = 1;
  /** What the answer's Retry-After asked for, in ms; null when it had none (or there was no answer). */
  retryAfterMs: number | null = null;
  constructor(
    /** The HTTP status; 0 when no answer of the API arrived (network error, timeout, or a 2xx that is not the API's). */
    readonly status: number,
    readonly problem: Problem,
    options?: { cause?: unknown },
  ) {
    super(`${status === 0 ? problem.title : `${status} ${problem.title}`}: ${problem.detail}`, options);
    // The class's own name, as a log shows it (a minifier that renames classes renames this too: switch on the class or `type`).
    this.name = new.target.name;
  }

  /** An error of the class an answer's `status` makes (a {@link DelaylineNotFoundError} for 404, …): a plain DelaylineError for a status no class stands for. */
  static forStatus(status: number, problem: Problem): DelaylineError {
    return new (CLASS_BY_STATUS.get(status) ?? DelaylineError)(status, problem);
  }

  /** The problem's `type` (e.g. `urn:delayline:not-found`, `urn:delayline:client:timeout`): what to switch on, rather than `detail`. */
  get type(): ProblemType {
    return this.problem.type as ProblemType;
  }
}

/** 401 or 403: the token is missing, wrong, or not allowed. */
export class DelaylineAuthError extends DelaylineError {}

/** 404: no such job, topic route, schedule or dead letter. */
export class DelaylineNotFoundError extends DelaylineError {}

/** 409: the request conflicts with the current state (a job in flight, a stale attempt, a topic that still holds jobs). */
export class DelaylineConflictError extends DelaylineError {}

/** 400, 413, 415 or 422: the request itself is wrong; `problem.errors` names the fields when the API could tell. */
export class DelaylineValidationError extends DelaylineError {}

/**
 * 429: rate limited (by whatever stands in front of the Worker), retried when
 * the request is safe to retry, after its `retryAfterMs`; or a topic's
 * maxLength refused the jobs (type `urn:delayline:topic-full`, with
 * `problem.topic`, `problem.pending` and `problem.maxLength`; nothing stored),
 * or a flow key's maxKeyLength did (type `urn:delayline:flow-key-full`, with
 * `problem.topic`, `problem.flowKey`, `problem.pending` and
 * `problem.maxKeyLength`), neither retried: the topic or key frees room only
 * as its jobs are claimed.
 */
export class DelaylineRateLimitError extends DelaylineError {}

/**
 * 503, a network error or a timeout: the request may or may not have taken
 * effect. Retried when the request is safe to retry; a request that is not
 * (a claim, an ack) is left to the caller, who knows whether repeating it is.
 */
export class DelaylineUnavailableError extends DelaylineError {}

/** The class each status makes, as each class's comment says. */
const CLASS_BY_STATUS = new Map<number, typeof DelaylineError>([
  [401, DelaylineAuthError],
  [403, DelaylineAuthError],
  [404, DelaylineNotFoundError],
  [409, DelaylineConflictError],
  [400, DelaylineValidationError],
  [413, DelaylineValidationError],
  [415, DelaylineValidationError],
  [422, DelaylineValidationError],
  [429, DelaylineRateLimitError],
  [503, DelaylineUnavailableError],
]);
