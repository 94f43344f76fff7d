// What the flow keys' scripts answer (lua/lib/flow.lua: flow-read, flow-key,
// flow-keys-top), decoded as replies.ts decodes the others, which spreads
// these into its `replies`.
import { z } from "zod";
import { Code } from "./codes.js";
import { malformed } from "./malformed.js";
import { intReply } from "./types.js";

/**
 * flow-read.lua: what a shaped topic's claim may take or reap. Its parts go
 * back to claim.lua as they came (claim.lua checks each again), so they are
 * checked only for their shape: flat lists of strings and integers whose
 * lengths are multiples of their rows'.
 */
function flowReadReply(raw: unknown): {
  leases: string[];
  newly: Array<string | number>;
  served: Array<string | number>;
  jobs: Array<string | number>;
  rounds: number;
} {
  if (!Array.isArray(raw) || raw.length !== 5) return malformed("flow-read", "the reply", raw);
  const [leases, newly, served, jobs, rounds] = raw as unknown[];
  if (!Number.isSafeInteger(rounds) || (rounds as number) < 1) return malformed("flow-read", "the rounds", rounds);
  const flat = (v: unknown, row: number, what: string): Array<string | number> => {
    if (!Array.isArray(v) || v.length % row !== 0) return malformed("flow-read", what, v);
    for (const cell of v) if (typeof cell !== "string" && !Number.isSafeInteger(cell)) return malformed("flow-read", `a cell of ${what}`, cell);
    return v as Array<string | number>;
  };
  return {
    leases: z.array(z.string()).parse(leases),
    newly: flat(newly, 4, "the newly due"),
    served: flat(served, 2, "the keys served"),
    jobs: flat(jobs, 5, "the jobs"),
    rounds: rounds as number,
  };
}

export const flowReplies = {
  /** flow-keys-top.lua: key, in flight, waiting, state per key, busiest first. */
  flowKeysTop: {
    parse(raw: unknown) {
      const flat = z.array(z.union([z.string(), z.number()])).parse(raw);
      if (flat.length % 4 !== 0) return malformed("flow-keys-top", "the reply", raw);
      const states = ["turn", "rate", "parallelism", "paused", "running"] as const;
      const out: Array<{ key: string; inFlight: number; waiting: number; state: (typeof states)[number] }> = [];
      for (let i = 0; i < flat.length; i += 4) {
        const state = states.find((s) => s === flat[i + 3]);
        if (state === undefined) return malformed("flow-keys-top", "a state", flat[i + 3]);
        out.push({ key: String(flat[i]), inFlight: intReply.parse(flat[i + 1]), waiting: intReply.parse(flat[i + 2]), state });
      }
      return out;
    },
  },

  /** flow-key.lua: set, or removed settings that were there (Code.Removed); Missing: there were none to remove. */
  flowKey: { parse: (raw: unknown) => intReply.parse(raw) === Code.Removed.Removed },

  /** flow-read.lua: see {@link flowReadReply}. */
  flowRead: { parse: flowReadReply },
};
