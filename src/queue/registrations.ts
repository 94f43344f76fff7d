import type { OverflowPolicy } from "./topics.js";

/** How long an isolate trusts that a topic it registered is still registered, and what it learned of its cap then (a topic deleted meanwhile is registered again by its next enqueue after this). */
const REGISTERED_TTL_MS = 60_000;

/** A topic's cap as an enqueue last found it: none, or the overflow policy of its maxLength. */
export type CapSeen = "none" | OverflowPolicy;

// Topics this isolate has registered already, when, and whether they had a
// cap, per key prefix: only the first enqueue per topic (per
// REGISTERED_TTL_MS) pays the registration and its cap check, which keeps a
// single enqueue of an uncapped topic at three commands.
const registered = new Map<string, Map<string, { at: number; cap: CapSeen }>>();

/** The topics this isolate registered under `prefix`: which it may trust still are, with their caps, and noting more. */
export function registrations(prefix: string): {
  isRegistered(topic: string, now: number): boolean;
  /** The topic's cap as last found, while its registration is trusted; undefined after. */
  capOf(topic: string, now: number): CapSeen | undefined;
  noteRegistered(topic: string, now: number, cap: CapSeen): void;
  /** The cap a later enqueue found, the registration's time kept. */
  noteCap(topic: string, cap: CapSeen): void;
} {
  let seen = registered.get(prefix);
  if (!seen) {
    seen = new Map();
    registered.set(prefix, seen);
  }
  const topics = seen;
  const trusted = (topic: string, now: number) => {
    const r = topics.get(topic);
    return r !== undefined && r.at > now - REGISTERED_TTL_MS ? r : undefined;
  };
  return {
    isRegistered: (topic, now) => trusted(topic, now) !== undefined,
    capOf: (topic, now) => trusted(topic, now)?.cap,
    noteRegistered: (topic, now, cap) => void topics.set(topic, { at: now, cap }),
    noteCap: (topic, cap) => {
      const r = topics.get(topic);
      if (r) r.cap = cap;
    },
  };
}

/** Forgets a topic deleted, or whose cap was set, under `prefix`, so its next enqueue registers it again and reads its cap. */
export function forgetRegistered(prefix: string, topic: string): void {
  registered.get(prefix)?.delete(topic);
}
