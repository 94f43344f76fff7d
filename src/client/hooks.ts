/** `dl.hooks`: webhook ingest — a raw body sent to a topic becomes one job. */
import type { Duration } from "./jobs.js";
import { path, query } from "./paths.js";
import type { Requester } from "./requester.js";

/** Hooks: `/v1/hooks/:topic`. */
export class HooksResource {
  constructor(private readonly r: Requester) {}

  /**
   * Sends a raw webhook body to a topic's ingest endpoint, with the API
   * token (a signed sender's path needs no client). Sent once: the token
   * path has no idempotency key.
   */
  ingest(topic: string, body: string, options: { contentType?: string; delay?: Duration } = {}): Promise<{ id: string; deduplicated: boolean }> {
    return this.r.json("POST", path`/v1/hooks/${topic}` + query({ delay: options.delay }), body, {
      headers: { "content-type": options.contentType ?? "application/octet-stream" },
      retry: false,
    });
  }
}
