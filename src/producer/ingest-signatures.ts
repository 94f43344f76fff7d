import { equalConstantTime, hmacHex } from "../protocol/hmac.js";
import { parseSignature, verifySignature, verifyStandardSignature } from "../protocol/verify.js";
import { ApiProblem } from "./problem.js";

/**
 * The signatures webhook ingest accepts without a token, each checked with
 * the topic's webhookSecret, and the idempotency key that makes a replay of
 * a signed request no second job.
 *
 * The key is made only of what the signature covers (the body, the signed
 * timestamp, a signed message id), never of the signature header itself:
 * a header can carry extra, reordered or repeated MACs, and one matching
 * MAC is enough to pass, so whoever replays a captured request could vary
 * a key made of the header without knowing the secret.
 *
 * | header | signs | key |
 * |---|---|---|
 * | `X-Delayline-Signature: t=<unix>,v1=<hex>` | `"<t>.<body>"`, secret's text | t + SHA-256 of the body |
 * | `Stripe-Signature: t=<unix>,v1=<hex>` | `"<t>.<body>"`, the `whsec_…` text | the event's `id` in the (signed) body, else as above |
 * | `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` | `"<id>.<t>.<body>"`, the `whsec_` bytes | `webhook-id` (signed) |
 * | `X-Delayline-Signature` / GitHub's `X-Hub-Signature-256: sha256=<hex>` | the body | SHA-256 of the body |
 *
 * The unkeyed SHA-256 of the body keeps a redelivery with the same body one
 * job after the secret changed; it can be set only by a request that
 * passed the signature check.
 */

/** How far (either way) a signed timestamp may be from now, as for deliveries and in Stripe's and Standard Webhooks' libraries. */
const TOLERANCE_SEC = 300;

const unauthorized = (detail: string) => new ApiProblem(401, detail, { "www-authenticate": 'Bearer realm="delayline"' });

const HOW =
  "send a bearer token, or sign the body with the topic's webhookSecret: " +
  'X-Delayline-Signature or Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">; ' +
  'Standard Webhooks\' webhook-id, webhook-timestamp and webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>">; ' +
  "or X-Delayline-Signature / GitHub's X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>";

/** A signature that is well-formed and within its time: what is left to check needs the secret. */
export type IngestSignature =
  | { kind: "timestamped"; provider: "delayline" | "stripe"; header: string; t: number }
  | { kind: "standard"; id: string; timestamp: string; signature: string }
  | { kind: "body"; mac: string };

/** A Standard Webhooks `webhook-id`: printable ASCII without `.` (which would blur `"<id>.<t>.<body>"`), at most 200 characters. */
const MESSAGE_ID = /^[!-\-/-~]{1,200}$/;

function checkTime(t: number, nowSec: number): void {
  if (Math.abs(nowSec - t) > TOLERANCE_SEC) {
    throw unauthorized(
      `the signature's timestamp t=${t} is ${Math.abs(nowSec - t)} s ${t < nowSec ? "old" : "ahead"}; ` +
        `only ${TOLERANCE_SEC} s either way are accepted (a replayed request, or a skewed clock): sign it again with the current time`,
    );
  }
}

/**
 * The request's signature, checked for form and time only, so a malformed
 * or expired one is refused (401) before Redis is asked for the secret.
 * One header is read, the first present of X-Delayline-Signature,
 * webhook-signature, Stripe-Signature and X-Hub-Signature-256.
 */
export function readIngestSignature(header: (name: string) => string | undefined, nowSec: number): IngestSignature {
  const ours = header("x-delayline-signature");
  const standard = ours === undefined ? header("webhook-signature") : undefined;
  const stripe = ours === undefined && standard === undefined ? header("stripe-signature") : undefined;
  if (standard !== undefined) {
    const id = header("webhook-id");
    const timestamp = header("webhook-timestamp");
    if (id === undefined || timestamp === undefined || !MESSAGE_ID.test(id) || !/^\d{1,12}$/.test(timestamp) || !/(^|\s)v1,\S/.test(standard)) {
      throw unauthorized(HOW);
    }
    checkTime(Number(timestamp), nowSec);
    return { kind: "standard", id, timestamp, signature: standard };
  }
  const timestampedHeader = ours !== undefined && /(^|,)\s*t=/.test(ours) ? ours : stripe;
  if (timestampedHeader !== undefined) {
    const parsed = parseSignature(timestampedHeader);
    if (!parsed) throw unauthorized(HOW);
    checkTime(parsed.t, nowSec);
    return { kind: "timestamped", provider: ours !== undefined ? "delayline" : "stripe", header: timestampedHeader, t: parsed.t };
  }
  const bodyOnly = ours ?? header("x-hub-signature-256");
  const mac = bodyOnly === undefined ? undefined : /^sha256=([0-9a-f]{64})$/i.exec(bodyOnly)?.[1]?.toLowerCase();
  if (mac === undefined) throw unauthorized(HOW);
  return { kind: "body", mac };
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  let hex = "";
  for (const b of new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))) hex += HEX[b]!;
  return hex;
}

/** A Stripe event's `id` (`evt_…`) from the signed body, or undefined when the body is no event. */
function stripeEventId(raw: Uint8Array<ArrayBuffer>): string | undefined {
  try {
    const id = (JSON.parse(new TextDecoder().decode(raw)) as { id?: unknown } | null)?.id;
    return typeof id === "string" && /^evt_[A-Za-z0-9_]{1,200}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Checks `signature` against the topic's secret (401 when it does not match) and returns the idempotency key of the request. */
export async function verifiedIngestKey(signature: IngestSignature, secret: string | undefined, raw: Uint8Array<ArrayBuffer>, nowSec: number): Promise<string> {
  if (!secret) throw unauthorized(HOW);
  switch (signature.kind) {
    case "timestamped": {
      const result = await verifySignature({ header: signature.header, body: raw, secrets: secret, toleranceSec: TOLERANCE_SEC, nowSec });
      if (!result.ok) throw unauthorized(HOW);
      // Stripe retries an event signed again at each attempt: the event's id, which the MAC covers, is what repeats.
      const event = signature.provider === "stripe" ? stripeEventId(raw) : undefined;
      return event !== undefined ? `hook:stripe:${event}` : `hook:t:${signature.t}:${await sha256Hex(raw)}`;
    }
    case "standard": {
      const { id, timestamp, signature: header } = signature;
      const result = await verifyStandardSignature({ id, timestamp, signature: header, body: raw, secrets: secret, toleranceSec: TOLERANCE_SEC, nowSec });
      if (!result.ok) throw unauthorized(HOW);
      // The spec's id: the same message keeps it across retries, and the MAC covers it.
      return `hook:sw:${id}`;
    }
    case "body":
      if (!equalConstantTime(await hmacHex(secret, raw), signature.mac)) throw unauthorized(HOW);
      return `hook:body:${await sha256Hex(raw)}`;
  }
}
