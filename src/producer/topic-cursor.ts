import { TOPIC_REF_PATTERN } from "../queue/ids.js";

/**
 * The cursor of a topic listing (`GET /v1/topics`, `GET /v1/stats`): opaque
 * text (base64url) holding the last topic name of the page, never an offset,
 * so topics registered or deleted meanwhile never make a page repeat or skip one.
 */
export function encodeTopicCursor(lastTopic: string): string {
  return btoa(`t:${lastTopic}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The topic name a cursor holds, or a reason it is not one this API gave. */
export function decodeTopicCursor(text: string): { after: string } | { refused: string } {
  let plain: string;
  try {
    plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return { refused: "not a cursor this API gave" };
  }
  const name = plain.startsWith("t:") ? plain.slice(2) : "";
  return TOPIC_REF_PATTERN.test(name) ? { after: name } : { refused: "not a cursor of a topic listing" };
}
