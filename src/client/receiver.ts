/** The delivery {@link Receiver}: verifying what delayline delivers, in either signature scheme. */
import type { SignatureScheme } from "../protocol/signature-schemes.js";
import { verifySignature, verifyStandardSignature } from "../protocol/verify.js";

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
