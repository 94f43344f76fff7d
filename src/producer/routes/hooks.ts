import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../context.js";
import { json, problemResponses, router, wakeSoonJobs } from "../context.js";
import { equalConstantTime, hmacHex, parseSignature, verifySignature } from "../../client/signature.js";
import { bearerToken, tokenMatches } from "../auth.js";
import { webhookSecret } from "../webhook-secrets.js";
import { depthExceeds, readUtf8, serializedBytes } from "../body.js";
import { ApiProblem } from "../problem.js";
import { JobId, TopicName } from "../schemas.js";
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

/** How far (either way) a timestamped signature's time may be from now, as for deliveries. */
const TOLERANCE_SEC = 300;

const unauthorized = (detail: string) => new ApiProblem(401, detail, { "www-authenticate": 'Bearer realm="delayline"' });
const HOW =
  "send a bearer token, or sign the body with the topic's webhookSecret: " +
  'X-Delayline-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"> (or sha256=<hex HMAC-SHA256 of the body>; GitHub\'s X-Hub-Signature-256 too)';

/**
 * Checks a signed (not token-authorised) ingest and returns the idempotency
 * key that makes a replay of it no second job:
 *
 * - `X-Delayline-Signature: t=<unix seconds>,v1=<hex>` (HMAC of `"<t>.<body>"`,
 *   as deliveries are signed): refused when t is more than 5 minutes from
 *   now, so a captured request cannot be replayed later; deduplicated by its
 *   MAC within the tolerance.
 * - `X-Delayline-Signature: sha256=<hex>` (HMAC of the body): deduplicated by
 *   the MAC for the idempotency window only.
 * - GitHub's `X-Hub-Signature-256: sha256=<hex>`: deduplicated by
 *   `X-GitHub-Delivery`, which a redelivery keeps (even after the secret
 *   changed), else by the MAC.
 *
 * Malformed and expired signatures are refused before Redis is asked for the secret.
 */
async function signedIngestKey(c: Context<AppEnv>, topic: string, raw: Uint8Array<ArrayBuffer>): Promise<string> {
  const ours = c.req.header("x-delayline-signature");
  const header = ours ?? c.req.header("x-hub-signature-256");
  if (header === undefined) throw unauthorized(HOW);
  const timestamped = ours !== undefined && /^\s*t=/.test(ours) ? parseSignature(ours) : null;
  const legacy = timestamped ? undefined : /^sha256=([0-9a-f]{64})$/i.exec(header)?.[1]?.toLowerCase();
  // Without a well-formed signature there is nothing to check: Redis is not asked.
  if (!timestamped && !legacy) throw unauthorized(HOW);
  const nowSec = Math.floor(Date.now() / 1000);
  if (timestamped && Math.abs(nowSec - timestamped.t) > TOLERANCE_SEC) {
    throw unauthorized(
      `the signature's timestamp t=${timestamped.t} is ${Math.abs(nowSec - timestamped.t)} s ${timestamped.t < nowSec ? "old" : "ahead"}; ` +
        `only ${TOLERANCE_SEC} s either way are accepted (a replayed request, or a skewed clock): sign it again with the current time`,
    );
  }
  const secret = await webhookSecret(c.get("queue"), c.get("settings"), topic);
  if (!secret) throw unauthorized(HOW);
  if (timestamped) {
    const result = await verifySignature({ header: ours, body: raw, secrets: secret, toleranceSec: TOLERANCE_SEC, nowSec });
    if (!result.ok) throw unauthorized(HOW);
    // Sorted: the same signatures in another order are the same request.
    return `hook:${[...timestamped.v1].sort().join(",")}`;
  }
  if (!equalConstantTime(await hmacHex(secret, raw), legacy!)) throw unauthorized(HOW);
  const delivery = ours === undefined ? c.req.header("x-github-delivery") : undefined;
  return delivery !== undefined && /^[A-Za-z0-9-]{1,100}$/.test(delivery) ? `hook:github:${delivery}` : `hook:${legacy}`;
}

/**
 * Webhook ingest: the raw body becomes a job's payload (JSON stays JSON,
 * anything else becomes `{ contentType, text }`). Authorised by the bearer
 * token, or by a signature with the topic's webhookSecret
 * ({@link signedIngestKey}); a replayed signed delivery makes no second job.
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
      'X-Delayline-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"> (refused more than 300 s from now; a replay within that makes no second job), ' +
      "or X-Delayline-Signature / X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body> (a replay within the idempotency window makes no second job; " +
      "GitHub deliveries are deduplicated by X-GitHub-Delivery).",
    security: [{ bearer: [] }, { signature: [] }] as Array<Record<string, string[]>>,
    request: {
      params: z.object({ topic: TopicName.openapi({ param: { name: "topic", in: "path" } }) }),
      query: z.object({ delay: z.string().max(32).optional().openapi({ description: 'A duration such as "90s"' }) }),
    },
    responses: {
      202: { description: "Accepted as a job", ...json(z.object({ id: JobId, deduplicated: z.boolean() })) },
      ...problemResponses([400, 401, 413, 422, 503]),
    },
  }),
  async (c) => {
    const { topic } = c.req.valid("param");
    const delay = parseDelay(c.req.valid("query").delay);
    const settings = c.get("settings");
    const queue = c.get("queue");
    const raw = new Uint8Array(await c.req.raw.arrayBuffer());

    let idempotencyKey: string | undefined;
    const token = bearerToken(c.req.header("authorization"));
    if (!(token !== null && tokenMatches(token, settings.apiTokens))) idempotencyKey = await signedIngestKey(c, topic, raw);

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
    const r = await queue.enqueue({ topic, payload, delayMs: delay ?? 0, ...(idempotencyKey ? { idempotencyKey } : {}) });
    if (!r.deduplicated) await wakeSoonJobs(c, [r]);
    return c.json({ id: r.id, deduplicated: r.deduplicated }, 202);
  },
);
