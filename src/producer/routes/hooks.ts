import { createRoute, z } from "@hono/zod-openapi";
import { json, problemResponses, router, wakeSoonJobs } from "../context.js";
import { equalConstantTime, hmacHex } from "../../client/signature.js";
import { bearerToken, tokenMatches } from "../auth.js";
import { depthExceeds, readUtf8 } from "../body.js";
import { ApiProblem } from "../problem.js";
import { JobId, TopicName } from "../schemas.js";
import { parseDuration } from "../../queue/policy/duration.js";

const encoder = new TextEncoder();

function parseDelay(text: string | undefined): number {
  if (text === undefined) return 0;
  try {
    const ms = parseDuration(text);
    if (ms <= 365 * 86_400_000) return ms;
  } catch {
    /* answered below */
  }
  throw new ApiProblem(422, `delay=${JSON.stringify(text)} is not a duration of at most 365 days such as "90s"`);
}

/**
 * Webhook ingest: the raw body becomes a job's payload (JSON stays JSON,
 * anything else becomes `{ contentType, text }`). Authorised by the bearer
 * token, or by `sha256=<hex>` HMAC of the raw body with the topic's
 * webhookSecret in `X-Delayline-Signature` (or GitHub's `X-Hub-Signature-256`).
 * A signed delivery is deduplicated by its signature, so a replayed request
 * makes no second job.
 */
export const hooks = router().openapi(
  createRoute({
    method: "post",
    path: "/{topic}",
    summary: "Ingest a webhook as a job",
    description:
      "The raw request body (any content type) becomes the job's payload: JSON stays JSON, anything else becomes { contentType, text }. " +
      "Authorised by the bearer token, or by X-Delayline-Signature (or X-Hub-Signature-256): sha256=<hex HMAC-SHA256 of the body with the topic's webhookSecret>.",
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
    if (!(token !== null && (await tokenMatches(token, settings.apiTokens)))) {
      const header = c.req.header("x-delayline-signature") ?? c.req.header("x-hub-signature-256");
      const presented = /^sha256=([0-9a-f]{64})$/i.exec(header ?? "")?.[1]?.toLowerCase();
      const unauthorized = () =>
        new ApiProblem(401, "send a bearer token, or sign the body: X-Delayline-Signature: sha256=<hex HMAC-SHA256 with the topic's webhookSecret>", {
          "www-authenticate": 'Bearer realm="delayline"',
        });
      // Without a well-formed signature there is nothing to check: Redis is not asked.
      if (!presented) throw unauthorized();
      const { secrets } = await queue.topicSettings(topic);
      if (!secrets.webhookSecret) throw unauthorized();
      const expected = await hmacHex(secrets.webhookSecret, raw);
      if (!equalConstantTime(expected, presented)) throw unauthorized();
      idempotencyKey = `hook:${presented}`;
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
      if (depthExceeds(payload, 64)) throw new ApiProblem(400, "JSON nested deeper than 64 levels is refused");
    } else {
      payload = { contentType: type, text };
    }
    const size = encoder.encode(JSON.stringify(payload)).length;
    if (size > settings.maxPayloadBytes) throw new ApiProblem(413, `the payload is ${size} bytes; the limit is ${settings.maxPayloadBytes}`);
    const r = await queue.enqueue({ topic, payload, delayMs: delay ?? 0, ...(idempotencyKey ? { idempotencyKey } : {}) });
    if (!r.deduplicated) await wakeSoonJobs(c, [r]);
    return c.json({ id: r.id, deduplicated: r.deduplicated }, 202);
  },
);
