/**
 * Turns ioredis replies (requested as Buffers, so binary values survive) into
 * the JSON shapes of the Upstash REST protocol.
 *
 * With `Upstash-Encoding: base64` every bulk and status string is base64 at
 * every nesting level — including a status `OK` inside an array — because the
 * client decodes them all. Integers stay JSON numbers and nil stays null.
 * Without it, strings are sent as UTF-8 text.
 */
export type Reply = Buffer | string | number | null | Error | Reply[];

export type Json = string | number | null | Json[];

export function encodeReply(reply: Reply, base64: boolean): Json {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === "number") return reply;
  if (Array.isArray(reply)) return reply.map((r) => encodeReply(r, base64));
  // An error nested in an array (a Lua table holding error_reply) has no
  // dedicated JSON shape in the protocol; its text travels as a string.
  const bytes = reply instanceof Error ? Buffer.from(reply.message, "utf8") : typeof reply === "string" ? Buffer.from(reply, "utf8") : reply;
  return base64 ? bytes.toString("base64") : bytes.toString("utf8");
}

/** Redis takes bytes; JSON numbers and booleans arrive and are sent as text. */
export function toArgument(value: unknown): Buffer {
  if (typeof value === "string") return Buffer.from(value, "utf8");
  if (typeof value === "number" || typeof value === "boolean") return Buffer.from(String(value), "utf8");
  throw new TypeError(`arguments must be strings, numbers or booleans, got ${value === null ? "null" : typeof value}`);
}

/** Validates one command: a non-empty array whose first element names it. */
export function parseCommand(value: unknown): { name: string; args: Buffer[] } {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError('a command is a non-empty JSON array such as ["GET", "key"]');
  }
  const [name, ...rest] = value;
  if (typeof name !== "string" || name.length === 0) throw new TypeError("the command name must be a string");
  // Upper case also keeps ioredis' reply transformers (keyed by lower-case
  // names, e.g. hgetall → object) off: the protocol wants Redis' raw reply.
  return { name: name.toUpperCase(), args: rest.map(toArgument) };
}
