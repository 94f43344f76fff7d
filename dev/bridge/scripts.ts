import { createHash } from "node:crypto";

/**
 * Upstash runs a script under its database-wide lock unless the script's
 * first line is `#!lua flags=allow-key-locking` (then it locks only its
 * KEYS). Redis 7.0 refuses that flag ("ERR Unexpected flag in script
 * shebang: allow-key-locking"), so the bridge takes it out before Redis sees
 * the script, and remembers which digest the client computed for the text it
 * sent (the flagged one, as @upstash/redis and delayline's build compute it)
 * so that EVALSHA and SCRIPT EXISTS of that digest find the script Redis holds.
 */
const FLAG = "allow-key-locking";

const sha1 = (s: string) => createHash("sha1").update(s).digest("hex");

/**
 * The script without the flag: a shebang whose only flag it was becomes an
 * empty line (so Redis' error line numbers stay those of the text sent);
 * other flags stay. `undefined` when there is nothing to take out.
 */
export function stripKeyLocking(script: string): string | undefined {
  if (!script.startsWith("#!")) return undefined;
  const end = script.indexOf("\n");
  const line = end === -1 ? script : script.slice(0, end);
  const rest = end === -1 ? "" : script.slice(end);
  const words = line.split(/\s+/).filter(Boolean);
  if (words[0] !== "#!lua") return undefined;
  let found = false;
  const kept: string[] = [];
  for (const word of words.slice(1)) {
    if (!word.startsWith("flags=")) {
      kept.push(word);
      continue;
    }
    const flags = word.slice("flags=".length).split(",");
    const others = flags.filter((f) => f !== FLAG);
    if (others.length !== flags.length) found = true;
    if (others.length > 0) kept.push(`flags=${others.join(",")}`);
  }
  if (!found) return undefined;
  return (kept.length > 0 ? `#!lua ${kept.join(" ")}` : "") + rest;
}

/** Digests of flagged scripts the bridge has seen, to the digests of what Redis holds. */
export class ScriptDigests {
  private readonly toStripped = new Map<string, string>();

  /**
   * A command as Redis gets it: EVAL and SCRIPT LOAD without the flag,
   * EVALSHA and SCRIPT EXISTS with the digests Redis knows, and how to turn
   * Redis' reply back (SCRIPT LOAD answers the digest of the text sent).
   */
  rewrite(name: string, args: string[]): { args: string[]; reply?: (r: unknown) => unknown } {
    if (name === "EVAL" || name === "EVAL_RO") {
      const stripped = args[0] === undefined ? undefined : stripKeyLocking(args[0]);
      if (stripped === undefined) return { args };
      this.toStripped.set(sha1(args[0]!), sha1(stripped));
      return { args: [stripped, ...args.slice(1)] };
    }
    if (name === "EVALSHA" || name === "EVALSHA_RO") {
      const mapped = args[0] === undefined ? undefined : this.toStripped.get(args[0].toLowerCase());
      return mapped ? { args: [mapped, ...args.slice(1)] } : { args };
    }
    if (name !== "SCRIPT") return { args };
    const sub = args[0]?.toUpperCase();
    if (sub === "LOAD" && args[1] !== undefined) {
      const stripped = stripKeyLocking(args[1]);
      if (stripped === undefined) return { args };
      const original = sha1(args[1]);
      this.toStripped.set(original, sha1(stripped));
      return { args: [args[0]!, stripped], reply: (r) => (Buffer.isBuffer(r) ? Buffer.from(original) : typeof r === "string" ? original : r) };
    }
    if (sub === "EXISTS") return { args: [args[0]!, ...args.slice(1).map((s) => this.toStripped.get(s.toLowerCase()) ?? s)] };
    return { args };
  }
}
