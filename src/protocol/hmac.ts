/**
 * HMAC-SHA256 over WebCrypto, the one primitive both signature schemes
 * build on, with the encodings their headers use (hex, base64).
 */
export const encoder = new TextEncoder();
// A copy: encode's bytes may be typed as over a SharedArrayBuffer, which importKey refuses.
export const utf8 = (text: string) => new Uint8Array(encoder.encode(text));

// The type by way of importKey: Node's types name no global CryptoKey.
export type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/**
 * Imported HMAC keys by scheme and secret. A sender signs every delivery
 * with the same few secrets, and importing the key cost more than the MAC;
 * a deployment with many topic secrets is bounded by dropping the oldest.
 */
const keys = new Map<string, Promise<HmacKey>>();
const KEY_CACHE_SIZE = 256;

/** The HMAC key cached under `cacheKey`, imported from `bytes()` the first time. */
export function hmacKey(cacheKey: string, bytes: () => Uint8Array<ArrayBuffer>): Promise<HmacKey> {
  let key = keys.get(cacheKey);
  if (!key) {
    key = crypto.subtle.importKey("raw", bytes(), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    // A failed import is not kept: the next call tries again.
    key.catch(() => keys.delete(cacheKey));
    if (keys.size >= KEY_CACHE_SIZE) keys.delete(keys.keys().next().value!);
    keys.set(cacheKey, key);
  }
  return key;
}

/** The key a `delayline` signature uses: the secret's UTF-8 bytes. */
export function utf8Key(secret: string): Promise<HmacKey> {
  return hmacKey(`utf8:${secret}`, () => utf8(secret));
}

/** HMAC-SHA256 of `message` (text or raw bytes). */
export async function hmac(key: Promise<HmacKey>, message: string | Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const data = typeof message === "string" ? encoder.encode(message) : message;
  return new Uint8Array(await crypto.subtle.sign("HMAC", await key, data));
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** Lower-case hex of `bytes`. */
export function hexOf(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i++) text += HEX[bytes[i]!]!;
  return text;
}

export const base64Of = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** Hex HMAC-SHA256 of `message` (text or raw bytes) with `secret`'s UTF-8 bytes. */
export async function hmacHex(secret: string, message: string | Uint8Array<ArrayBuffer>): Promise<string> {
  return hexOf(await hmac(utf8Key(secret), message));
}

/** Compares two strings without an early exit on the first difference. */
export function equalConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** `prefix` then `body` as one run of bytes: what a signature covers when the body came as bytes. */
export function prefixed(prefix: string, body: string | Uint8Array<ArrayBuffer>): string | Uint8Array<ArrayBuffer> {
  if (typeof body === "string") return `${prefix}${body}`;
  const head = encoder.encode(prefix);
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}
