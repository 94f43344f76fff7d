import { RequestTooLargeError } from "./errors.js";
import type { LuaScript } from "./lua.generated.js";

// The size of a script call's request as the @upstash/redis client sends it,
// measured before it is sent, so a call that Upstash would refuse ("ERR max
// request size exceeded") is refused here with nothing written. The client
// posts JSON.stringify of the command array; runScript passes every argument
// as a string and the key count as a number. It sends EVALSHA with the digest,
// and EVAL with the whole source when Redis answers NOSCRIPT: a call must fit
// both ways, so the longer one (EVAL) is what counts.

/** UTF-8 bytes of `text`, counted without encoding it (JSON text has no lone surrogates: JSON.stringify escapes them). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Bytes of the request body the client sends for this script call: EVALSHA, and EVAL (source in place of the digest) after a NOSCRIPT. */
export function scriptRequestBytes(script: LuaScript, keys: string[], args: Array<string | number>): { evalsha: number; eval: number } {
  // `[n,k1,…,a1,…]`: everything after the command name and the script, as the client writes it.
  const tail = utf8Bytes(JSON.stringify([keys.length, ...keys, ...args.map(String)]));
  // `["evalsha","<sha>",` + tail without its `[`.
  const evalsha = utf8Bytes(`["evalsha",${JSON.stringify(script.sha1)},`) + tail - 1;
  const evalBytes = utf8Bytes(`["eval",${JSON.stringify(script.source)},`) + tail - 1;
  return { evalsha, eval: evalBytes };
}

/**
 * Throws {@link RequestTooLargeError} when the script call's request (the
 * longer of its EVALSHA and EVAL forms) would pass `budget` bytes; `what`
 * names the call in the error ("batch", "schedule").
 */
export function fitRequest(budget: number, what: string, script: LuaScript, keys: string[], args: Array<string | number>): void {
  const { evalsha, eval: evalBytes } = scriptRequestBytes(script, keys, args);
  const bytes = Math.max(evalsha, evalBytes);
  if (bytes > budget) throw new RequestTooLargeError(what, bytes, budget);
}
