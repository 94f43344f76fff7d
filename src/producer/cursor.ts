import type { ListPosition } from "../queue/queue.js";
import { topicOfJobId } from "../queue/ids.js";

/** What a cursor walks: the scheduled jobs, the jobs in flight, or the dead letters of a topic. */
export type CursorKind = "scheduled" | "inflight" | "dead";

const LETTER: Record<CursorKind, string> = { scheduled: "s", inflight: "i", dead: "d" };
const KIND: Record<string, CursorKind> = { s: "scheduled", i: "inflight", d: "dead" };
// A walk by label (src/queue/labels.ts) goes by its index's order, not the set's: its cursor's letter is in capitals.
const byLabelOf = (letter: string) => letter !== letter.toLowerCase();

/**
 * The cursor as the API hands it out: opaque text (base64url) that holds
 * what it walks and the position where a page or a bulk call ended — the
 * score (due time, lease deadline or failed time) and id of its last job,
 * never an offset; or, for a walk by label, the last job it passed.
 */
export function encodeCursor(kind: CursorKind, position: ListPosition, byLabel = false): string {
  const letter = byLabel ? LETTER[kind].toUpperCase() : LETTER[kind];
  return btoa(`${letter}:${Math.round(position.score)}:${position.id}`)
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/**
 * The position a cursor holds, or a reason it is not one this walk gave:
 * malformed, of another kind, of a walk by label or not, or of another topic's job.
 */
export function decodeCursor(text: string, kind: CursorKind, topic: string, byLabel = false): ListPosition | { refused: string } {
  let plain: string;
  try {
    plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return { refused: "not a cursor this API gave" };
  }
  const m = /^([sidSID]):(\d{1,16}):(.+)$/.exec(plain);
  if (!m) return { refused: "not a cursor this API gave" };
  const letter = m[1]!;
  if (KIND[letter.toLowerCase()] !== kind) return { refused: `a cursor of ${KIND[letter.toLowerCase()]} jobs, not of ${kind} ones` };
  if (byLabelOf(letter) !== byLabel)
    return { refused: byLabel ? "a cursor of a walk without label, not by label" : "a cursor of a walk by label: give the label again" };
  if (topicOfJobId(m[3]!) !== topic) return { refused: `a cursor of another topic's jobs, not of ${topic}` };
  return { score: Number(m[2]), id: m[3]! };
}
