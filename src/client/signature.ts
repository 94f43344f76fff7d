/**
 * delayline's delivery signature: `Delayline-Signature: t=<unix seconds>,v1=<hex>`,
 * where hex is HMAC-SHA256 of `"<t>.<raw body>"` with the signing secret.
 * Webhook ingest accepts the same format in `X-Delayline-Signature`.
 * WebCrypto only, so it runs in Workers, Node ≥ 20, Deno, Bun and browsers.
 */
const encoder = new TextEncoder();

/** Hex HMAC-SHA256 of `message` (text or raw bytes) with `secret`. */
export async function hmacHex(secret: string, message: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const data = typeof message === "string" ? encoder.encode(message) : message;
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, data));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Compares two strings without an early exit on the first difference. */
export function equalConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The `Delayline-Signature` header value for `body` at `timestampSec`. */
export async function signPayload(secret: string, body: string, timestampSec: number = Math.floor(Date.now() / 1000)): Promise<string> {
  return `t=${timestampSec},v1=${await hmacHex(secret, `${timestampSec}.${body}`)}`;
}

/** The timestamp and MAC of a `t=<unix seconds>,v1=<hex>` header, or null when it is not one. */
export function parseSignature(header: string): { t: number; v1: string } | null {
  const parts = Object.fromEntries(
    header.split(",").map((p) => {
      const i = p.indexOf("=");
      return [p.slice(0, i).trim(), p.slice(i + 1).trim()];
    }),
  );
  const t = Number(parts.t);
  const v1 = parts.v1 ?? "";
  return Number.isInteger(t) && /^[0-9a-f]{64}$/.test(v1) ? { t, v1 } : null;
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
  for (const secret of secrets) if (equalConstantTime(await hmacHex(secret, text), v1)) ok = true;
  return ok ? { ok: true } : { ok: false, reason: "mismatch" };
}

/**
 * Verifies deliveries in a webhook receiver, with the current and the next
 * signing secret so a rotation never rejects a valid delivery.
 *
 * ```ts
 * const receiver = new Receiver({ currentSecret: env.SIGNING_SECRET });
 * if (!(await receiver.verify(request.headers.get("delayline-signature"), await request.text()))) return new Response(null, { status: 401 });
 * ```
 */
export class Receiver {
  constructor(private readonly options: { currentSecret: string; nextSecret?: string; toleranceSec?: number }) {}

  async verify(header: string | null | undefined, body: string): Promise<boolean> {
    const secrets = [this.options.currentSecret, ...(this.options.nextSecret ? [this.options.nextSecret] : [])];
    const result = await verifySignature({
      header,
      body,
      secrets,
      ...(this.options.toleranceSec !== undefined ? { toleranceSec: this.options.toleranceSec } : {}),
    });
    return result.ok;
  }
}
