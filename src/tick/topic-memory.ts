import type { DueTopic } from "./round-plan.js";

/**
 * What one loop remembers of each topic between rounds: what its last chunk
 * took, whether it has a backlog, whether fanning it out failed, and how long
 * it is left alone. A chunk that got nothing yet asks to be back at once
 * would make the loop spin (the index is only ever early by mistake, and
 * claims correct it): such a topic is left alone for a poll interval.
 */
export class TopicMemory {
  private readonly lastTaken = new Map<string, number>();
  private readonly backlog = new Set<string>();
  private readonly noFanOut = new Set<string>();
  private readonly quietUntil = new Map<string, number>();

  /** A chunk of `topic` took `claimed` jobs; `more` when it came back full. */
  claimed(topic: string, claimed: number, more: boolean): void {
    this.lastTaken.set(topic, claimed);
    if (more) this.backlog.add(topic);
    else this.backlog.delete(topic);
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
    return { topic, ...(lastTaken !== undefined ? { lastTaken } : {}), backlog: this.backlog.has(topic), noFanOut: this.noFanOut.has(topic), running, room };
  }
}
