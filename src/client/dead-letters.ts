/** `dl.deadLetters`: a topic's dead letters — listing, replaying, purging and deleting them. */
import type { z } from "@hono/zod-openapi";
import type * as schemas from "../producer/schemas.js";
import type { Duration } from "./jobs.js";
import { everyPage } from "./pages.js";
import { path, query } from "./paths.js";
import { SAFE, unlessNotFound, type Requester } from "./requester.js";

/** A dead letter: the job as it failed, with its attempts. */
export type DeadLetter = z.output<typeof schemas.DeadEntryView>;
/** What one call of a replay did: how many jobs it put back, and which given ids were not dead letters. */
export type Replayed = z.output<typeof schemas.ReplayResult>;
/** A page of dead letters, newest first. */
export interface DeadLetterPage {
  entries: DeadLetter[];
  nextCursor: string | null;
}

/** Which dead letters a replay or purge picks by their failure: a failed-time window and a text their last error holds. */
export interface DeadLetterFilter {
  failedFrom?: string | number;
  failedTo?: string | number;
  error?: string;
}

/** Which dead letters {@link DeadLettersResource.replay} puts back (given ids, all, or a filter), and when. */
export type ReplayTarget = ({ ids: string[] } | { all: true } | DeadLetterFilter) & {
  /** Due this long from now. Default now. */
  delay?: Duration;
  /** Spread the jobs at random over this long ("10m"). Default: none. */
  spread?: Duration;
};

/** Dead letters: a topic's `/v1/topics/:topic/dead`. */
export class DeadLettersResource {
  constructor(private readonly r: Requester) {}

  /**
   * A page of dead letters, newest first, optionally within a failed-time
   * window; pass `nextCursor` back as `cursor` for the next. A cursor is a
   * position, so letters that arrive or go meanwhile never make a page
   * repeat or skip one.
   */
  list(topic: string, page: { limit?: number; cursor?: string; failedFrom?: string | number; failedTo?: string | number } = {}): Promise<DeadLetterPage> {
    return this.r.json("GET", path`/v1/topics/${topic}/dead` + query(page), undefined, SAFE);
  }

  /** Every dead letter of a topic (within a failed-time window), newest first, page after page: `for await (const d of dl.deadLetters.all("mail"))`. */
  async *all(
    topic: string,
    options: { limit?: number; failedFrom?: string | number; failedTo?: string | number } = {},
  ): AsyncGenerator<DeadLetter, void, undefined> {
    for await (const page of everyPage((at) => this.list(topic, { ...options, ...at }))) yield* page.entries;
  }

  /**
   * Puts dead jobs back on the schedule with fresh attempts: given ids, all,
   * or those a filter picks, call after call through the cursor, each a
   * bounded batch on the server. `notFound` lists the given ids that were
   * not dead letters.
   */
  async replay(topic: string, what: ReplayTarget): Promise<{ replayed: number; notFound: string[] }> {
    let replayed = 0;
    let notFound: string[] = [];
    for await (const r of everyPage((at) => this.r.json<Replayed>("POST", path`/v1/topics/${topic}/dead/replay`, { ...what, ...at }, SAFE))) {
      replayed += r.replayed;
      notFound = r.notFound;
    }
    return { replayed, notFound };
  }

  /** Drops a topic's dead letters — all, or those a filter picks — call after call through the cursor; returns how many. */
  async purge(topic: string, filter: DeadLetterFilter = {}): Promise<number> {
    let purged = 0;
    const call = (at: { cursor?: string }) =>
      this.r.json<{ purged: number; nextCursor: string | null }>("DELETE", path`/v1/topics/${topic}/dead` + query({ ...filter, ...at }), undefined, SAFE);
    for await (const r of everyPage(call)) purged += r.purged;
    return purged;
  }

  /** Drops one dead letter; false when the topic holds none with that id. */
  delete(topic: string, id: string): Promise<boolean> {
    return unlessNotFound(
      this.r.json("DELETE", path`/v1/topics/${topic}/dead/${id}`, undefined, SAFE).then(() => true),
      false,
    );
  }
}
