/** Signing deliveries in either scheme (see signature-schemes.ts for the formats). */
import { base64Of, encoder, type HmacKey, hexOf, utf8Key } from "./hmac.js";
import type { SignatureScheme } from "./signature-schemes.js";
import { standardKey } from "./whsec.js";

/** What {@link signatureHeaders} signs. */
export interface SignedDelivery {
  /** The job id: Standard Webhooks' `webhook-id`, the same at every attempt. */
  id: string;
  /** The raw body as sent ("" without one). */
  body: string;
  /** The delivery's time in unix seconds. Default now. */
  timestampSec?: number;
}

/** Signs one delivery: the headers {@link signatureHeaders} gives. */
export type DeliverySigner = (delivery: SignedDelivery) => Promise<Record<string, string>>;

/**
 * The `Delayline-Signature` header value for `body` at `timestampSec`: one
 * `v1=` per secret (the current one first, then those being rotated out).
 */
export async function signPayload(secret: string | readonly string[], body: string, timestampSec: number = Math.floor(Date.now() / 1000)): Promise<string> {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) return `t=${timestampSec}`;
  return (await deliverySigner("delayline", secrets)({ id: "", body, timestampSec }))["delayline-signature"]!;
}

/**
 * The `webhook-signature` header value of a `standard` delivery: `v1,<base64>`
 * per secret (the current one first), space-separated. `id` must not be
 * chosen by whoever could replay a delivery (the spec's rule against `.` in
 * it): delayline's is a job id.
 */
export async function signStandard(secret: string | readonly string[], id: string, timestampSec: number, body: string): Promise<string> {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) return "";
  return (await deliverySigner("standard", secrets)({ id, body, timestampSec }))["webhook-signature"]!;
}

/** The headers that sign a delivery in `scheme` with each of `secrets` (current first): none without a secret. */
export function signatureHeaders(scheme: SignatureScheme, secrets: readonly string[], delivery: SignedDelivery): Promise<Record<string, string>> {
  return deliverySigner(scheme, secrets)(delivery);
}

/**
 * {@link signatureHeaders} for the many deliveries of one topic's chunk:
 * the keys are imported once and held, so a delivery then costs one
 * encoding of what it signs and one MAC per secret.
 */
export function deliverySigner(scheme: SignatureScheme, secrets: readonly string[]): DeliverySigner {
  if (secrets.length === 0) return () => Promise.resolve({});
  const macs = heldMacs(secrets.map((s) => (scheme === "delayline" ? utf8Key(s) : standardKey(s))));
  if (scheme === "delayline") {
    return ({ body, timestampSec }) => {
      const t = timestampSec ?? Math.floor(Date.now() / 1000);
      return macs(`${t}.${body}`).then((list) => {
        let value = `t=${t}`;
        for (const mac of list) value += `,v1=${hexOf(new Uint8Array(mac))}`;
        return { "delayline-signature": value };
      });
    };
  }
  return ({ id, body, timestampSec }) => {
    const t = timestampSec ?? Math.floor(Date.now() / 1000);
    return macs(`${id}.${t}.${body}`).then((list) => ({
      "webhook-id": id,
      "webhook-timestamp": String(t),
      "webhook-signature": list.map((mac) => `v1,${base64Of(new Uint8Array(mac))}`).join(" "),
    }));
  };
}

/** The MACs of a text with each of the keys, which are held once imported. */
function heldMacs(imports: Promise<HmacKey>[]): (text: string) => Promise<ArrayBuffer[]> {
  let keys: HmacKey[] | undefined;
  const imported = Promise.all(imports).then((k) => {
    keys = k;
    return k;
  });
  // Awaited by the first deliveries; this only keeps a failure nobody waits for from counting as unhandled.
  imported.catch(() => {});
  // Promise chains rather than async functions: a chunk signs a thousand deliveries, and each layer is a promise more.
  return (text) => {
    const data = encoder.encode(text);
    const sign = (held: HmacKey[]) =>
      held.length === 1
        ? crypto.subtle.sign("HMAC", held[0]!, data).then((mac) => [mac])
        : Promise.all(held.map((key) => crypto.subtle.sign("HMAC", key, data)));
    return keys ? sign(keys) : imported.then(sign);
  };
}
