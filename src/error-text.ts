import { ATTEMPT_ERROR_BYTES } from "./limits.js";

/**
 * `text` cut to the error text an attempt keeps: at most
 * {@link ATTEMPT_ERROR_BYTES} bytes once encoded as UTF-8 (what Redis stores,
 * and what a settle's request size is reckoned in), never inside a
 * character. A surrogate pair stays whole or goes whole, so a cut makes no
 * lone surrogate and the stored text is valid UTF-8. Text that fits comes
 * back as it is. The one cut of error text: a handler's error, an error
 * response's body and each outcome a settle stores go through it.
 */
export function cutErrorText(text: string): string {
  // A UTF-16 unit is one to three bytes of UTF-8 (a pair, two units, is four).
  if (text.length * 3 <= ATTEMPT_ERROR_BYTES) return text;
  // So the first ATTEMPT_ERROR_BYTES units hold every character that can fit...
  let head = text.slice(0, ATTEMPT_ERROR_BYTES);
  // ...but for the first half of a pair cut in two, which alone would be encoded as U+FFFD.
  if (head.length < text.length && isHighSurrogate(head.charCodeAt(head.length - 1))) head = head.slice(0, -1);
  const encoded = new TextEncoder().encode(head);
  if (encoded.length <= ATTEMPT_ERROR_BYTES) return head;
  let end = ATTEMPT_ERROR_BYTES;
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(encoded.subarray(0, end));
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}
