/**
 * Turns ioredis replies (Buffers when they are to be base64, so binary values
 * survive; text otherwise) into the JSON shapes of the Upstash REST protocol.
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
  if (typeof reply === "string" && !base64) return reply;
  // An error nested in an array (a Lua table holding error_reply) has no
  // dedicated JSON shape in the protocol; its text travels as a string.
  const bytes = reply instanceof Error ? Buffer.from(reply.message, "utf8") : typeof reply === "string" ? Buffer.from(reply, "utf8") : reply;
  return base64 ? bytes.toString("base64") : bytes.toString("utf8");
}

/**
 * An argument as Redis gets it: a JSON string as its UTF-8, a number or a
 * boolean as its text. Kept a string (ioredis writes it as UTF-8): ioredis
 * builds a command whose arguments are all strings as one string, where it
 * assembled Buffer arguments piece by piece into a Buffer — for a settle's
 * seven thousand arguments, most of the bridge's CPU.
 */
function toArgument(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new TypeError(`arguments must be strings, numbers or booleans, got ${value === null ? "null" : typeof value}`);
}

/** Validates one command: a non-empty array whose first element names it. */
export function parseCommand(value: unknown): { name: string; args: string[] } {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError('a command is a non-empty JSON array such as ["GET", "key"]');
  }
  const [name, ...rest] = value;
  if (typeof name !== "string" || name.length === 0) throw new TypeError("the command name must be a string");
  // Upper case also keeps ioredis' reply transformers (keyed by lower-case
  // names, e.g. hgetall → object) off: the protocol wants Redis' raw reply.
  return { name: name.toUpperCase(), args: rest.map(toArgument) };
}
