import { createRoute, z } from "@hono/zod-openapi";
import { json, problemResponses, router, topicQueue, wakeSoonJobs } from "../context.js";
import { readIngestSignature, verifiedIngestKey } from "../ingest-signatures.js";
import { keptWebhookHeaders, MAX_WEBHOOK_HEADER_BYTES, WEBHOOK_HEADERS } from "../webhook-headers.js";
import { bearerToken, tokenMatches } from "../auth.js";
import { webhookSecret } from "../webhook-secrets.js";
import { depthExceeds, readUtf8, serializedBytes } from "../body.js";
import { ApiProblem } from "../problem.js";
import { JobId, TopicName } from "../schema-parts.js";
import { parseDuration } from "../../queue/policy/duration.js";
import { MAX_DELAY_DAYS, MAX_DELAY_MS, MAX_JSON_DEPTH } from "../../limits.js";

function parseDelay(text: string | undefined): number {
  if (text === undefined) return 0;
  try {
    const ms = parseDuration(text);
    if (ms <= MAX_DELAY_MS) return ms;
  } catch {
    /* answered below */
  }
  throw new ApiProblem(422, `delay=${JSON.stringify(text)} is not a duration of at most ${MAX_DELAY_DAYS} days such as "90s"`);
}

/**
 * Webhook ingest: the raw body becomes a job's payload (JSON stays JSON,
 * anything else becomes `{ contentType, text }`). Authorised by the bearer
 * token, or by a signature with the topic's webhookSecret
 * (src/producer/ingest-signatures.ts); a replayed signed delivery makes no second job.
 */
export const hooks = router().openapi(
  createRoute({
    method: "post",
    path: "/{topic}",
    operationId: "ingestWebhook",
    summary: "Ingest a webhook as a job",
    description:
      "The raw request body (any content type) becomes the job's payload: JSON stays JSON, anything else becomes { contentType, text }. " +
      "Authorised by the bearer token, or by a signature with the topic's webhookSecret: " +
      'X-Delayline-Signature or Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">; ' +
      'Standard Webhooks\' webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>"> (timestamps more than 300 s from now are refused); ' +
      "or X-Delayline-Signature / GitHub's X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>. " +
      "A replay makes no second job (202 with the first job's id and deduplicated: true): signed requests are deduplicated within the idempotency window " +
      "by what the signature covers — the timestamp and body, a Stripe event's id, the webhook-id, or the body — never by the signature header. " +
      `The provider's event headers are kept in the job's webhookHeaders (lower-case names), for its handler and sent on by the http handler: ${WEBHOOK_HEADERS.join(", ")}; ` +
      `a value over ${MAX_WEBHOOK_HEADER_BYTES} bytes is refused with 431.`,
    security: [{ bearer: [] }, { signature: [] }] as Array<Record<string, string[]>>,
    request: {
      params: z.object({ topic: TopicName.openapi({ param: { name: "topic", in: "path" } }) }),
      query: z.object({ delay: z.string().max(32).optional().openapi({ description: 'A duration such as "90s"' }) }),
    },
    responses: {
      202: { description: "Accepted as a job", ...json(z.object({ id: JobId, deduplicated: z.boolean() })) },
      ...problemResponses([400, 401, 413, 422, 429, 431, 503]),
    },
  }),
  async (c) => {
    const { topic } = c.req.valid("param");
    const delay = parseDelay(c.req.valid("query").delay);
    const settings = c.get("settings");
    const queue = topicQueue(c, topic);
    const raw = new Uint8Array(await c.req.raw.arrayBuffer());

    // Refused before the signature's secret is read: a header check needs no Redis.
    const webhookHeaders = keptWebhookHeaders((name) => c.req.header(name));
    let idempotencyKey: string | undefined;
    const token = bearerToken(c.req.header("authorization"));
    if (!(token !== null && tokenMatches(token, settings.apiTokens))) {
      const nowSec = Math.floor(Date.now() / 1000);
      // Malformed and expired signatures are refused here, before Redis is asked for the secret.
      const signature = readIngestSignature((name) => c.req.header(name), nowSec);
      idempotencyKey = await verifiedIngestKey(signature, await webhookSecret(queue, settings, topic), raw, nowSec);
    }

    const type = (c.req.header("content-type") ?? "application/octet-stream").split(";")[0]!.trim().toLowerCase();
    const text = await readUtf8(new Request("http://body", { method: "POST", body: raw }));
    if (text instanceof Response) throw new ApiProblem(400, "the body is not valid UTF-8");
    let payload: unknown;
    if (/^application\/([\w.-]+\+)?json$/.test(type)) {
      try {
        payload = JSON.parse(text);
      } catch {
        throw new ApiProblem(400, "the body says it is JSON but does not parse");
      }
      if (depthExceeds(payload, MAX_JSON_DEPTH)) throw new ApiProblem(400, `JSON nested deeper than ${MAX_JSON_DEPTH} levels is refused`);
    } else {
      payload = { contentType: type, text };
    }
    const size = serializedBytes(payload);
    if (size > settings.maxPayloadBytes) throw new ApiProblem(413, `the payload is ${size} bytes; the limit is ${settings.maxPayloadBytes}`);
    const r = await queue.enqueue({
      topic,
      payload,
      delayMs: delay,
      ...(idempotencyKey ? { idempotencyKey } : {}),
      ...(webhookHeaders ? { webhookHeaders } : {}),
    });
    if (!r.deduplicated) await wakeSoonJobs(c, [r]);
    return c.json({ id: r.id, deduplicated: r.deduplicated }, 202);
  },
);
