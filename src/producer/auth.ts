/**
 * Whether `presented` equals one of `tokens`, in a time that says nothing
 * about them: every token is compared with every character of the presented
 * one, without an early exit, so the time depends only on the presented
 * token's length (the caller's own) and on how many tokens there are — not
 * on matching prefixes, the tokens' lengths or which one matched. It used to
 * compare SHA-256 digests for the same property; workerd's async digest cost
 * about 5 % of the Worker's CPU per request.
 */
export function tokenMatches(presented: string, tokens: string[]): boolean {
  let ok = false;
  for (const token of tokens) {
    // A token is never empty (settings require 8 or more characters), so the modulo is defined.
    let diff = presented.length ^ token.length;
    for (let i = 0; i < presented.length; i++) diff |= presented.charCodeAt(i) ^ token.charCodeAt(i % token.length);
    if (diff === 0) ok = true;
  }
  return ok;
}

/** The bearer token of an `Authorization` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header ?? "");
  return m ? m[1]! : null;
}
