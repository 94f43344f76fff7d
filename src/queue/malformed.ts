// The one way a decoder of a script's reply (replies.ts, flow-replies.ts) says the reply broke its contract.

/** A reply that breaks its script's contract: a bug, as a failed schema is. */
export function malformed(script: string, what: string, value: unknown): never {
  throw new TypeError(`${script} reply: ${what} is ${JSON.stringify(value) ?? String(value)}`);
}
