import { rootOf } from "./ids.js";

/**
 * Which shard holds a topic: its pin when it has one, else rendezvous
 * (highest random weight) hashing — every shard's weight for the topic is a
 * hash of the two names, and the heaviest shard wins. Adding a shard moves
 * only the topics for which the new shard now weighs most, 1/n of them
 * once there are n shards (a quarter going from 3 to 4), and each to the new
 * shard; removing one moves only its own. Pure and the same in every
 * isolate, run and version: the hash is fixed (below), never random.
 */

/**
 * The weight: FNV-1a (32-bit) over the UTF-16 code units of
 * `<shard>\n<topic>`, then MurmurHash3's 32-bit finalizer (fmix32) so that
 * names differing in one character still spread over the whole range.
 * Fixed forever: changing it would move topics between shards.
 */
export function placementWeight(shard: string, topic: string): number {
  let h = 0x811c9dc5;
  const text = `${shard}\n${topic}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The shard a topic lives on: its pin, else the shard of highest weight (a
 * tie, which needs equal 32-bit weights, goes to the name that sorts first).
 * A derived topic (`<topic>@<name>`) lives with its root, whose settle and
 * enqueue scripts write its jobs.
 */
export function placeTopic(derivedOrRoot: string, shards: readonly string[], pins: Readonly<Record<string, string>> = {}): string {
  const topic = rootOf(derivedOrRoot);
  const pinned = pins[topic];
  if (pinned !== undefined) return pinned;
  if (shards.length === 1) return shards[0]!;
  let best = shards[0]!;
  let bestWeight = -1;
  for (const shard of shards) {
    const w = placementWeight(shard, topic);
    if (w > bestWeight || (w === bestWeight && shard < best)) {
      best = shard;
      bestWeight = w;
    }
  }
  return best;
}

/** A topic that adding a shard would move, and where it is now. */
export interface PlannedMove {
  topic: string;
  from: string;
  to: string;
}

/**
 * What adding shard `added` would move among `topics` (pins kept), and the
 * pins that keep every one of them where it is: the `DELAYLINE_SHARD_PINS`
 * to set before the shard is added, so that adding it moves nothing.
 */
export function planShardAdd(
  topics: readonly string[],
  shards: readonly string[],
  added: string,
  pins: Readonly<Record<string, string>> = {},
): { moves: PlannedMove[]; pins: Record<string, string> } {
  const after = [...shards, added];
  const moves: PlannedMove[] = [];
  for (const topic of topics) {
    const from = placeTopic(topic, shards, pins);
    const to = placeTopic(topic, after, pins);
    if (from !== to) moves.push({ topic, from, to });
  }
  return { moves, pins: { ...pins, ...Object.fromEntries(moves.map((m) => [m.topic, m.from])) } };
}
