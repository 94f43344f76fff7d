/**
 * Which topics this isolate knows to be shaped (their conf says "shaped":
 * lua/lib/flow.lua), per key prefix, so their claims take the shaped path at
 * once, and its producers send keyed jobs by the pipeline. A topic becomes
 * shaped with its first keyed job or flow setting and stays so, also once
 * deleted (delete-topic.lua keeps the mark), so what an isolate learned
 * holds. Forgetting costs one claim that changes nothing (claim.lua answers
 * a plain claim of a shaped topic with "held back by shaped").
 */
const known = new Map<string, Set<string>>();
const knownPrioritized = new Map<string, Set<string>>();

function setOf(sets: Map<string, Set<string>>, prefix: string): Set<string> {
  let set = sets.get(prefix);
  if (!set) {
    set = new Set();
    sets.set(prefix, set);
  }
  return set;
}

/** The shaped topics this isolate knows of under `prefix`. */
export function shapedTopics(prefix: string): Set<string> {
  return setOf(known, prefix);
}

/**
 * The topics this isolate knows to be marked prioritized (conf "prioritized",
 * enqueue.lua: they had a job with a priority), whose prioritized jobs it may
 * then enqueue by the pipeline, which does not mark the topic.
 */
export function prioritizedTopics(prefix: string): Set<string> {
  return setOf(knownPrioritized, prefix);
}

const knownExpiring = new Map<string, Set<string>>();

/**
 * The topics this isolate knows to be marked expiring (conf "expiring": they
 * had a job with an expiresAt, lua/lib/expire.lua), whose claims read the
 * jobs past their expiresAt first; a mark is never taken away. Forgetting
 * costs one claim that expires nothing, and says the mark.
 */
export function expiringTopics(prefix: string): Set<string> {
  return setOf(knownExpiring, prefix);
}
