import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * A module of src/ stays small enough to read in one sitting: a file past
 * this many lines holds more than one concern and wants splitting. (A
 * function's length is Biome's to hold: complexity/noExcessiveLinesPerFunction,
 * 60 lines, in biome.json's override for src/.)
 */
const MAX_LINES = 400;

const root = join(import.meta.dirname, "../..");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    // lua.generated.ts is the build's copy of the Lua scripts, not a module anyone writes.
    return /\.(ts|lua)$/.test(entry.name) && entry.name !== "lua.generated.ts" ? [path] : [];
  });
}

const lineCount = (text: string) => (text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0));

describe("src/", () => {
  it(`holds no file over ${MAX_LINES} lines`, () => {
    const files = sourceFiles(join(root, "src"));
    expect(files.length).toBeGreaterThan(100);
    const over = files.map((f) => ({ file: relative(root, f), lines: lineCount(readFileSync(f, "utf8")) })).filter((f) => f.lines > MAX_LINES);
    expect(over).toEqual([]);
  });

  it("counts lines as an editor shows them", () => {
    expect(lineCount("")).toBe(0);
    expect(lineCount("a\n")).toBe(1);
    expect(lineCount("a\nb")).toBe(2);
    expect(lineCount("a\n\nb\n")).toBe(3);
  });
});
