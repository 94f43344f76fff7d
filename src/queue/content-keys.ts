import type { EnqueueInput } from "./views.js";

// Content dedup (a topic's contentDedupMs, enqueue.lua): a job without an
// idempotency key gets one made of what it delivers — its topic, its target
// (URL, method, headers as given), its webhook headers and its payload as
// stored, which is what a delivery sends — so byte-identical jobs within
// the window are one. When it is due, its attempts and its flow key do not
// count: a job sent twice with another delay is still the same delivery.

const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");

/** The SHA-256 (hex) of what the job delivers: its content key's name within its topic. */
export async function contentHash(input: EnqueueInput): Promise<string> {
  // A JSON array keeps the parts apart: no payload can pass for another part.
  const text = JSON.stringify([input.topic, input.target ?? null, input.webhookHeaders ?? null, input.payload ?? null]);
  return hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}
