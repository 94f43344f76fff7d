/** Verifying deliveries in either scheme (see signature-schemes.ts for the formats). */
import { base64Of, equalConstantTime, hmac, hmacHex, prefixed } from "./hmac.js";
import { standardKey } from "./whsec.js";

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

/** Whether timestamp `t` (unix seconds) is within the tolerance of now. */
function fresh(t: number, options: { toleranceSec?: number; nowSec?: number }): boolean {
  const now = options.nowSec ?? Math.floor(Date.now() / 1000);
  return Math.abs(now - t) <= (options.toleranceSec ?? 300);
}

/** Whether any of the MACs made with each secret is one of those sent. */
async function anyMatches(secrets: string | string[], sent: string[], mac: (secret: string) => Promise<string>): Promise<VerifyResult> {
  let ok = false;
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const made = await mac(secret);
    for (const s of sent) if (equalConstantTime(made, s)) ok = true;
  }
  return ok ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** Checks a delivery's signature against any of the secrets, within the timestamp tolerance. */
export async function verifySignature(options: VerifyOptions): Promise<VerifyResult> {
  if (!options.header) return { ok: false, reason: "missing" };
  const parsed = parseSignature(options.header);
  if (!parsed) return { ok: false, reason: "malformed" };
  if (!fresh(parsed.t, options)) return { ok: false, reason: "expired" };
  const text = prefixed(`${parsed.t}.`, options.body);
  return anyMatches(options.secrets, parsed.v1, (secret) => hmacHex(secret, text));
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
  if (!fresh(t, options)) return { ok: false, reason: "expired" };
  const text = prefixed(`${options.id}.${t}.`, options.body);
  return anyMatches(options.secrets, sent, async (secret) => base64Of(await hmac(standardKey(secret), text)));
}
