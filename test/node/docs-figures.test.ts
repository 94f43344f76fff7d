/**
 * Every measured figure lives in one place. The owners are the bench's result
 * files (bench/results/*.md, written by the runs) and docs/costs.md (what
 * test/workers/queue/cost.test.ts measures); every other doc links to them.
 * A figure copied into another doc drifts the next time the bench runs (the
 * README once said 3.26 commands a job in five places, and an idle minute cost
 * 37 commands in one paragraph and 38 in the next), so this fails naming the
 * file, the line and the owner.
 *
 * A figure is what an owner's table cell states as a measurement: a decimal
 * (`3.27`, `0.09×`), a whole number with a unit (`170 ms`, `6,766 jobs/s`), or a
 * whole number in a column of commands or requests. Round whole numbers (under
 * 10, a multiple of 10 under 100, a multiple of 100), sizes, percentages and bare one-place decimals are left
 * out: those are the bench's inputs, the settings and limits (`1,000 jobs`,
 * `TICK_POLL_MS=100`, `10 MB`, `10 %` of attempts failed), load averages and
 * targets, which docs may name.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DOC_PAGES, ROOT } from "./doc-pages.js";

/** The owners, the current headline first: a copy is reported against the first that states its figure (the log, of past runs, last). */
const OWNERS = [
  "bench/results/latest.md",
  "docs/costs.md",
  ...readdirSync(join(ROOT, "bench/results"))
    .filter((f) => f.endsWith(".md") && f !== "latest.md" && f !== "log.md")
    .map((f) => `bench/results/${f}`),
  "bench/results/log.md",
].filter((f) => existsSync(join(ROOT, f)));
const SCANNED = DOC_PAGES.filter((f) => !OWNERS.includes(f));

const UNIT = String.raw`(?:×|ms|jobs\/s|\/s|(?:Redis )?commands|requests)`;
/** A number, then (for the docs) more numbers joined by " / ", then an optional unit: `54 / 134 / 170 ms`. */
const NUMBER = String.raw`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`;
const CHAIN = new RegExp(String.raw`(?<![\w.\d-])((?:${NUMBER})(?:\s?\/\s?(?:${NUMBER}))*)(?![\d.]\d)\s?(${UNIT}(?![\w/]))?`, "g");

type Figure = { key: string; text: string };

/** The key two spellings of one figure share: `d:3.27`, `d:0.09×`, `i:170 ms`, `i:37 commands`. */
function figure(numberText: string, unit: string | undefined): Figure | undefined {
  const n = numberText.replace(/,/g, "");
  const u = (unit ?? "").replace(/^Redis /, "");
  if (n.includes(".")) {
    // A bare one-place decimal (a load average, `1.5`) says too little to be anyone's figure.
    if (Number(n) === 0 || (u !== "×" && /\.\d$/.test(n))) return undefined;
    return { key: `d:${n}`, text: `${numberText}${u === "×" ? "×" : ""}` }; // 1.02 and 1.02× are one figure
  }
  const v = Number(n);
  if (!u || v < 10 || (v < 100 && v % 10 === 0) || v % 100 === 0) return undefined;
  return { key: `i:${v} ${u}`, text: `${numberText} ${u}` };
}

/** The figures in one stretch of text; `unit` is the column's (commands, requests) when the text is a table cell. */
function figuresIn(text: string, columnUnit?: string): Figure[] {
  const out: Figure[] = [];
  for (const m of text.matchAll(CHAIN)) {
    const unit = m[2] ?? columnUnit;
    for (const part of m[1]!.split(/\s?\/\s?/)) {
      const f = figure(part, unit);
      if (f) out.push(f);
    }
  }
  return out;
}

