import type { OverflowPolicy } from "./topics.js";

/** How long an isolate trusts that a topic it registered is still registered, and what it learned of its cap then (a topic deleted meanwhile is registered again by its next enqueue after this). */
const REGISTERED_TTL_MS = 60_000;

/** A topic's cap as an enqueue last found it: none, or the overflow policy of its maxLength and its flow keys' caps. */
export type CapSeen = "none" | OverflowPolicy;

/** Which caps a topic has, as an enqueue last found them: its maxLength, and caps on its flow keys (maxKeyLength). */
export interface CapKinds {
  topic: boolean;
  keys: boolean;
}

const NO_CAPS: CapKinds = { topic: false, keys: false };

// Topics this isolate has registered already, when, and whether they had a
// cap or deduplicated by content, per key prefix: only the first enqueue per
// topic (per REGISTERED_TTL_MS) pays the registration and its checks, which
// keeps a single enqueue of an uncapped topic at three commands.
// contentDedupMs undefined: not yet learned (an upsert registered the topic).
const registered = new Map<string, Map<string, { at: number; cap: CapSeen; kinds: CapKinds; contentDedupMs: number | undefined }>>();

/** The topics this isolate registered under `prefix`: which it may trust still are, with their caps, and noting more. */
export function registrations(prefix: string): {
  isRegistered(topic: string, now: number): boolean;
  /** The topic's cap as last found, while its registration is trusted; undefined after. */
  capOf(topic: string, now: number): CapSeen | undefined;
  /** Which caps the topic has, as last found, while its registration is trusted; none after. */
  kindsOf(topic: string, now: number): CapKinds;
  /** The topic's content dedup window as last found (0: none), while its registration is trusted; undefined after, or when not learned. */
  contentDedupOf(topic: string, now: number): number | undefined;
  /** A registration and what it found; without `contentDedupMs` (an upsert's), that stays to be learned. */
  noteRegistered(topic: string, now: number, cap: CapSeen, kinds?: CapKinds, contentDedupMs?: number): void;
  /** The cap a later enqueue found (and its content dedup window, when it read it), the registration's time kept. */
  noteCap(topic: string, cap: CapSeen, kinds?: CapKinds, contentDedupMs?: number): void;
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
    kindsOf: (topic, now) => trusted(topic, now)?.kinds ?? NO_CAPS,
    contentDedupOf: (topic, now) => trusted(topic, now)?.contentDedupMs,
    noteRegistered: (topic, now, cap, kinds = NO_CAPS, contentDedupMs?: number) => void topics.set(topic, { at: now, cap, kinds, contentDedupMs }),
    noteCap: (topic, cap, kinds = NO_CAPS, contentDedupMs?: number) => {
      const r = topics.get(topic);
      if (r) {
        r.cap = cap;
        r.kinds = kinds;
        if (contentDedupMs !== undefined) r.contentDedupMs = contentDedupMs;
      }
    },
  };
}

/** Forgets a topic deleted, or whose cap or content dedup was set, under `prefix`, so its next enqueue registers it again and reads its cap. */
export function forgetRegistered(prefix: string, topic: string): void {
  registered.get(prefix)?.delete(topic);
}
