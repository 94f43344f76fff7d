import { TOPIC_NAME_MAX_LENGTH } from "../limits.js";

/**
 * The cursor of a topic listing (`GET /v1/topics`, `GET /v1/stats`): opaque
 * text (base64url) holding the last topic name of the page, never an offset,
 * so topics registered or deleted meanwhile never make a page repeat or skip one.
 */
export function encodeTopicCursor(lastTopic: string): string {
  return btoa(`t:${lastTopic}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const NAME = new RegExp(`^t:([A-Za-z0-9._-]{1,${TOPIC_NAME_MAX_LENGTH}})$`);

/** The topic name a cursor holds, or a reason it is not one this API gave. */
export function decodeTopicCursor(text: string): { after: string } | { refused: string } {
  let plain: string;
  try {
    plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return { refused: "not a cursor this API gave" };
  }
  const m = NAME.exec(plain);
  return m ? { after: m[1]! } : { refused: "not a cursor of a topic listing" };
}
