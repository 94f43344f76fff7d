import {
  DEFAULT_BACKOFF_DELAY_MS,
  DEFAULT_BACKOFF_FACTOR,
  DEFAULT_BACKOFF_MAX_DELAY_MS,
  MAX_BACKOFF_FACTOR,
  MAX_BACKOFF_SCHEDULE_DELAYS,
  MAX_RETRY_AFTER_MS,
} from "../../limits.js";
import { z } from "zod";
import { parseDuration, type Duration } from "./duration.js";

export { MAX_RETRY_AFTER_MS };

/** Retry policy as a user writes it: delays are durations. */
export type BackoffInput =
  | { type: "fixed"; delay: Duration }
  | { type: "exponential"; delay?: Duration; factor?: number; maxDelay?: Duration; jitter?: boolean }
  | { type: "schedule"; delays: Duration[] };

/** Retry policy as stored, and as the API shows it: every delay in ms. Records are read through it. */
export const backoffSchema = z.union([
  z.object({ type: z.literal("fixed"), delay: z.number() }),
  z.object({ type: z.literal("exponential"), delay: z.number(), factor: z.number(), maxDelay: z.number(), jitter: z.boolean() }),
  z.object({ type: z.literal("schedule"), delays: z.array(z.number()).min(1) }),
]);

/** Retry policy as stored: every delay in ms. */
export type Backoff = z.output<typeof backoffSchema>;

/** Exponential from 1 s, doubling, capped at 1 h, with full jitter. */
export const DEFAULT_BACKOFF: Extract<Backoff, { type: "exponential" }> = {
  type: "exponential",
  delay: DEFAULT_BACKOFF_DELAY_MS,
  factor: DEFAULT_BACKOFF_FACTOR,
  maxDelay: DEFAULT_BACKOFF_MAX_DELAY_MS,
  jitter: true,
};

/** Turns a policy as written into the stored form, applying defaults. Throws RangeError on nonsense. */
export function normalizeBackoff(input: BackoffInput): Backoff {
  switch (input.type) {
    case "fixed":
      return { type: "fixed", delay: parseDuration(input.delay) };
    case "schedule": {
      if (input.delays.length === 0 || input.delays.length > MAX_BACKOFF_SCHEDULE_DELAYS)
        throw new RangeError(`a schedule lists 1 to ${MAX_BACKOFF_SCHEDULE_DELAYS} delays`);
      return { type: "schedule", delays: input.delays.map(parseDuration) };
    }
    case "exponential": {
      const factor = input.factor ?? DEFAULT_BACKOFF.factor;
      if (!(factor >= 1 && factor <= MAX_BACKOFF_FACTOR)) throw new RangeError(`factor must be from 1 to ${MAX_BACKOFF_FACTOR}`);
      return {
        type: "exponential",
        delay: input.delay === undefined ? DEFAULT_BACKOFF.delay : parseDuration(input.delay),
        factor,
        maxDelay: input.maxDelay === undefined ? DEFAULT_BACKOFF.maxDelay : parseDuration(input.maxDelay),
        jitter: input.jitter ?? true,
      };
    }
  }
}

/**
 * How long to wait before the next attempt after `attempt` attempts failed
 * (attempt ≥ 1). `random` is a number in [0, 1), taken for full jitter.
 *
 * - fixed: always `delay`;
 * - schedule: `delays[attempt - 1]`, the last one repeating (e.g. 5 s, 30 s, 60 s, 60 s, …);
 * - exponential: `delay · factor^(attempt-1)` capped at `maxDelay`; with
 *   jitter a uniform pick from [0, that] ("full jitter").
 *
 * src/queue/lua/claim.lua computes the same for leases that expire; a test
 * holds the two equal.
 */
export function backoffDelay(policy: Backoff, attempt: number, random: number): number {
  switch (policy.type) {
    case "fixed":
      return policy.delay;
    case "schedule":
      return policy.delays[Math.min(attempt, policy.delays.length) - 1]!;
    case "exponential": {
      const raw = Math.min(policy.delay * policy.factor ** (attempt - 1), policy.maxDelay);
      return policy.jitter ? Math.floor(random * raw) : Math.floor(raw);
    }
  }
}

/** What to do after a failed attempt: the decision the tick and pull consumers settle with. */
export type FailureDecision = { kind: "retry"; at: number } | { kind: "dead" };

/**
 * Decides retry or dead after attempt number `attempt` failed. A handler's
 * `retryAfterMs` overrides the policy (capped at {@link MAX_RETRY_AFTER_MS});
 * a permanent failure or exhausted attempts mean dead.
 */
export function decideAfterFailure(args: {
  attempt: number;
  maxAttempts: number;
  backoff: Backoff;
  now: number;
  permanent?: boolean;
  retryAfterMs?: number;
  random?: number;
}): FailureDecision {
  if (args.permanent || args.attempt >= args.maxAttempts) return { kind: "dead" };
  const delay =
    args.retryAfterMs !== undefined
      ? Math.min(Math.max(0, Math.round(args.retryAfterMs)), MAX_RETRY_AFTER_MS)
      : backoffDelay(args.backoff, args.attempt, args.random ?? Math.random());
  return { kind: "retry", at: args.now + delay };
}
