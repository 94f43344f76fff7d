import { z } from "zod";
import type { QueueContext } from "./context.js";
import { REDIS_LIMITS, type RedisLimit } from "./errors.js";
import { pendingLimitErrors, redisCall, restoreLimitErrors, takeLimitErrors } from "./redis.js";

// The count of commands Redis refused at a limit (RedisLimitError), kept in
// one hash beside the tick's keys. redis.ts counts them in the isolate's
// memory as they happen, since Redis is then refusing writes (the count's
// too, when the limit is capacity or maxmemory). They are added to the hash
// when Redis takes writes again: when /v1/stats and /metrics read them, and
// at the tick's next poll that succeeds. No command is added while none is
// pending. Counts an isolate holds when it is
// evicted before a flush are lost, and a flush whose reply is lost may count
// its counts once or twice: they are a signal, not a ledger.

/** Adds the isolate's pending counts to Redis; keeps them for later when Redis refuses. No command when none is pending; says whether it sent any. */
export async function flushLimitErrors(ctx: QueueContext): Promise<boolean> {
  if (pendingLimitErrors().size === 0) return false;
  const counts = takeLimitErrors();
  try {
    await Promise.all(
      [...counts].map(([limit, n]) =>
        // Not repeat-safe (a repeat adds twice), and a refusal of its own is not counted: it is no command of the caller's.
        redisCall({ name: "HINCRBY", repeatSafe: false, countsLimits: false }, () => ctx.redis.hincrby(ctx.keys.limitErrors, limit, n)),
      ),
    );
  } catch {
    // Refused or lost: kept for the next flush (one that reached Redis may then count twice).
    restoreLimitErrors(counts);
  }
  return true;
}

/** How many commands Redis refused at each limit, every limit listed (0 for none): the stored counts and this isolate's not yet stored. */
export async function limitErrorCounts(ctx: QueueContext): Promise<Record<RedisLimit, number>> {
  await flushLimitErrors(ctx);
  const raw = await redisCall({ name: "HMGET", repeatSafe: true }, () => ctx.redis.hmget(ctx.keys.limitErrors, ...REDIS_LIMITS));
  // Without automatic deserialization HMGET arrives as an array of values (or null when no field exists).
  const stored = z.array(z.string().nullable()).nullable().parse(raw) ?? [];
  const pending = pendingLimitErrors();
  const counts = {} as Record<RedisLimit, number>;
  REDIS_LIMITS.forEach((limit, i) => {
    counts[limit] = Number(stored[i] ?? 0) + (pending.get(limit) ?? 0);
  });
  return counts;
}
