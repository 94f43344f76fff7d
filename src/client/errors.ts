/**
 * The client's errors: one class per case an operator or a program acts on
 * differently, all extending {@link DelaylineError}, each carrying the
 * problem document the API answered with (or one the client made up when
 * no answer arrived).
 */
import type { z } from "@hono/zod-openapi";
import type { ProblemType as ServerProblemType } from "../producer/problem.js";
import type * as schemas from "../producer/schemas.js";
import { retryAfterMs } from "../protocol/retry-after.js";

export type Problem = z.output<typeof schemas.Problem>;

/** The problem types the client makes up itself, for an answer it never got or could not read as a problem document. */
export const CLIENT_PROBLEM_TYPES = {
  /** No answer arrived (connection refused, reset, DNS). */
  network: "urn:delayline:client:network",
  /** No answer within the client's timeout. */
  timeout: "urn:delayline:client:timeout",
  /** An answer that is not a problem document (e.g. from a proxy in front of the Worker); `status` is its status. */
  notProblem: "urn:delayline:client:not-problem",
} as const;

/** Every `type` a {@link DelaylineError} can carry: the API's (`urn:delayline:*`, listed in the OpenAPI Problem schema) or the client's own. */
export type ProblemType = ServerProblemType | (typeof CLIENT_PROBLEM_TYPES)[keyof typeof CLIENT_PROBLEM_TYPES];

/** A non-2xx answer, or none at all. `status` and `problem` say what went wrong. */
export class DelaylineError extends Error {
  override name = "DelaylineError";
  /** How many attempts were made before this error was thrown (1 when the request was not retried). */
  attempts = 1;
  constructor(
    /** The HTTP status; 0 when no answer of the API arrived (network error, timeout, or a 2xx that is not the API's). */
    readonly status: number,
    readonly problem: Problem,
    options?: { cause?: unknown },
  ) {
    super(`${status === 0 ? problem.title : `${status} ${problem.title}`}: ${problem.detail}`, options);
  }

  /** The problem's `type` (e.g. `urn:delayline:not-found`, `urn:delayline:client:timeout`): what to switch on, rather than `detail`. */
  get type(): ProblemType {
    return this.problem.type as ProblemType;
  }
}

/** 401 or 403: the token is missing, wrong, or not allowed. */
export class DelaylineAuthError extends DelaylineError {
  override name = "DelaylineAuthError";
}

/** 404: no such job, topic route, schedule or dead letter. */
export class DelaylineNotFoundError extends DelaylineError {
  override name = "DelaylineNotFoundError";
}

/** 409: the request conflicts with the current state (a job in flight, a stale attempt, a topic that still holds jobs). */
export class DelaylineConflictError extends DelaylineError {
  override name = "DelaylineConflictError";
}

/** 400, 413, 415 or 422: the request itself is wrong; `problem.errors` names the fields when the API could tell. */
export class DelaylineValidationError extends DelaylineError {
  override name = "DelaylineValidationError";
}

/** 429: rate limited (by whatever stands in front of the Worker). Retried when the request is safe to retry. */
export class DelaylineRateLimitError extends DelaylineError {
  override name = "DelaylineRateLimitError";
  /** What the answer's Retry-After asked for, in ms; null when it had none. */
  retryAfterMs: number | null = null;
}

/**
 * 503, a network error or a timeout: the request may or may not have taken
 * effect. Retried when the request is safe to retry; a request that is not
 * (a claim, an ack) is left to the caller, who knows whether repeating it is.
 */
export class DelaylineUnavailableError extends DelaylineError {
  override name = "DelaylineUnavailableError";
  /** What the answer's Retry-After asked for, in ms; null when it had none (or there was no answer). */
  retryAfterMs: number | null = null;
}

/** The error for a non-2xx answer: its class by status, with the problem document (or one describing the body). */
export function errorFromResponse(res: Response, text: string): DelaylineError {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not a problem document: described from the status below
  }
  const problem: Problem =
    parsed && typeof parsed === "object" && "status" in parsed && "detail" in parsed
      ? (parsed as Problem)
      : {
          type: CLIENT_PROBLEM_TYPES.notProblem,
          title: res.statusText || `HTTP ${res.status}`,
          status: res.status,
          detail: text.slice(0, 200) || res.statusText || `HTTP ${res.status}`,
        };
  const s = res.status;
  if (s === 401 || s === 403) return new DelaylineAuthError(s, problem);
  if (s === 404) return new DelaylineNotFoundError(s, problem);
  if (s === 409) return new DelaylineConflictError(s, problem);
  if (s === 400 || s === 413 || s === 415 || s === 422) return new DelaylineValidationError(s, problem);
  if (s === 429 || s === 503) {
    const err = s === 429 ? new DelaylineRateLimitError(s, problem) : new DelaylineUnavailableError(s, problem);
    err.retryAfterMs = retryAfterMs(res.headers.get("retry-after"), Date.now());
    return err;
  }
  return new DelaylineError(s, problem);
}

/** The error for a request that got no answer: a network error, or no answer within the timeout. */
export function errorFromFailure(cause: unknown, timedOut: boolean, timeoutMs: number): DelaylineUnavailableError {
  const detail = timedOut
    ? `no answer within ${timeoutMs} ms; the request may or may not have taken effect`
    : `${describe(cause)}; the request may or may not have taken effect`;
  return new DelaylineUnavailableError(
    0,
    { type: timedOut ? CLIENT_PROBLEM_TYPES.timeout : CLIENT_PROBLEM_TYPES.network, title: timedOut ? "Timeout" : "Network Error", status: 0, detail },
    { cause },
  );
}

/** A fetch failure's message with its underlying reason (Node's undici says only "fetch failed" and puts ECONNREFUSED in `cause`). */
function describe(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const inner = cause.cause;
  return inner instanceof Error && inner.message && inner.message !== cause.message ? `${cause.message} (${inner.message})` : cause.message;
}
