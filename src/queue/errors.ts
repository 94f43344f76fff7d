import { REQUEST_BUDGET_PERCENT } from "../limits.js";

// Errors the queue's operations refuse with, in a module of their own so
// every part of src/queue can throw them without importing the queue itself.

/** Refused: the registry already holds MAX_TOPICS topics. */
export class TopicLimitError extends Error {
  override name = "TopicLimitError";
  constructor(
    readonly count: number,
    readonly limit: number,
  ) {
    super(`${count} topics exist and the limit is ${limit} (MAX_TOPICS); delete unused ones with DELETE /v1/topics/:topic or raise MAX_TOPICS`);
  }
}

/**
 * Refused: a topic's maxLength (its pending jobs: scheduled and waiting)
 * would be passed — with overflow `reject`, by the jobs the call adds; with
 * `dropOldest`, because the call adds more jobs to it than its maxLength.
 * Nothing of the call was stored; the edge answers 429.
 */
export class TopicFullError extends Error {
  override name = "TopicFullError";
  constructor(
    readonly topic: string,
    /** The topic's pending jobs when the call was refused. */
    readonly pending: number,
    readonly maxLength: number,
    /** The jobs the call would have added to the topic (repeats of an idempotency key add none). */
    readonly adding: number,
  ) {
    super(
      adding > maxLength
        ? `the request adds ${adding} jobs to topic ${topic}, more than its maxLength of ${maxLength}; nothing was stored`
        : `topic ${topic} holds ${pending} pending jobs (scheduled and waiting) and its maxLength is ${maxLength}: the ${adding} job(s) the request adds would pass it; nothing was stored (jobs in flight do not count: room frees as jobs are claimed)`,
    );
  }
}

/**
 * Refused: a flow key's maxKeyLength (its own, else its topic's; its pending
 * jobs: scheduled and waiting) would be passed — with the topic's overflow
 * `reject`, by the jobs the call adds to the key; with `dropOldest`, because
 * the call adds more jobs to the key than its cap. Nothing of the call was
 * stored; the edge answers 429.
 */
export class FlowKeyFullError extends Error {
  override name = "FlowKeyFullError";
  constructor(
    readonly topic: string,
    readonly flowKey: string,
    /** The key's pending jobs when the call was refused. */
    readonly pending: number,
    readonly maxKeyLength: number,
    /** The jobs the call would have added to the key (repeats of an idempotency key add none). */
    readonly adding: number,
  ) {
    super(
      adding > maxKeyLength
        ? `the request adds ${adding} jobs to flow key ${JSON.stringify(flowKey)} of topic ${topic}, more than its maxKeyLength of ${maxKeyLength}; nothing was stored`
        : `flow key ${JSON.stringify(flowKey)} of topic ${topic} holds ${pending} pending jobs (scheduled and waiting) and its maxKeyLength is ${maxKeyLength}: the ${adding} job(s) the request adds would pass it; nothing was stored (jobs in flight do not count: room frees as the key's jobs are claimed)`,
    );
  }
}

/**
 * A dropOldest topic's oldest pending jobs changed under concurrent calls
 * each time this enqueue read them (it names the jobs it drops, which others
 * dropped or claimed first): nothing was stored, and a retry can succeed.
 * The edge answers 503 with Retry-After.
 */
export class TopicContendedError extends Error {
  override name = "TopicContendedError";
}

/** Raised when Redis (Upstash or the bridge) cannot be reached in time; the edge answers 503. */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/**
 * Raised when a request to Redis passed its deadline (REDIS_TIMEOUT_MS): Redis
 * may be up and merely slow or busy, or the reply too large to arrive in time.
 * An outage to the tick like any other; the edge still answers 503 but says
 * what happened instead of calling Redis unreachable.
 */
export class RedisTimeoutError extends RedisUnavailableError {
  override name = "RedisTimeoutError";
}

/**
 * Raised for a call that changes state when it failed in a way that may have
 * reached Redis (the reply was lost, the deadline passed, the bridge answered
 * 503): Redis may have run it, so it is not sent again. An outage to the tick
 * (a claim's jobs come back after their lease); the edge answers 503 saying
 * the outcome is unknown.
 */
export class RedisOutcomeUnknownError extends RedisUnavailableError {
  override name = "RedisOutcomeUnknownError";
}

/** Which of Upstash's (or Redis') limits refused a command. */
export type RedisLimit = "record-size" | "request-size" | "requests" | "capacity" | "memory";

/** Every limit, for counters that list each one (a zero included). */
export const REDIS_LIMITS: readonly RedisLimit[] = ["record-size", "request-size", "requests", "capacity", "memory"];

/**
 * Redis refused a command because a limit was reached (Upstash's record,
 * request, request-count or capacity limits, or Redis' own maxmemory): not a
 * bug and not an outage, though the tick waits it out like one (it is a
 * {@link RedisUnavailableError}), and the edge answers with a problem naming
 * the limit. A single command that is refused wrote nothing, and neither did a
 * script refused for memory (Redis refuses its first write) or by the bridge
 * (which checks a script's keys before it runs); a script Upstash refuses part
 * way keeps the writes it made before the refused one, as Redis never rolls a
 * script back: a script must write before it deletes what it replaces.
 */
export class RedisLimitError extends RedisUnavailableError {
  override name = "RedisLimitError";
  constructor(
    readonly limit: RedisLimit,
    message: string,
  ) {
    super(message);
  }
}

/** Redis answered a command with an error of its own (WRONGTYPE, a Lua error): a bug, not an outage. The message names the call, never its arguments. */
export class RedisCommandError extends Error {
  override name = "RedisCommandError";
}

/**
 * Refused before anything was sent: the Redis request a call would make (a
 * batch enqueue, a schedule write) is larger than the request budget, a
 * share of the Redis request limit (REQUEST_BUDGET_PERCENT of
 * REDIS_MAX_REQUEST_BYTES, src/limits.ts). Nothing was written; the edge
 * answers 413. `bytes` is the request's size as sent (its JSON, escapes
 * included, in UTF-8 bytes).
 */
export class RequestTooLargeError extends Error {
  override name = "RequestTooLargeError";
  constructor(
    readonly what: string,
    readonly bytes: number,
    readonly budget: number,
  ) {
    super(
      `the ${what}'s Redis request would be ${bytes} bytes (its JSON as sent, escapes included) and the request budget is ${budget} bytes (${REQUEST_BUDGET_PERCENT}% of the Redis request limit, Upstash's 10 MB); nothing was written: send fewer or smaller jobs per request (JSON escaping of quotes, backslashes and control characters counts)`,
    );
  }
}
