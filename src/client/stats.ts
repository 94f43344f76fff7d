/** `dl.stats`: the tick's heartbeat and every topic's backlog, counters and series; the same as Prometheus text. */
import type { z } from "@hono/zod-openapi";
import type * as schemas from "../producer/schemas.js";
import { everyPage } from "./pages.js";
import { query } from "./paths.js";
import { SAFE, type Requester } from "./requester.js";

/** The tick's heartbeat and a page of topics with their figures, as GET /v1/stats answers. */
export type Stats = z.output<typeof schemas.StatsView>;

/** Stats: `/v1/stats`, and `/metrics` (the same figures as Prometheus' exposition text). */
export class StatsResource {
  constructor(private readonly r: Requester) {}

  /**
   * The tick's heartbeat and one page of topics (name order) with their
   * backlog, counters, histograms and `minutes` (default 60, 0–1,440) of
   * per-minute series: `limit` topics (default 50, at most 100; fewer when
   * minutes × topics would pass 3,000). Pass `nextCursor` back as `cursor`
   * for the next page; `total` counts every topic.
   */
  get(options: { minutes?: number; limit?: number; cursor?: string } = {}): Promise<Stats> {
    return this.r.json("GET", `/v1/stats${query(options)}`, undefined, SAFE);
  }

  /** Every page of {@link get}, one after another: `for await (const page of dl.stats.pages({ minutes: 0 }))`. */
  pages(options: { minutes?: number; limit?: number } = {}): AsyncGenerator<Stats, void, undefined> {
    return everyPage((at) => this.get({ ...options, ...at }));
  }

  /** The Prometheus exposition text of GET /metrics. */
  prometheus(): Promise<string> {
    return this.r.text("GET", "/metrics", undefined, SAFE);
  }
}
