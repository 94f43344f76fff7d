import { DEFAULT_WEIGHT } from "../limits.js";
import type { DueTopic } from "./round-plan.js";

/** What a claim told of its topic's settings: its weight, and the handlers it may run at once here (a chunk here knows them). */
export interface TopicSeen {
  weight?: number;
  slots?: number;
}

/**
 * What one loop remembers of each topic between rounds: what its last chunk
 * took, whether it has a backlog, its weight and handler slots as its last
 * claim read them (a claim returns the topic's settings anyway, so this
 * costs no command), how much it was served for its weight, whether
 * fanning it out failed, and how long it is left alone. A chunk that got
 * nothing yet asks to be back at once would make the loop spin (the index
 * is only ever early by mistake, and claims correct it): such a topic is
 * left alone for a poll interval.
 */
export class TopicMemory {
  private readonly lastTaken = new Map<string, number>();
  private readonly backlog = new Set<string>();
  private readonly seen = new Map<string, TopicSeen>();
  private readonly served = new Map<string, number>();
  /** The least a topic due in the last round was served (see dueNow). */
  private leastServed = 0;
  private readonly noFanOut = new Set<string>();
  private readonly quietUntil = new Map<string, number>();

  /** A chunk of `topic` took `claimed` jobs; `more` when it came back full; `seen`, what its claim told of the topic's settings. */
  claimed(topic: string, claimed: number, more: boolean, seen: TopicSeen = {}): void {
    this.lastTaken.set(topic, claimed);
    if (seen.weight !== undefined) this.seen.set(topic, { ...this.seen.get(topic), ...seen });
    const weight = this.seen.get(topic)?.weight ?? DEFAULT_WEIGHT;
    this.served.set(topic, (this.served.get(topic) ?? 0) + claimed / Math.max(1, weight));
    if (more) this.backlog.add(topic);
    else this.backlog.delete(topic);
  }

  /**
   * The topics a round found due. How much each was served (the jobs its
   * chunks took, over its weight) orders the round (src/tick/round-plan.ts);
   * one that comes back after rounds without it
   * starts level with the least served of the last round's, so it is not
   * owed what it never asked for, and takes no more than its share on its
   * return.
   */
  dueNow(due: string[]): void {
    let least = Infinity;
    for (const topic of due) {
      const served = Math.max(this.served.get(topic) ?? 0, this.leastServed);
      this.served.set(topic, served);
      least = Math.min(least, served);
    }
    if (due.length > 0) this.leastServed = least;
  }

  /** Fanning `topic` out failed: it is delivered here from now on. */
  fanOutFailed(topic: string): void {
    this.noFanOut.add(topic);
  }

  /** Leaves `key` (a topic, or the schedules) alone until `until`. */
  quiet(key: string, until: number): void {
    this.quietUntil.set(key, until);
  }

  /** Until when `key` is left alone, if it is. */
  quietUntilOf(key: string): number | undefined {
    return this.quietUntil.get(key);
  }

  isQuiet(key: string, now: number): boolean {
    return (this.quietUntil.get(key) ?? -Infinity) > now;
  }

  /** When the keys left alone at `now` may be looked at again. */
  quietEnds(now: number): number[] {
    return [...this.quietUntil.values()].filter((t) => t > now);
  }

  /** Forgets what is no longer left alone at `now`. */
  forgetQuietBefore(now: number): void {
    for (const [key, until] of this.quietUntil) if (until <= now) this.quietUntil.delete(key);
  }

  /** What the round planner needs to know of `topic`, with what the loop knows of its running chunks. */
  view(topic: string, running: DueTopic["running"], room: number): DueTopic {
    const lastTaken = this.lastTaken.get(topic);
    return {
      topic,
      ...(lastTaken !== undefined ? { lastTaken } : {}),
      ...this.seen.get(topic),
      ...(this.served.has(topic) ? { served: this.served.get(topic)! } : {}),
      backlog: this.backlog.has(topic),
      noFanOut: this.noFanOut.has(topic),
      running,
      room,
    };
  }
}
