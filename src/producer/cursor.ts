import type { ListedState, ListPosition } from "../queue/queue.js";
import { topicOfJobId } from "../queue/ids.js";

/**
 * The listing cursor as the API hands it out: opaque text (base64url) that
 * holds the state it lists and the position where a page ended — the score
 * (due time or lease deadline) and id of its last job, never an offset.
 */
export function encodeCursor(state: ListedState, position: ListPosition): string {
  return btoa(`${state === "scheduled" ? "s" : "i"}:${Math.round(position.score)}:${position.id}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The position a cursor holds, or a reason it is not one this listing gave:
 * malformed, of another state, or of another topic's job.
 */
export function decodeCursor(text: string, state: ListedState, topic: string): ListPosition | { refused: string } {
  let plain: string;
  try {
    plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return { refused: "not a cursor this API gave" };
  }
  const m = /^([si]):(\d{1,16}):(.+)$/.exec(plain);
  if (!m) return { refused: "not a cursor this API gave" };
  if ((m[1] === "s") !== (state === "scheduled")) return { refused: `a cursor of the ${m[1] === "s" ? "scheduled" : "inflight"} listing, not of ${state}` };
  if (topicOfJobId(m[3]!) !== topic) return { refused: `a cursor of another topic's listing, not of ${topic}` };
  return { score: Number(m[2]), id: m[3]! };
}
