import { MAX_BATCH } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { idOfIndexMember } from "./keys.js";
import { pipelineRead, redisCall } from "./redis.js";

// What an enqueue into a dropOldest topic reads before its script call: the
// ids of the topic's oldest pending jobs, and each flow key's oldest index
// members, as the script must be given the keys of the jobs it drops
// (enqueue.lua, lua/lib/caps.lua).

/**
 * Ids read beyond twice what a call drops, at its first read: room for what
 * concurrent calls drop or claim between the read and the script. Each read
 * after one that fell short reads four times as many, up to MAX_CANDIDATES.
 */
const CANDIDATE_SLACK = 16;
const MAX_CANDIDATES = 4 * MAX_BATCH;

/** How many oldest jobs a call may drop from a topic: of its own pending jobs (0: none read), and of each flow key's. */
export interface DropWants {
  topic: number;
  keys: Map<string, number>;
}

/** A topic's candidates: its oldest pending ids, and each flow key's oldest index members (`<key>\n<due>\n<id>`). */
export interface Candidates {
  ids: string[];
  keys: Map<string, string[]>;
}

/**
 * Reads the candidates `wanted` names, in one request, into `into` (what a
 * read names replaces what an earlier one read): a topic's oldest pending
 * ids (lib/pending.lua's oldestPending: earliest due first, ties in id
 * order, its due set's and its keyed jobs' merged) and a key's oldest
 * members of the keys' index, twice as many as the call may drop and some
 * more, four times that again after each of the call's `reads` before.
 */
export async function readCandidates(ctx: QueueContext, wanted: Map<string, DropWants>, reads: number, into: Map<string, Candidates>): Promise<void> {
  const count = (n: number) => Math.min((2 * n + CANDIDATE_SLACK) * 4 ** reads, MAX_CANDIDATES);
  const commands: Array<Array<string | number>> = [];
  const fills: Array<(rows: string[][]) => void> = [];
  for (const [topic, want] of wanted) {
    const t = ctx.keys.topic(topic);
    const c = into.get(topic) ?? { ids: [], keys: new Map() };
    into.set(topic, c);
    if (want.topic > 0) {
      const at = commands.length;
      commands.push(["zrange", t.due, 0, count(want.topic) - 1, "WITHSCORES"], ["zrange", t.flow.fdue, 0, count(want.topic) - 1, "WITHSCORES"]);
      fills.push((rows) => {
        c.ids = oldestOfBoth(rows[at]!, rows[at + 1]!, count(want.topic));
      });
    }
    for (const [key, n] of want.keys) {
      const at = commands.length;
      commands.push(["zrange", t.flow.fkidx, `[${key}\n`, `(${key}\v`, "BYLEX", "LIMIT", 0, count(n)]);
      fills.push((rows) => void c.keys.set(key, rows[at]!));
    }
  }
  if (commands.length === 0) return;
  await ctx.ensureModel();
  const rows = (await redisCall({ name: "dropOldest candidates (ZRANGE)", repeatSafe: true }, () => pipelineRead(ctx.redis, commands))) as string[][];
  for (const fill of fills) fill(rows);
}

/** The first `n` ids of two (id, score) lists each in (score, id) order, merged in that order. */
function oldestOfBoth(a: string[], b: string[], n: number): string[] {
  const rows: Array<{ id: string; score: number }> = [];
  for (const list of [a, b]) for (let i = 0; i + 1 < list.length; i += 2) rows.push({ id: list[i]!, score: Number(list[i + 1]) });
  rows.sort((x, y) => x.score - y.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  return rows.slice(0, n).map((r) => r.id);
}

/** A checked topic's part of enqueue.lua's call: its keys and arguments, with its candidates (see the script's header). */
export function cappedTopicPart(ctx: QueueContext, topic: string, c: Candidates | undefined): { keys: string[]; args: Array<string | number> } {
  const t = ctx.keys.topic(topic);
  const ids = c?.ids ?? [];
  const groups = [...(c?.keys ?? new Map<string, string[]>())];
  const keys = [t.conf, t.metrics, t.flow.fkidx, t.flow.fkeys, ...ids.flatMap((id) => [ctx.keys.job(id).meta, ctx.keys.job(id).record])];
  const args: Array<string | number> = [topic, ids.length, ...ids, groups.length];
  for (const [key, members] of groups) {
    keys.push(...members.map((m) => ctx.keys.job(idOfIndexMember(m)).meta));
    args.push(key, members.length, ...members);
  }
  return { keys, args };
}