/** Figures an owner's tables state, by key, each with where it is stated. */
function ownedFigures(owner: string, text: string): Map<string, string> {
  const owned = new Map<string, string>();
  const lines = text.split("\n");
  let headers: string[] = [];
  for (const [i, line] of lines.entries()) {
    if (!line.startsWith("|")) {
      headers = [];
      continue;
    }
    const cells = line.split("|").slice(1, -1);
    if (/^\|[\s|:-]+\|$/.test(line)) continue;
    if (/^\|[\s|:-]+\|$/.test(lines[i + 1] ?? "")) {
      headers = cells;
      continue;
    }
    cells.forEach((cell, c) => {
      // The machine's load while it ran and the targets a figure is held to are not measurements of delayline.
      if (/load|target/i.test(headers[c] ?? "")) return;
      const unit = /commands/i.test(headers[c] ?? "") ? "commands" : /requests/i.test(headers[c] ?? "") ? "requests" : undefined;
      for (const f of figuresIn(cell, unit)) if (!owned.has(f.key)) owned.set(f.key, `${owner}:${i + 1}`);
    });
  }
  return owned;
}

/** Every copy of an owned figure in `doc`: `file:line: text (owned by owner:line)`. */
function copies(doc: string, text: string, owned: Map<string, string>): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const f of figuresIn(line)) {
      const owner = owned.get(f.key);
      if (owner) found.push(`${doc}:${i + 1}: ${f.text} (owned by ${owner})`);
    }
  });
  return found;
}

const read = (f: string) => readFileSync(join(ROOT, f), "utf8");
const owned = new Map<string, string>();
for (const o of OWNERS) for (const [k, where] of ownedFigures(o, read(o))) if (!owned.has(k)) owned.set(k, where);

describe("measured figures", () => {
  it("are read from the owners' tables (the bench's headline figure among them)", () => {
    expect(OWNERS).toContain("bench/results/latest.md");
    expect(owned.size).toBeGreaterThan(100);
    const latest = read("bench/results/latest.md");
    const commandsPerJob = /\| \*\*Redis commands per job, success\*\*[^|]*\| ([\d.]+) \|/.exec(latest)?.[1];
    expect(commandsPerJob).toBeDefined();
    expect(owned.has(`d:${commandsPerJob}`)).toBe(true);
    // A doc that copied it (as the README and bench/README.md once did) fails, pointing at the owner.
    expect(copies("docs/x.md", `Redis commands per job ${commandsPerJob} vs BullMQ's`, owned)).toEqual([
      `docs/x.md:1: ${commandsPerJob} (owned by ${owned.get(`d:${commandsPerJob}`)})`,
    ]);
    expect(owned.get(`d:${commandsPerJob}`)).toMatch(/^bench\/results\/latest\.md:\d+$/);
  });

  it.each(SCANNED)("%s copies none of them (it links to the owner instead)", (doc) => {
    expect(copies(doc, read(doc), owned)).toEqual([]);
  });
});

describe("the figure check (controls)", () => {
  const table = [
    "| path | Redis commands per job | requests | p99 | rate |",
    "|---|---|---|---|---|",
    "| success | **3.26** | 10 | 134 ms | 6,766 jobs/s |",
    "| idle minute | 37 | 62 | 1,053 ms | 0.55× |",
  ].join("\n");
  const fixture = ownedFigures("owner.md", table);

  it("takes decimals, ratios, numbers with units and the numbers of command and request columns", () => {
    expect([...fixture.keys()].sort()).toEqual(["d:0.55", "d:3.26", "i:1053 ms", "i:134 ms", "i:37 commands", "i:6766 jobs/s", "i:62 requests"].sort());
  });

  it("finds a copy in prose, in any spelling, with file and line", () => {
    const doc =
      "intro\nthe success path is 3.26 Redis commands per job; asleep an idle minute costs 37 Redis commands\nlateness 54 / 134 / 1053 ms, 0.55× the floor";
    expect(copies("docs/x.md", doc, fixture)).toEqual([
      "docs/x.md:2: 3.26 (owned by owner.md:3)",
      "docs/x.md:2: 37 commands (owned by owner.md:4)",
      "docs/x.md:3: 134 ms (owned by owner.md:3)",
      "docs/x.md:3: 1053 ms (owned by owner.md:4)",
      "docs/x.md:3: 0.55× (owned by owner.md:4)",
    ]);
  });

  it("leaves inputs, versions and other numbers alone", () => {
    const doc = "1,000 jobs at TICK_POLL_MS=100, 37 topics, 62 ms, Node 20.3.0, version 3.26.1, 200 ms, 0.5×, text format 0.0.4";
    expect(copies("docs/x.md", doc, fixture)).toEqual([]);
  });
});
