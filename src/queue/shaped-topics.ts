/**
 * Which topics this isolate knows to be shaped (their conf says "shaped":
 * lua/lib/flow.lua), per key prefix, so their claims take the shaped path at
 * once. A topic becomes shaped with its first keyed job and stays so until it
 * is deleted. Forgetting costs one claim that changes nothing (claim.lua
 * answers a plain claim of a shaped topic with "held back by shaped"); a
 * topic remembered after it was deleted and made again is claimed the shaped
 * way, which serves a plain topic as well (its due set is the default lane).
 */
const known = new Map<string, Set<string>>();

/** The shaped topics this isolate knows of under `prefix`. */
export function shapedTopics(prefix: string): Set<string> {
  let set = known.get(prefix);
  if (!set) {
    set = new Set();
    known.set(prefix, set);
  }
  return set;
}
