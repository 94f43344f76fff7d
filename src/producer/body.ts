import type { MiddlewareHandler } from "hono";
import { MAX_JSON_DEPTH } from "../limits.js";
import { problem } from "./problem.js";

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Nesting depth of a parsed JSON value, stopping as soon as it passes `limit`. */
export function depthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (d > limit) return true;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return false;
}

const encoder = new TextEncoder();
// JSON text escapes control characters, so printable ASCII is all the ASCII it can hold but DEL.
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Bytes of `value`'s JSON in UTF-8 (a payload's size, as its limit counts it): the text's length when it is ASCII, as most are, without encoding it. */
export function serializedBytes(value: unknown): number {
  const json = JSON.stringify(value);
  return PRINTABLE_ASCII.test(json) ? json.length : encoder.encode(json).length;
}

/** Reads a body as strict UTF-8 (invalid bytes are a 400, never replaced). */
export async function readUtf8(req: Request): Promise<string | Response> {
  try {
    return strictUtf8.decode(await req.arrayBuffer());
  } catch {
    return problem(400, "the body is not valid UTF-8");
  }
}

/**
 * For routes that take JSON: a body must say it is JSON (415), be valid
 * UTF-8 and JSON (400) and nest at most {@link MAX_JSON_DEPTH} levels (400). The checked text is
 * handed on to the route's validator. Runs after the body-size limit.
 */
export const jsonBody: MiddlewareHandler = async (c, next) => {
  if (!["POST", "PUT", "PATCH"].includes(c.req.method)) return next();
  // A request without a body reads as "" (no body, below); asking for
  // `request.body` first would make workerd create a stream object to compare with null.
  const text = await readUtf8(c.req.raw);
  if (text instanceof Response) return text;
  // Hono's validator reads the body through this cache.
  (c.req as unknown as { bodyCache: Record<string, Promise<unknown>> }).bodyCache.text = Promise.resolve(text);
  // An empty body is no body: routes whose fields all have defaults accept it.
  if (text === "") return next();
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
  if (!JSON_TYPE.test(type)) return problem(415, `send application/json, not ${type ? JSON.stringify(type) : "no Content-Type"}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return problem(400, "the body is not valid JSON");
  }
  if (depthExceeds(value, MAX_JSON_DEPTH)) return problem(400, `JSON nested deeper than ${MAX_JSON_DEPTH} levels is refused`);
  return next();
};
