import { RequestTooLargeError } from "./errors.js";
import type { LuaScript } from "./lua.generated.js";

// The size of a script call's request as the @upstash/redis client sends it,
// measured before it is sent, so a call that Upstash would refuse ("ERR max
// request size exceeded") is refused here with nothing written. The client
// posts JSON.stringify of the command array; runScript passes every argument
// as a string and the key count as a number. It sends EVALSHA with the digest,
// and EVAL with the whole source when Redis answers NOSCRIPT: a call must fit
// both ways, so the longer one (EVAL) is what counts. The API's client
// auto-pipelines, so a call alone goes to /pipeline wrapped in one more `[…]`:
// 2 bytes, counted (the shared client sends it bare, 2 bytes less). Commands
// of the same request that auto-pipelining folds in beside it (none beside an
// enqueue) are what REQUEST_BUDGET_PERCENT's margin leaves room for.
//
// Only calls whose size the caller sets unbounded by other limits are
// checked: a batch enqueue (up to MAX_BATCH jobs of up to MAX_PAYLOAD_BYTES,
// escaped twice) and a schedule write (a definition with its payload). The
// other calls that carry caller-sized data fit by arithmetic, at the
// worst case the API lets through (test/node/request-size.test.ts builds
// each and measures it here):
//   - settle of a chunk: ≤ MAX_BATCH (1,000) outcomes, each an id (≤ 91 ASCII:
//     a topic ≤ 64 + "." + a 26-character ULID), an error cut to
//     ATTEMPT_ERROR_BYTES (1,024 bytes; JSON escapes a control character's
//     1 byte into 6: ≤ 6,146 bytes quoted) and six numbers (≤ ~70 bytes with
//     quotes and commas): ≤ 6.4 KB an outcome, ≤ 6.4 MB a chunk, plus its
//     keys (two a job, ≤ ~110 bytes each: ≤ 0.25 MB), the observation vector
//     and settle.lua's source (~17 KB): ~6.7 MB, well inside
//     REQUEST_BUDGET_BYTES (9.5 MiB);
//   - bulk cancel by ids: ≤ BULK_CANCEL_BATCH (250) ids a call, each ≤ 100
//     UTF-16 units (JobId), ≤ 6 bytes a unit escaped: ≤ 151 KB, as much again
//     in their meta keys, plus cancel-jobs.lua's source (~13 KB);
//   - replay by ids: ≤ DEAD_BATCH (250) ids a call, the same ≤ 0.3 MB, plus
//     replay-dead.lua's source (~18 KB).

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

/** Bytes of the request body the queue's client sends for this script call, auto-pipelined alone: EVALSHA, and EVAL (source in place of the digest) after a NOSCRIPT. */
export function scriptRequestBytes(script: LuaScript, keys: string[], args: Array<string | number>): { evalsha: number; eval: number } {
  // `[n,k1,…,a1,…]`: everything after the command name and the script, as the client writes it.
  const tail = utf8Bytes(JSON.stringify([keys.length, ...keys, ...args.map(String)]));
  // `[["evalsha","<sha>",` + tail without its `[` + `]`.
  const evalsha = utf8Bytes(`[["evalsha",${JSON.stringify(script.sha1)},`) + tail - 1 + 1;
  const evalBytes = utf8Bytes(`[["eval",${JSON.stringify(script.source)},`) + tail - 1 + 1;
  return { evalsha, eval: evalBytes };
}

/**
 * Throws {@link RequestTooLargeError} when the script call's request (the
 * longer of its EVALSHA and EVAL forms) would pass `budget` bytes; `what`
 * names the call in the error ("batch", "schedule").
 */
export function fitRequest(budget: number, what: string, script: LuaScript, keys: string[], args: Array<string | number>): void {
  if (requestBytesAtMost(script, keys, args) <= budget) return;
  const { evalsha, eval: evalBytes } = scriptRequestBytes(script, keys, args);
  const bytes = Math.max(evalsha, evalBytes);
  if (bytes > budget) throw new RequestTooLargeError(what, bytes, budget);
}

/**
 * A bound on {@link scriptRequestBytes}' EVAL form without building its JSON,
 * so a call far inside the budget (nearly every one) costs no copy: JSON
 * writes a UTF-16 unit as at most 6 bytes (`\u0001`; a 3-byte character is
 * one unit, a 4-byte one two), and each element adds its quotes and comma.
 */
function requestBytesAtMost(script: LuaScript, keys: string[], args: Array<string | number>): number {
  let units = script.source.length;
  for (const k of keys) units += k.length;
  for (const a of args) units += typeof a === "string" ? a.length : String(a).length;
  return 6 * units + 3 * (keys.length + args.length) + 64;
}
