const encoder = new TextEncoder();

async function digest(s: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(s)));
}

/** Compares two equal-length byte strings without an early exit. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * Whether `presented` equals one of `tokens`. Digests are compared, so the
 * time taken says nothing about lengths or matching prefixes; every token is
 * checked, so it says nothing about which one matched.
 */
export async function tokenMatches(presented: string, tokens: string[]): Promise<boolean> {
  const p = await digest(presented);
  let ok = false;
  for (const t of tokens) if (constantTimeEqual(p, await tokenDigest(t))) ok = true;
  return ok;
}

// The deployment's own tokens are hashed once per isolate, not on every
// request. Bytes are kept, not promises: nothing made in one request is awaited in another.
const tokenDigests = new Map<string, Uint8Array>();

async function tokenDigest(token: string): Promise<Uint8Array> {
  let d = tokenDigests.get(token);
  if (!d) {
    d = await digest(token);
    // Settings change only by redeploying, which starts new isolates: a few entries at most.
    if (tokenDigests.size >= 16) tokenDigests.clear();
    tokenDigests.set(token, d);
  }
  return d;
}

/** The bearer token of an `Authorization` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header ?? "");
  return m ? m[1]! : null;
}
