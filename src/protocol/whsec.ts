/** Standard Webhooks secrets: `whsec_` then the base64 of the key's bytes. */
import { type HmacKey, hmacKey, utf8 } from "./hmac.js";

const WHSEC = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/**
 * Why `secret` is not a Standard Webhooks secret — `whsec_` then the
 * base64 (padded) of 24 to 64 random bytes, the spec's bounds — or null
 * when it is one.
 */
export function whsecProblem(secret: string): string | null {
  const m = WHSEC.exec(secret);
  if (!m) return "a Standard Webhooks secret: whsec_ followed by base64 (A–Z a–z 0–9 + /, padded with =)";
  const bytes = atob(m[1]!).length;
  return bytes < 24 || bytes > 64 ? `whsec_ followed by the base64 of 24 to 64 bytes, got ${bytes}` : null;
}

/**
 * The HMAC key a `standard` signature uses: the base64-decoded bytes after
 * `whsec_`. A secret of another form (a deployment's SIGNING_SECRET from
 * before the scheme changed) is used as its UTF-8 bytes, which is what
 * standardwebhooks calls `format: "raw"`, rather than leave deliveries unsigned.
 */
export function standardKey(secret: string): Promise<HmacKey> {
  return hmacKey(`standard:${secret}`, () => {
    const m = WHSEC.exec(secret);
    if (!m) return utf8(secret);
    return Uint8Array.from(atob(m[1]!), (c) => c.charCodeAt(0));
  });
}
