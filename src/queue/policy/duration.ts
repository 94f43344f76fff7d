const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** A duration as people write it: `"90s"`, `"5m"`, `"1h30m"`, `"500ms"`, or milliseconds as a number. */
export type Duration = string | number;

/**
 * Parses a duration into whole milliseconds. Accepts a non-negative finite
 * number of ms, or one or more `<number><unit>` parts (units ms, s, m, h, d;
 * decimals allowed, e.g. `"1.5s"`), largest unit first. Throws a RangeError
 * with the reason otherwise.
 */
export function parseDuration(input: Duration): number {
  if (typeof input === "number") {
    if (!Number.isFinite(input) || input < 0) throw new RangeError(`a duration must be a non-negative number of ms, got ${input}`);
    return Math.round(input);
  }
  const text = input.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text));
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
  let total = 0;
  let lastUnit = Infinity;
  let pos = 0;
  while (pos < text.length) {
    part.lastIndex = pos;
    const m = part.exec(text);
    if (!m) throw new RangeError(`"${input}" is not a duration like "90s", "5m", "1h30m" or "500ms"`);
    const unit = UNIT_MS[m[2]!]!;
    if (unit >= lastUnit) throw new RangeError(`"${input}": write units largest first, each once (e.g. "1h30m")`);
    lastUnit = unit;
    total += Number(m[1]) * unit;
    pos = part.lastIndex;
  }
  if (pos === 0) throw new RangeError("a duration must not be empty");
  return Math.round(total);
}
