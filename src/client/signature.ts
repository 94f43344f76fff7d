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
 * any one of them verifies it.
 * WebCrypto only, so it runs in Workers, Node ≥ 20, Deno, Bun and browsers.
 */
const encoder = new TextEncoder();
// A copy: encode's bytes may be typed as over a SharedArrayBuffer, which importKey refuses.
const utf8 = (text: string) => new Uint8Array(encoder.encode(text));

/** How deliveries are signed; see the module's comment. */
export type SignatureScheme = "delayline" | "standard";

export const SIGNATURE_SCHEMES = ["delayline", "standard"] as const satisfies readonly SignatureScheme[];

/**
 * Imported HMAC keys by scheme and secret. A sender signs every delivery
 * with the same few secrets, and importing the key cost more than the MAC;
 * a deployment with many topic secrets is bounded by dropping the oldest.
 */
// The type by way of importKey: Node's types name no global CryptoKey.
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;
const keys = new Map<string, Promise<HmacKey>>();
const KEY_CACHE_SIZE = 256;

function hmacKey(cacheKey: string, bytes: () => Uint8Array<ArrayBuffer>): Promise<HmacKey> {
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

async function hmac(key: Promise<HmacKey>, message: string | Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const data = typeof message === "string" ? encoder.encode(message) : message;
  return new Uint8Array(await crypto.subtle.sign("HMAC", await key, data));
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** Hex HMAC-SHA256 of `message` (text or raw bytes) with `secret`. */
export async function hmacHex(secret: string, message: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const mac = await hmac(
    hmacKey(`utf8:${secret}`, () => utf8(secret)),
    message,
  );
  let hex = "";
  for (const b of mac) hex += HEX[b]!;
  return hex;
}

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
function standardKey(secret: string): Promise<HmacKey> {
  return hmacKey(`standard:${secret}`, () => {
    const m = WHSEC.exec(secret);
    if (!m) return utf8(secret);
    return Uint8Array.from(atob(m[1]!), (c) => c.charCodeAt(0));
  });
}

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** Compares two strings without an early exit on the first difference. */
export function equalConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

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
 * The timestamp and MACs of a `t=<unix seconds>,v1=<hex>[,v1=<hex>…]` header,
 * or null when it is not one. Entries of other schemes (Stripe's `v0=`) are skipped.
 */
export function parseSignature(header: string): { t: number; v1: string[] } | null {
  let t = NaN;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const i = part.indexOf("=");
    const [name, value] = [part.slice(0, i).trim(), part.slice(i + 1).trim()];
    if (name === "t") t = Number(value);
    else if (name === "v1") {
      if (!/^[0-9a-f]{64}$/.test(value)) return null;
      v1.push(value);
    }
  }
  return Number.isInteger(t) && v1.length > 0 && v1.length <= 10 ? { t, v1 } : null;
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

/** What {@link signatureHeaders} signs. */
export interface SignedDelivery {
  /** The job id: Standard Webhooks' `webhook-id`, the same at every attempt. */
  id: string;
  /** The raw body as sent ("" without one). */
  body: string;
  /** The delivery's time in unix seconds. Default now. */
  timestampSec?: number;
}

/** The headers that sign a delivery in `scheme` with each of `secrets` (current first): none without a secret. */
export function signatureHeaders(scheme: SignatureScheme, secrets: readonly string[], delivery: SignedDelivery): Promise<Record<string, string>> {
  return deliverySigner(scheme, secrets)(delivery);
}

/** Signs one delivery: the headers {@link signatureHeaders} gives. */
export type DeliverySigner = (delivery: SignedDelivery) => Promise<Record<string, string>>;

const hex = (mac: ArrayBuffer) => {
  const bytes = new Uint8Array(mac);
  let text = "";
  for (let i = 0; i < bytes.length; i++) text += HEX[bytes[i]!]!;
  return text;
};

/**
 * {@link signatureHeaders} for the many deliveries of one topic's chunk:
 * the keys are imported once and held, so a delivery then costs one
 * encoding of what it signs and one MAC per secret.
 */
export function deliverySigner(scheme: SignatureScheme, secrets: readonly string[]): DeliverySigner {
  if (secrets.length === 0) return () => Promise.resolve({});
  const imports = secrets.map((s) => (scheme === "delayline" ? hmacKey(`utf8:${s}`, () => utf8(s)) : standardKey(s)));
  let keys: HmacKey[] | undefined;
  const imported = Promise.all(imports).then((k) => {
    keys = k;
    return k;
  });
  // Awaited by the first deliveries; this only keeps a failure nobody waits for from counting as unhandled.
  imported.catch(() => {});
  // Promise chains rather than async functions: a chunk signs a thousand deliveries, and each layer is a promise more.
  const macs = (text: string): Promise<ArrayBuffer[]> => {
    const data = encoder.encode(text);
    const sign = (held: HmacKey[]) =>
      held.length === 1
        ? crypto.subtle.sign("HMAC", held[0]!, data).then((mac) => [mac])
        : Promise.all(held.map((key) => crypto.subtle.sign("HMAC", key, data)));
    return keys ? sign(keys) : imported.then(sign);
  };
  if (scheme === "delayline") {
    return ({ body, timestampSec }) => {
      const t = timestampSec ?? Math.floor(Date.now() / 1000);
      return macs(`${t}.${body}`).then((list) => {
        let value = `t=${t}`;
        for (const mac of list) value += `,v1=${hex(mac)}`;
        return { "delayline-signature": value };
      });
    };
  }
  return ({ id, body, timestampSec }) => {
    const t = timestampSec ?? Math.floor(Date.now() / 1000);
    return macs(`${id}.${t}.${body}`).then((list) => ({
      "webhook-id": id,
      "webhook-timestamp": String(t),
      "webhook-signature": list.map((mac) => `v1,${base64(new Uint8Array(mac))}`).join(" "),
    }));
  };
}

/** `"<t>.<body>"`, the text a timestamped signature covers, as bytes when the body is bytes. */
function signedText(t: number, body: string | Uint8Array<ArrayBuffer>): string | Uint8Array<ArrayBuffer> {
  if (typeof body === "string") return `${t}.${body}`;
  const prefix = encoder.encode(`${t}.`);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix);
  out.set(body, prefix.length);
  return out;
}

/** Options of {@link verifySignature}. */
export interface VerifyOptions {
  /** The `Delayline-Signature` header as received. */
  header: string | null | undefined;
  /** The raw request body, exactly as received (before any JSON parsing): text, or its bytes. */
  body: string | Uint8Array<ArrayBuffer>;
  /** The current secret, or [current, next] while rotating. */
  secrets: string | string[];
  /** Largest accepted age (either way) of the timestamp. Default 300 s. */
  toleranceSec?: number;
  /** The clock, in seconds. Default now. */
  nowSec?: number;
}

export type VerifyResult = { ok: true } | { ok: false; reason: "missing" | "malformed" | "expired" | "mismatch" };

/** Checks a delivery's signature against any of the secrets, within the timestamp tolerance. */
export async function verifySignature(options: VerifyOptions): Promise<VerifyResult> {
  if (!options.header) return { ok: false, reason: "missing" };
  const parsed = parseSignature(options.header);
  if (!parsed) return { ok: false, reason: "malformed" };
  const { t, v1 } = parsed;
  const now = options.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (options.toleranceSec ?? 300)) return { ok: false, reason: "expired" };
  const secrets = Array.isArray(options.secrets) ? options.secrets : [options.secrets];
  const text = signedText(t, options.body);
  let ok = false;
  for (const secret of secrets) {
    const mac = await hmacHex(secret, text);
    for (const sent of v1) if (equalConstantTime(mac, sent)) ok = true;
  }
  return ok ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** Options of {@link verifyStandardSignature}. */
export interface StandardVerifyOptions {
  /** The `webhook-id`, `webhook-timestamp` and `webhook-signature` headers as received. */
  id: string | null | undefined;
  timestamp: string | null | undefined;
  signature: string | null | undefined;
  /** The raw request body, exactly as received: text, or its bytes. */
  body: string | Uint8Array<ArrayBuffer>;
  /** The `whsec_…` secret, or several while rotating. */
  secrets: string | string[];
  /** Largest accepted age (either way) of the timestamp. Default 300 s. */
  toleranceSec?: number;
  /** The clock, in seconds. Default now. */
  nowSec?: number;
}

/** Checks a `standard` delivery's `webhook-signature` against any of the secrets, within the timestamp tolerance. */
export async function verifyStandardSignature(options: StandardVerifyOptions): Promise<VerifyResult> {
  if (!options.id || !options.timestamp || !options.signature) return { ok: false, reason: "missing" };
  if (!/^\d{1,12}$/.test(options.timestamp)) return { ok: false, reason: "malformed" };
  const sent = options.signature
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => s.slice(3));
  if (sent.length === 0) return { ok: false, reason: "malformed" };
  const t = Number(options.timestamp);
  const now = options.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (options.toleranceSec ?? 300)) return { ok: false, reason: "expired" };
  const body = typeof options.body === "string" ? encoder.encode(options.body) : options.body;
  const prefix = encoder.encode(`${options.id}.${t}.`);
  const text = new Uint8Array(prefix.length + body.length);
  text.set(prefix);
  text.set(body, prefix.length);
  const secrets = Array.isArray(options.secrets) ? options.secrets : [options.secrets];
  let ok = false;
  for (const secret of secrets) {
    const mac = base64(await hmac(standardKey(secret), text));
    for (const s of sent) if (equalConstantTime(mac, s)) ok = true;
  }
  return ok ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** Options of a {@link Receiver}. */
export interface ReceiverOptions {
  currentSecret: string;
  /** While rotating, the secret the sender moves to (or from). */
  nextSecret?: string;
  /** Largest accepted age (either way) of a delivery's timestamp. Default 300 s. */
  toleranceSec?: number;
  /**
   * The scheme {@link Receiver.verifyRequest} accepts. Default: the one the
   * request carries (`webhook-signature` means standard); either needs a MAC
   * with one of the secrets.
   */
  scheme?: SignatureScheme;
}

/**
 * Verifies deliveries in a webhook receiver, with the current and the next
 * signing secret so a rotation never rejects a valid delivery.
 *
 * ```ts
 * const receiver = new Receiver({ currentSecret: env.SIGNING_SECRET });
 * const body = await request.text();
 * if (!(await receiver.verifyRequest(request.headers, body))) return new Response(null, { status: 401 });
 * ```
 */
export class Receiver {
  constructor(private readonly options: ReceiverOptions) {}

  private get secrets(): string[] {
    return [this.options.currentSecret, ...(this.options.nextSecret ? [this.options.nextSecret] : [])];
  }

  private get tolerance(): { toleranceSec?: number } {
    return this.options.toleranceSec !== undefined ? { toleranceSec: this.options.toleranceSec } : {};
  }

  /** Checks a `delayline`-scheme delivery's `Delayline-Signature` header. */
  async verify(header: string | null | undefined, body: string): Promise<boolean> {
    return (await verifySignature({ header, body, secrets: this.secrets, ...this.tolerance })).ok;
  }

  /** Checks a delivery of either scheme by its headers (a `Headers`, or an object with lower-case names as Node gives them). */
  async verifyRequest(headers: Headers | Record<string, string | string[] | undefined>, body: string | Uint8Array<ArrayBuffer>): Promise<boolean> {
    const get = (name: string): string | undefined => {
      if (headers instanceof Headers) return headers.get(name) ?? undefined;
      const v = headers[name];
      return Array.isArray(v) ? v.join(", ") : v;
    };
    const scheme = this.options.scheme ?? (get("webhook-signature") !== undefined ? "standard" : "delayline");
    const result =
      scheme === "standard"
        ? await verifyStandardSignature({
            id: get("webhook-id"),
            timestamp: get("webhook-timestamp"),
            signature: get("webhook-signature"),
            body,
            secrets: this.secrets,
            ...this.tolerance,
          })
        : await verifySignature({ header: get("delayline-signature"), body, secrets: this.secrets, ...this.tolerance });
    return result.ok;
  }
}
