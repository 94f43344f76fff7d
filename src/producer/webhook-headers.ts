import { z } from "@hono/zod-openapi";
import { ApiProblem } from "./problem.js";

/**
 * The provider headers webhook ingest keeps in the job (`webhookHeaders`,
 * lower-case names) for its handler: those that say which event arrived and
 * which delivery it was, which the body alone often does not (GitHub's event
 * name is only in `X-GitHub-Event`). An allowlist rather than every header:
 * the rest are the connection's, the sender's client or its signature, and
 * a record keeps only what a handler reads. Signatures are not kept: they
 * were checked at ingest, and the job is signed anew on delivery.
 */
export const WEBHOOK_HEADERS = [
  // GitHub
  "x-github-event",
  "x-github-delivery",
  "x-github-hook-id",
  "x-github-hook-installation-target-id",
  "x-github-hook-installation-target-type",
  // Standard Webhooks (the message id and its timestamp; both signed)
  "webhook-id",
  "webhook-timestamp",
  // GitLab
  "x-gitlab-event",
  "x-gitlab-event-uuid",
  // Shopify
  "x-shopify-topic",
  "x-shopify-webhook-id",
  "x-shopify-event-id",
  "x-shopify-shop-domain",
  // Bitbucket
  "x-event-key",
  "x-request-uuid",
  // Generic
  "x-event-type",
  "x-event-id",
] as const;

/** Longest value kept, in UTF-8 bytes: a longer one is refused with 431 (an event name or id is far shorter), not cut, so a handler never reads half an id. */
export const MAX_WEBHOOK_HEADER_BYTES = 256;

const encoder = new TextEncoder();

/**
 * The request's {@link WEBHOOK_HEADERS}, or undefined when it has none: at
 * most {@link WEBHOOK_HEADERS}.length values of at most
 * {@link MAX_WEBHOOK_HEADER_BYTES} each (so under 5 KB a record). Checked
 * before anything else of the request needs Redis.
 */
export function keptWebhookHeaders(header: (name: string) => string | undefined): Record<string, string> | undefined {
  let kept: Record<string, string> | undefined;
  for (const name of WEBHOOK_HEADERS) {
    const value = header(name);
    if (value === undefined) continue;
    const bytes = encoder.encode(value).length;
    if (bytes > MAX_WEBHOOK_HEADER_BYTES) {
      throw new ApiProblem(431, `the ${name} header is ${bytes} bytes; webhook ingest keeps headers of at most ${MAX_WEBHOOK_HEADER_BYTES} bytes`);
    }
    kept ??= {};
    kept[name] = value;
  }
  return kept;
}

/**
 * New `webhookHeaders` for a job (a dead-letter replay's edit): what ingest
 * would keep — names from {@link WEBHOOK_HEADERS}, values of at most
 * {@link MAX_WEBHOOK_HEADER_BYTES} bytes.
 */
export const WebhookHeadersBody = z
  .partialRecord(
    z.enum(WEBHOOK_HEADERS),
    z.string().refine((v) => encoder.encode(v).length <= MAX_WEBHOOK_HEADER_BYTES, `at most ${MAX_WEBHOOK_HEADER_BYTES} bytes`),
  )
  .openapi({ description: `An ingested webhook's provider headers, kept for its handler: lower-case names of ${WEBHOOK_HEADERS.join(", ")}` });
