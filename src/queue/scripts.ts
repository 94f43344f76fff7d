import type { Redis } from "@upstash/redis/cloudflare";
import type * as lua from "./lua.generated.js";
import type { LuaScript } from "./lua.generated.js";
import { redisCall } from "./redis.js";

/**
 * Whether each script may run twice, which decides whether a call whose reply
 * was lost is sent again (see redisCall). "safe": a read, or a write that is
 * idempotent by construction (fenced by an attempt number, a revision or an
 * owner token, or an overwrite with the same values). "unsafe": a repeat
 * changes more, or answers differently from the run whose reply was lost (a
 * second cancel finds nothing to cancel). "keyed": safe only when every job
 * carries an idempotency key (the caller says). The compiler makes every new
 * script take a side.
 */
const SCRIPT_REPEAT: Record<keyof typeof lua, "safe" | "unsafe" | "keyed"> = {
  get: "safe",
  listDead: "safe",
  // Reads, and drops only members it checks are stale (a stale member never turns live again: ids are not reused).
  labelPage: "safe",
  listJobs: "safe",
  readJobs: "safe",
  listTopics: "safe",
  topicStats: "safe",
  schedulesDue: "safe",
  // Reads only.
  flowRead: "safe",
  flowKeysTop: "safe",
  // Sets the same settings again (a key it unparks is put back at most once: ZADD NX).
  flowKey: "safe",
  // Sets the heartbeat to the same time again and reads.
  look: "safe",
  // Overwrites: the lock renewal is fenced by the owner token, marks, status and samples are set to the same values.
  peek: "safe",
  // Each outcome is fenced by its attempt number: a repeat is stale and changes nothing.
  settle: "safe",
  // Compare and delete: a repeat finds the lock not ours and changes nothing.
  lockRelease: "safe",
  // Fenced by each schedule's revision and next occurrence.
  scheduleFire: "safe",
  // Fenced by the attempt: a repeat sets the same deadline again.
  extendLease: "safe",
  // Sets the same fields again.
  configureTopic: "safe",
  // Sets the same due time again.
  reschedule: "safe",
  // Drops only what it checks is still past the retention window or the cap.
  sweep: "safe",
  // Moves what is still in the old hashes, writing only absent keys: a repeat finds the ids moved and changes nothing.
  migrateModel: "safe",
  // A repeat of a lost run finds the job already stored; without keys, it re-creates a job claimed meanwhile.
  enqueue: "keyed",
  // A repeat finds the job the lost run stored or replaced under the key and writes the same record again
  // (counted once more); only a claim between the two makes it a job behind, as a caller's own retry would.
  upsert: "safe",
  // Takes leases and burns attempts.
  claim: "unsafe",
  // A repeat finds the lock held with its own value and answers taken.
  lockAcquire: "safe",
  cancel: "unsafe",
  cancelJobs: "unsafe",
  deleteTopic: "unsafe",
  purgeDead: "unsafe",
  replayDead: "unsafe",
  // A repeat of "record" adds its marker again; a repeat of "move" finds the letters gone.
  editDead: "unsafe",
  scheduleDelete: "unsafe",
  scheduleWrite: "unsafe",
};

const BY_NAME = new Map<string, "safe" | "unsafe" | "keyed">();

/** Whether `script` may be sent again after a failure that may have reached Redis; `keyed`: every job of this call has an idempotency key. */
function repeatSafe(script: LuaScript, keyed = false): boolean {
  if (BY_NAME.size === 0) {
    // Generated names are kebab-case ("cancel-jobs"), the exports camelCase.
    for (const [k, v] of Object.entries(SCRIPT_REPEAT))
      BY_NAME.set(
        k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
        v,
      );
  }
  const repeat = BY_NAME.get(script.name) ?? "unsafe";
  return repeat === "safe" || (repeat === "keyed" && keyed);
}

/**
 * Runs a Lua script: EVALSHA with the digest computed at build time, and EVAL
 * only when Redis answers NOSCRIPT (first use after a restart or a flush) —
 * after which the script is cached and EVALSHA works again. A NOSCRIPT answer
 * means the script did not run, so the EVAL is no repeat.
 */
export async function runScript(
  redis: Redis,
  script: LuaScript,
  keys: string[],
  args: Array<string | number>,
  options: { keyed?: boolean } = {},
): Promise<unknown> {
  const argv = args.map(String);
  return redisCall({ name: `script ${script.name}`, repeatSafe: repeatSafe(script, options.keyed) }, async () => {
    try {
      return await redis.evalsha(script.sha1, keys, argv);
    } catch (err) {
      if (err instanceof Error && /NOSCRIPT/i.test(err.message)) return await redis.eval(script.source, keys, argv);
      throw err;
    }
  });
}
