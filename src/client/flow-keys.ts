/** `dl.flowKeys`: a topic's flow keys' own settings — their limits, weight, pause and cap — over the topic's flow settings, and each key's length. */
import type { z } from "@hono/zod-openapi";
import type * as schemas from "../producer/schemas.js";
import { everyPage } from "./pages.js";
import { path, query } from "./paths.js";
import { SAFE, unlessNotFound, type Requester } from "./requester.js";

/** One flow key's own settings, as PUT /v1/topics/:topic/flow-keys/:key takes them (the whole set: a PUT replaces them). */
export type FlowKeySettings = z.input<typeof schemas.FlowKeyBody>;
/** A flow key: its own settings ({} when it has none) and its length (its jobs scheduled and waiting, exact). */
export type FlowKey = z.output<typeof schemas.FlowKeyView>;
/** A page of a topic's flow keys with settings of their own, in no particular order; `nextCursor` goes on from it. */
export type FlowKeyPage = z.output<typeof schemas.FlowKeyList>;

/** Flow keys: a topic's `/v1/topics/:topic/flow-keys`. Keys without settings of their own take the topic's `flow` settings. */
export class FlowKeysResource {
  constructor(private readonly r: Requester) {}

  /**
   * One page of the topic's keys that have settings of their own, in no
   * particular order; pass `nextCursor` back as `cursor` for the next.
   * `limit` (default 100, at most 1,000) is about how many a page holds: a
   * page may hold more or fewer. A key that keeps its settings the whole walk
   * long is listed at least once, and may be listed again on a later page.
   */
  list(topic: string, page: { limit?: number; cursor?: string } = {}): Promise<FlowKeyPage> {
    return this.r.json("GET", path`/v1/topics/${topic}/flow-keys` + query(page), undefined, SAFE);
  }

  /** Every key of the topic with settings of its own, page after page: `for await (const k of dl.flowKeys.all("mail"))`. */
  async *all(topic: string, options: { limit?: number } = {}): AsyncGenerator<FlowKey, void, undefined> {
    for await (const page of everyPage((at) => this.list(topic, { ...options, ...at }))) yield* page.keys;
  }

  /** A key's own settings ({} when it has none: it takes the topic's flow settings) and its length, or null when it has neither settings of its own nor pending jobs. */
  get(topic: string, key: string): Promise<FlowKey | null> {
    return unlessNotFound(this.r.json<FlowKey>("GET", path`/v1/topics/${topic}/flow-keys/${key}`, undefined, SAFE), null);
  }

  /**
   * Sets a key's own settings, replacing those it had (a setting left out
   * takes the topic's again). A key paused, or waiting at its parallelism,
   * that these leave unpaused takes its turn again at once.
   */
  set(topic: string, key: string, settings: FlowKeySettings): Promise<FlowKey> {
    return this.r.json("PUT", path`/v1/topics/${topic}/flow-keys/${key}`, settings, SAFE);
  }

  /** Removes a key's own settings: it takes the topic's flow settings again, unpaused. False when it had none. */
  delete(topic: string, key: string): Promise<boolean> {
    return unlessNotFound(
      this.r.json("DELETE", path`/v1/topics/${topic}/flow-keys/${key}`, undefined, SAFE).then(() => true),
      false,
    );
  }

  /**
   * Pauses a key: it starts no job until resumed; its jobs wait, and its
   * other settings stay. A read of its settings, then a {@link set}: a
   * change another caller makes to the key in between is replaced.
   */
  async pause(topic: string, key: string): Promise<FlowKey> {
    const settings = (await this.get(topic, key))?.settings ?? {};
    return this.set(topic, key, { ...settings, paused: true });
  }

  /**
   * Resumes a paused key, keeping its other settings; a key left with no
   * settings of its own has them removed, and takes the topic's. A read,
   * then a {@link set} or {@link delete}, as {@link pause}.
   */
  async resume(topic: string, key: string): Promise<FlowKey> {
    const { paused: _, ...rest } = (await this.get(topic, key))?.settings ?? {};
    if (Object.keys(rest).length > 0) return this.set(topic, key, rest);
    await this.delete(topic, key);
    return (await this.get(topic, key)) ?? { topic, key, settings: {}, length: 0 };
  }
}
