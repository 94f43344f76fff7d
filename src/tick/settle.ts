import { RedisLimitError } from "../queue/errors.js";
import type { Outcome, Queue } from "../queue/queue.js";
import type { EndedChunk } from "./in-flight.js";

/** A structured log line; never holds a payload or a secret. */
export type LogLine = Record<string, unknown>;
export type Log = (line: LogLine) => void;

// Errors (an outage) go to console.error, so they show at wrangler's and Workers Logs' default level.
export const jsonLog: Log = (line) => (line.level === "error" ? console.error : console.log)(JSON.stringify(line));

/**
 * Settles a dispatched chunk (its metrics go along in the same call) and
 * logs one line per failed attempt: id, attempt, outcome and the handler's
 * error text — never the payload.
 */
export async function settleChunk(
  queue: Queue,
  topic: string,
  outcomes: Outcome[],
  options: { now?: number; log: Log; index?: "retries" | "due"; leadMs?: number },
) {
  const results = await queue.settle(topic, outcomes, {
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.index === undefined ? {} : { index: options.index }),
    ...(options.leadMs === undefined ? {} : { leadMs: options.leadMs }),
  });
  for (const [i, o] of outcomes.entries()) {
    if (o.kind === "ack") continue;
    options.log({
      level: "warn",
      msg: "job failed",
      topic,
      id: o.id,
      attempt: o.attempt,
      outcome: results[i]!.applied ? o.kind : "stale",
      error: o.error,
      ...(o.kind === "retry" ? { retryAt: o.at } : {}),
    });
  }
  return results;
}

/** Logs a chunk the loop lost: a fan-out that failed (the topic is delivered here from then on), or one here that Redis failed. */
export function logLostChunk(log: Log, e: EndedChunk): void {
  if (e.where === "fanned") {
    log({ level: "error", msg: "fan-out chunk failed; the topic is delivered here from now on", topic: e.topic, error: String(e.error) });
    return;
  }
  const error = e.error as Error;
  const msg =
    error instanceof RedisLimitError
      ? `Redis refused a chunk's command at its ${error.limit} limit; its jobs come back after their lease`
      : "Redis unreachable while a chunk ran; its jobs come back after their lease";
  log({ level: "error", msg, topic: e.topic, error: error.message });
}
