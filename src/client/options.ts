/** How a {@link Delayline} client talks to the API: where, with which token, and how it retries. */
import type { DelaylineError } from "./errors.js";

/** How the client retries a request that is safe to retry. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 5. */
  retries?: number;
  /**
   * The wait in ms before retry number `retryCount` (0 for the first retry).
   * Default: 200 ms doubling up to 5 s, each with jitter (a random half to
   * all of it) so clients that failed together do not retry together —
   * about 3 to 6 s over the 5 default retries. A Retry-After longer than
   * the backoff is waited instead (503s from the Worker ask for 1 s).
   */
  backoff?: (retryCount: number) => number;
}

/** What {@link DelaylineOptions.onRetry} is told before each wait. */
export interface RetryEvent {
  method: string;
  /** The path and query, e.g. `/v1/jobs`. */
  path: string;
  /** The attempt that failed, 1 for the first. */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  error: DelaylineError;
}

/** Options of a {@link Delayline} client. */
export interface DelaylineOptions {
  /** The Worker's URL, e.g. `https://delayline.example.workers.dev`. */
  baseUrl: string;
  /** An API token (`DELAYLINE_TOKEN`). */
  token: string;
  /** Replaces the global fetch (tests, service bindings). Default `globalThis.fetch`. */
  fetch?: (request: Request) => Response | Promise<Response>;
  /**
   * How long one attempt may take, in ms, before it is abandoned as a
   * {@link DelaylineUnavailableError} (status 0) — and retried if the
   * request is safe to retry. 0 waits as long as fetch does. Default 10,000.
   */
  timeoutMs?: number;
  /**
   * Retries of 503s, 429s (honouring Retry-After), network errors and
   * timeouts, for requests that are safe to repeat (see docs/client.md's
   * table: reads, enqueues with an idempotency key, settings, cancels,
   * deletes, replays and purges; never claim, ack, nack or ingest). `false`
   * turns them off. Default `{ retries: 5 }` with the default backoff.
   */
  retry?: RetryOptions | false;
  /**
   * Whether an enqueue without an `idempotencyKey` gets one
   * (crypto.randomUUID()), so that retrying it can never store the job
   * twice. Each key is a Redis string kept for the Worker's
   * IDEMPOTENCY_WINDOW_MS (24 h by default), and keyed enqueues take the
   * Lua script rather than the three-command path. `false`: enqueues
   * without a key are sent once and never retried. Default true (false when
   * `retry` is false).
   */
  idempotencyKeys?: boolean;
  /** Called before each retry's wait, e.g. to log it. Default: nothing. */
  onRetry?: (event: RetryEvent) => void;
}
