/**
 * The one cut of error text (src/error-text.ts): at most ATTEMPT_ERROR_BYTES
 * bytes of UTF-8, never inside a character, the longest such start of the
 * text.
 */
import { expect, it } from "vitest";
import { cutErrorText } from "../../src/error-text.js";
import { ATTEMPT_ERROR_BYTES } from "../../src/limits.js";

const bytes = (text: string) => new TextEncoder().encode(text).length;
/** No surrogate without its other half. */
const wellFormed = (text: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

it("keeps text that fits as it is, ASCII up to the limit included", () => {
  for (const text of ["", "HTTP 500", "é".repeat(512), "x".repeat(ATTEMPT_ERROR_BYTES)]) expect(cutErrorText(text)).toBe(text);
});

it.each([
  ["ASCII", "x", 1],
  ["two-byte characters", "é", 2],
  ["three-byte characters", "日", 3],
  ["surrogate pairs (four bytes, two UTF-16 units)", "🎉", 4],
])("cuts %s to the longest start that fits, between characters, at every offset", (_, char, size) => {
  // Offsets 0–3 put the limit at each place inside a character, and the UTF-16 cut at either half of a pair.
  for (let offset = 0; offset < 4; offset++) {
    const text = "a".repeat(offset) + char.repeat(2 * ATTEMPT_ERROR_BYTES);
    const cut = cutErrorText(text);
    expect(text.startsWith(cut)).toBe(true);
    expect(wellFormed(cut)).toBe(true);
    expect(bytes(cut)).toBeLessThanOrEqual(ATTEMPT_ERROR_BYTES);
    // The next character would not fit.
    expect(bytes(cut) + size).toBeGreaterThan(ATTEMPT_ERROR_BYTES);
    expect(bytes(cut)).toBe(offset + Math.floor((ATTEMPT_ERROR_BYTES - offset) / size) * size);
  }
});

it("a mixed text cut where its UTF-16 units would split a pair keeps the pair out whole", () => {
  // 1,023 units of ASCII, then a pair: a cut at 1,024 units would take its first half.
  const text = `${"x".repeat(ATTEMPT_ERROR_BYTES - 1)}🎉 and more`;
  expect(cutErrorText(text)).toBe("x".repeat(ATTEMPT_ERROR_BYTES - 1));
});
