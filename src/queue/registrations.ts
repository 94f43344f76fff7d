/** How long an isolate trusts that a topic it registered is still registered (a topic deleted meanwhile is registered again by its next enqueue after this). */
const REGISTERED_TTL_MS = 60_000;

// Topics this isolate has registered already, and when, per key prefix: only
// the first enqueue per topic (per REGISTERED_TTL_MS) pays the registration
// and its cap check, which keeps a single enqueue at three commands.
const registered = new Map<string, Map<string, number>>();

/** The topics this isolate registered under `prefix`: which it may trust still are, and noting more. */
export function registrations(prefix: string): { isRegistered(topic: string, now: number): boolean; noteRegistered(topic: string, now: number): void } {
  let seen = registered.get(prefix);
  if (!seen) {
    seen = new Map();
    registered.set(prefix, seen);
  }
  const topics = seen;
  return {
    isRegistered: (topic, now) => (topics.get(topic) ?? -Infinity) > now - REGISTERED_TTL_MS,
    noteRegistered: (topic, now) => void topics.set(topic, now),
  };
}

/** Forgets a topic deleted under `prefix`, so its next enqueue registers it again. */
export function forgetRegistered(prefix: string, topic: string): void {
  registered.get(prefix)?.delete(topic);
}
