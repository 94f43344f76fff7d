import { z } from "zod";
import { Code, type CodeMap } from "./codes.js";
import { intReply, numericReply } from "./types.js";

// Parts the decoders of scripts' replies share (replies.ts, write-replies.ts).

/**
 * A code read through its map: member K's value becomes `as[K]`. A number
 * the map lacks, or that this script never answers (a member left out of
 * `as`), is an error: the script and its map disagree.
 */
export function coded<M extends CodeMap, A extends { [K in keyof M]?: unknown }>(map: M, as: A) {
  type R = Exclude<A[keyof A], undefined>;
  const byValue = new Map<number, R>();
  for (const [member, value] of Object.entries(map)) if (member in as) byValue.set(value, as[member as keyof A] as R);
  return intReply.transform((n, ctx) => {
    if (byValue.has(n)) return byValue.get(n) as R;
    ctx.addIssue({ code: "custom", message: `${n} is not one of the codes ${[...byValue.keys()].join(", ")}` });
    return z.NEVER;
  });
}

/** A time in epoch ms, or null for Code.Time.None. */
export const time = numericReply.transform((n) => (n === Code.Time.None ? null : n));
