import type { Redis } from "@upstash/redis/cloudflare";
import type { LuaScript } from "./lua.generated.js";
import { redisCall } from "./redis.js";

/**
 * Runs a Lua script: EVALSHA with the digest computed at build time, and EVAL
 * only when Redis answers NOSCRIPT (first use after a restart or a flush) —
 * after which the script is cached and EVALSHA works again.
 */
export async function runScript(redis: Redis, script: LuaScript, keys: string[], args: Array<string | number>): Promise<unknown> {
  const argv = args.map(String);
  return redisCall(async () => {
    try {
      return await redis.evalsha(script.sha1, keys, argv);
    } catch (err) {
      if (err instanceof Error && /NOSCRIPT/i.test(err.message)) return await redis.eval(script.source, keys, argv);
      throw err;
    }
  });
}
