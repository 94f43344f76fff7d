/** `dl.topics`: a topic's settings, backlog and counters; listing, changing, pausing and deleting topics. */
import type { z } from "@hono/zod-openapi";
import type * as schemas from "../producer/schemas.js";
import { everyPage } from "./pages.js";
import { path, query } from "./paths.js";
import { SAFE, type Requester } from "./requester.js";

/** A change to a topic's settings, as PUT /v1/topics/:topic takes it. */
export type TopicSettingsPatch = z.input<typeof schemas.TopicSettingsBody>;
/** A topic's flow settings (`settings.flow`, and `flow` of a change): the limits, weight and priority step each of its flow keys gets unless it has its own. */
export type FlowSettings = z.input<typeof schemas.FlowSettingsBody>;
/** A topic's settings in force, backlog and counters. */
export type Topic = z.output<typeof schemas.TopicView>;
/** A page of topics in name order; `nextCursor` goes on from it, `total` counts every topic. */
export type TopicPage = z.output<typeof schemas.TopicList>;

/** Topics: `/v1/topics` and `/v1/topics/:topic`. */
export class TopicsResource {
  constructor(private readonly r: Requester) {}

  /**
   * One page of the registered topics in name order (default 100 a page, at
   * most 500); pass `nextCursor` back as `cursor` for the next. `total` counts
   * every topic.
   */
  list(options: { limit?: number; cursor?: string } = {}): Promise<TopicPage> {
    return this.r.json("GET", `/v1/topics${query(options)}`, undefined, SAFE);
  }

  /**
   * Every topic, page after page: `for await (const t of dl.topics.all())`.
   * Fetches the next page only when the loop reaches it.
   */
  async *all(options: { limit?: number } = {}): AsyncGenerator<Topic, void, undefined> {
    for await (const page of everyPage((at) => this.list({ ...options, ...at }))) yield* page.topics;
  }

  /** A topic's settings (those in force, secrets shown only as whether they are set), backlog and counters. */
  get(name: string): Promise<Topic> {
    return this.r.json("GET", path`/v1/topics/${name}`, undefined, SAFE);
  }

  /** Changes a topic's settings (null resets one to its default), creating the topic. */
  configure(name: string, patch: TopicSettingsPatch): Promise<Topic> {
    return this.r.json("PUT", path`/v1/topics/${name}`, patch, SAFE);
  }

  /**
   * Deletes a topic with its settings and metrics. Refused (409, a
   * {@link DelaylineConflictError}) while it holds jobs; `purge: true` drops its
   * scheduled jobs and dead letters too. Jobs in flight always refuse it.
   */
  delete(name: string, options: { purge?: boolean } = {}): Promise<{ topic: string; deleted: true; purged: { scheduled: number; dead: number } }> {
    return this.r.json("DELETE", path`/v1/topics/${name}` + query({ purge: options.purge }), undefined, SAFE);
  }

  /** Stops dispatching and claiming the topic's jobs until it is resumed. */
  pause(name: string): Promise<Topic> {
    return this.r.json("POST", path`/v1/topics/${name}/pause`, undefined, SAFE);
  }

  /** Resumes a paused topic. */
  resume(name: string): Promise<Topic> {
    return this.r.json("POST", path`/v1/topics/${name}/resume`, undefined, SAFE);
  }
}
