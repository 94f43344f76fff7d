/**
 * The one way the client's resources reach the API: the token, one timeout
 * per attempt, the retry rules for requests that are safe to repeat, and
 * every non-2xx answer (or none) turned into its {@link DelaylineError} class.
 */
import { retryAfterMs } from "../protocol/retry-after.js";
import {
  CLIENT_PROBLEM_TYPES,
  DelaylineError,
  DelaylineNotFoundError,
  DelaylineRateLimitError,
  DelaylineUnavailableError,
  type Problem,
  type ProblemType,
} from "./errors.js";
import type { DelaylineOptions, RetryEvent } from "./options.js";

/** How a request may be repeated. */
export interface SendOptions {
  headers?: Record<string, string>;
  /** Whether sending it again after an unknown outcome can do no more than sending it once. */
  retry: boolean;
  /** Whether a non-2xx answer's body is the answer rather than a problem. */
  accept?: (status: number, text: string) => boolean;
}

/** A request that repeating cannot do more than once: a read, a set, a delete. */
export const SAFE: SendOptions = { retry: true };
/** A request sent once: its retry could do it twice (a claim) or be refused as stale (an ack). */
export const ONCE: SendOptions = { retry: false };

/** 200 ms doubling to 5 s, each a random half to all of it. */
const defaultBackoff = (retryCount: number): number => Math.min(5_000, 200 * 2 ** retryCount) * (0.5 + Math.random() / 2);

/** The problem types of a topic's maxLength or a flow key's maxKeyLength refusing jobs: not retried (see DelaylineRateLimitError). */
const FULL: ReadonlySet<ProblemType> = new Set<ProblemType>(["urn:delayline:topic-full", "urn:delayline:flow-key-full"]);

/** A Retry-After past this is not waited for: the error goes to the caller, who can decide to wait that long. */
const MAX_RETRY_AFTER_MS = 60_000;

export class Requester {
  private readonly base: string;
  private readonly doFetch: (request: Request) => Response | Promise<Response>;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoff: (retryCount: number) => number;
  /** Whether enqueues without an idempotency key get one ({@link DelaylineOptions.idempotencyKeys}). */
  readonly generateKeys: boolean;

  constructor(private readonly options: DelaylineOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.doFetch = options.fetch ?? ((r) => fetch(r));
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retry === false ? 0 : Math.max(0, Math.floor(options.retry?.retries ?? 5));
    this.backoff = (options.retry === false ? undefined : options.retry?.backoff) ?? defaultBackoff;
    this.generateKeys = options.idempotencyKeys ?? this.retries > 0;
  }

  /** Sends a request and returns the 2xx answer's JSON object (null for an empty body). */
  async json<T>(method: string, path: string, body: unknown, how: SendOptions): Promise<T> {
    const text = await this.text(method, path, body, how);
    if (!text) return null as T;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    // Every answer of the API is a JSON object: anything else came from something that is not the Worker (a wrong baseUrl).
    if (parsed === null || typeof parsed !== "object") throw notTheApi(method, this.base + path, text);
    return parsed as T;
  }

  /**
   * Sends a request and returns the body of a 2xx answer as text; throws a
   * DelaylineError otherwise. A request marked safe is sent again after a
   * 503, a 429, a network error or a timeout, up to the retries allowed.
   */
  async text(method: string, path: string, body: unknown, how: SendOptions): Promise<string> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.token}`, ...how.headers };
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      headers["content-type"] ??= "application/json";
    }
    for (let attempt = 1; ; attempt++) {
      let error: DelaylineError;
      try {
        return await this.attempt(method, path, payload, headers, how.accept);
      } catch (err) {
        if (!(err instanceof DelaylineError)) throw err;
        error = err;
      }
      error.attempts = attempt;
      const delayMs = this.retryDelay(error, how.retry && attempt <= this.retries, attempt);
      if (delayMs === null) throw error;
      this.options.onRetry?.({ method, path, attempt, delayMs, error } satisfies RetryEvent);
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }

  /** How long to wait before trying again after `error`, or null when it goes to the caller. */
  private retryDelay(error: DelaylineError, mayRetry: boolean, attempt: number): number | null {
    if (!mayRetry || !(error instanceof DelaylineUnavailableError || error instanceof DelaylineRateLimitError)) return null;
    // A full topic or key is the caller's to act on (wait, drop the jobs, or set overflow dropOldest): it frees room as the tick claims.
    if (FULL.has(error.type as ProblemType)) return null;
    const asked = error.retryAfterMs;
    if (asked !== null && asked > MAX_RETRY_AFTER_MS) return null;
    return Math.max(0, Math.round(Math.max(this.backoff(attempt - 1), asked ?? 0)));
  }

  /** One attempt: a fresh Request (a body can be read once), under its own timeout. */
  private async attempt(
    method: string,
    path: string,
    payload: string | undefined,
    headers: Record<string, string>,
    accept?: SendOptions["accept"],
  ): Promise<string> {
    const signal = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined;
    const init: RequestInit = { method, headers };
    if (payload !== undefined) init.body = payload;
    if (signal) init.signal = signal;
    let res: Response;
    let text: string;
    try {
      res = await this.doFetch(new Request(this.base + path, init));
      text = await res.text();
    } catch (err) {
      throw errorFromFailure(err, signal?.aborted === true, this.timeoutMs);
    }
    if (!res.ok && !accept?.(res.status, text)) throw errorFromResponse(res, text);
    return text;
  }
}

/** `call`'s answer, or `fallback` when it is a 404: a get of what is not there, a delete of what is gone. */
export async function unlessNotFound<T, F>(call: Promise<T>, fallback: F): Promise<T | F> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof DelaylineNotFoundError) return fallback;
    throw err;
  }
}

/** The error for a non-2xx answer: its class by status, with the problem document (or one describing the body) and its Retry-After. */
function errorFromResponse(res: Response, text: string): DelaylineError {
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
  const err = DelaylineError.forStatus(res.status, problem);
  err.retryAfterMs = retryAfterMs(res.headers.get("retry-after"), Date.now());
  return err;
}

/** The error for a request that got no answer: a network error, or no answer within the timeout. */
function errorFromFailure(cause: unknown, timedOut: boolean, timeoutMs: number): DelaylineUnavailableError {
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

/** A 2xx answer that is not the API's (not a JSON object): the base URL names something else. */
function notTheApi(method: string, url: string, text: string): DelaylineError {
  const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return new DelaylineError(0, {
    type: CLIENT_PROBLEM_TYPES.notTheApi,
    title: "Not delayline's API",
    status: 0,
    detail: `${method} ${url} answered ${JSON.stringify(shown)}, not a JSON object as delayline's API does: is the base URL the Worker's?`,
  });
}
