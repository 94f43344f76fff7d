/** `dl.deadLetters`: a topic's dead letters — listing, replaying, purging and deleting them. */
import type { z } from "@hono/zod-openapi";
import type * as schemas from "../producer/schemas.js";
import type { Duration, JobRequest } from "./jobs.js";
import { addDryRunIds, everyPage } from "./pages.js";
import { path, query } from "./paths.js";
import { SAFE, unlessNotFound, type Requester } from "./requester.js";

/** A dead letter: the job as it failed, with its attempts. */
export type DeadLetter = z.output<typeof schemas.DeadEntryView>;
/** What one call of a replay did: how many jobs it put back, and which given ids were not dead letters. */
export type Replayed = z.output<typeof schemas.ReplayResult>;
/** What one call of a purge did. */
type Purged = z.output<typeof schemas.PurgeResult>;
/** A page of dead letters, newest first. */
export interface DeadLetterPage {
  entries: DeadLetter[];
  nextCursor: string | null;
}

/** Which dead letters a replay or purge picks: by their failure (a failed-time window, a text their last error holds) and a label their job carries. */
export interface DeadLetterFilter {
  failedFrom?: string | number;
  failedTo?: string | number;
  error?: string;
  /** Only letters carrying this label, walked in enqueue order. Default: any. */
  label?: string;
}

/** What a listing of dead letters shows: a page size, a failed-time window, a label. */
type DeadListOptions = {
  limit?: number;
  failedFrom?: string | number;
  failedTo?: string | number;
  /** Only letters carrying this label, in enqueue order (a page may then hold fewer than `limit`, even none, with a `nextCursor`). Default: any. */
  label?: string;
};

/** Which dead letters {@link DeadLettersResource.replay} puts back (given ids, all, or a filter), when, and with what changed. */
export type ReplayTarget = ({ ids: string[] } | { all: true } | DeadLetterFilter) & {
  /** Due this long from now. Default now. */
  delay?: Duration;
  /** Spread the jobs at random over this long ("10m"). Default: none. */
  spread?: Duration;
  /** Change nothing: answer how many letters the replay would take, and the first 20 ids (`ids`). Default false. */
  dryRun?: boolean;
  /** A new payload for each replayed job (null included). Default: each keeps its own. */
  payload?: unknown;
  /** A new delivery target for each replayed job, as an enqueue's. Default: each keeps its own. */
  target?: JobRequest["target"];
  /** New provider headers for each replayed job's handler (names webhook ingest keeps). Default: each keeps its own. */
  webhookHeaders?: Record<string, string>;
  /** Replay into this topic: each letter becomes a new job there (`movedTo` maps the ids). Default: the letters' own topic. */
  topic?: string;
};

/** What a replay did, or with `dryRun` would do (`ids`: the first 20 letters it would take). */
export interface ReplayOutcome {
  replayed: number;
  notFound: string[];
  /** With `topic`: each replayed letter's id, and its new job's. */
  movedTo?: Record<string, string>;
  dryRun?: true;
  ids?: string[];
}

/** What a purge with `dryRun` would drop: how many letters, and the first 20 ids. */
export interface PurgePreview {
  dryRun: true;
  purged: number;
  ids: string[];
}

/** Dead letters: a topic's `/v1/topics/:topic/dead`. */
export class DeadLettersResource {
  constructor(private readonly r: Requester) {}

  /**
   * A page of dead letters, newest first, optionally within a failed-time
   * window; pass `nextCursor` back as `cursor` for the next. A cursor is a
   * position, so letters that arrive or go meanwhile never make a page
   * repeat or skip one.
   */
  list(topic: string, page: DeadListOptions & { cursor?: string } = {}): Promise<DeadLetterPage> {
    return this.r.json("GET", path`/v1/topics/${topic}/dead` + query(page), undefined, SAFE);
  }

  /** Every dead letter of a topic (within a failed-time window), newest first, page after page: `for await (const d of dl.deadLetters.all("mail"))`. */
  async *all(topic: string, options: DeadListOptions = {}): AsyncGenerator<DeadLetter, void, undefined> {
    for await (const page of everyPage((at) => this.list(topic, { ...options, ...at }))) yield* page.entries;
  }

  /**
   * Puts dead jobs back on the schedule with fresh attempts: given ids, all,
   * or those a filter picks, call after call through the cursor, each a
   * bounded batch on the server. `notFound` lists the given ids that were
   * not dead letters. With `payload`, `target`, `webhookHeaders` or `topic`
   * each replayed job gets the same change; with `dryRun` nothing changes.
   */
  async replay(topic: string, what: ReplayTarget): Promise<ReplayOutcome> {
    let replayed = 0;
    let notFound: string[] = [];
    const ids: string[] = [];
    let movedTo: Record<string, string> | undefined;
    for await (const r of everyPage((at) => this.r.json<Replayed>("POST", path`/v1/topics/${topic}/dead/replay`, { ...what, ...at }, SAFE))) {
      replayed += r.replayed;
      notFound = r.notFound;
      addDryRunIds(ids, r.ids);
      if (r.movedTo) movedTo = { ...movedTo, ...r.movedTo };
    }
    return { replayed, notFound, ...(movedTo ? { movedTo } : {}), ...(what.dryRun ? { dryRun: true as const, ids } : {}) };
  }

  /**
   * Drops a topic's dead letters — all, or those a filter picks — call after
   * call through the cursor; returns how many. With `dryRun: true` nothing
   * changes: it answers how many it would drop and the first 20 ids.
   */
  purge(topic: string, filter?: DeadLetterFilter): Promise<number>;
  purge(topic: string, filter: DeadLetterFilter & { dryRun: true }): Promise<PurgePreview>;
  async purge(topic: string, filter: DeadLetterFilter & { dryRun?: boolean } = {}): Promise<number | PurgePreview> {
    let purged = 0;
    const ids: string[] = [];
    const call = (at: { cursor?: string }) => this.r.json<Purged>("DELETE", path`/v1/topics/${topic}/dead` + query({ ...filter, ...at }), undefined, SAFE);
    for await (const r of everyPage(call)) {
      purged += r.purged;
      addDryRunIds(ids, r.ids);
    }
    return filter.dryRun ? { dryRun: true, purged, ids } : purged;
  }

  /** Drops one dead letter; false when the topic holds none with that id. */
  delete(topic: string, id: string): Promise<boolean> {
    return unlessNotFound(
      this.r.json("DELETE", path`/v1/topics/${topic}/dead/${id}`, undefined, SAFE).then(() => true),
      false,
    );
  }
}
