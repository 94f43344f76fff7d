/**
 * Delivery signatures, in one of two schemes (a topic's `signatureScheme`):
 *
 * - `delayline` (the default): `Delayline-Signature: t=<unix seconds>,v1=<hex>`,
 *   where hex is HMAC-SHA256 of `"<t>.<raw body>"` keyed with the secret's
 *   UTF-8 bytes. Stripe's format, so Stripe's verifiers accept it too.
 *   Webhook ingest accepts the same format in `X-Delayline-Signature`.
 * - `standard`: Standard Webhooks — `webhook-id`, `webhook-timestamp` and
 *   `webhook-signature: v1,<base64>`, the HMAC-SHA256 of
 *   `"<id>.<timestamp>.<raw body>"` keyed with the bytes of a
 *   `whsec_<base64>` secret.
 *
 * While a secret is being rotated a delivery carries one signature per secret
 * (`v1=` entries, or space-separated `v1,` entries), so a receiver holding
 * any one of them verifies it. Signing (`sign.ts`) and verifying
 * (`verify.ts`) use WebCrypto only, so they run in Workers, Node ≥ 20, Deno,
 * Bun and browsers.
 */

/** How deliveries are signed; see the module's comment. */
export type SignatureScheme = "delayline" | "standard";

export const SIGNATURE_SCHEMES = ["delayline", "standard"] as const satisfies readonly SignatureScheme[];
