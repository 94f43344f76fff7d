/**
 * Every repository path the docs name exists: backticked paths (`src/tick/loop.ts`,
 * `lua/lib/index.lua`, `bench/results/latest.{json,md}`) and link targets.
 * A path that starts at a top-level entry is read from the repository's root
 * (or the doc's folder); a shorter one (`loop.ts`, `lib/dead.lua`) must be
 * the end of some file's path. `{a,b}` names each of a and b; globs,
 * `<placeholder>` and `…` match any name; `../` climbs out of the doc's folder; git-ignored places (outputs such as
 * `bench/results/tmp/`, what the build makes) count as there.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { DOC_PAGES, ROOT } from "./doc-pages.js";

const DOCS = DOC_PAGES;

/** Names a doc gives that are not in this repository, each with where it says so. */
const ELSEWHERE = new Set([
  "DESIGN.md", // docs/ARCHITECTURE.md: "the original sketch (`DESIGN.md` outside this repository)"
]);

const SKIP_DIRS = new Set(["node_modules", ".git", ".wrangler", ".data", "dist", "test-results"]);
const FILE_LIKE = /\.(ts|mts|mjs|js|lua|json|md|toml|ya?ml|html|css|sh|txt)$/;
// Root files named without an extension, which the rule above would not take for paths.
const BARE_FILES = new Set(["LICENSE", "NOTICE", "CHANGELOG", "AUTHORS", "Makefile", "Dockerfile"]);

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const path = relative(ROOT, join(dir, entry.name));
    if (entry.isDirectory()) {
      out.push(`${path}/`);
      walk(join(dir, entry.name), out);
    } else out.push(path);
  }
  return out;
}

const paths = walk(ROOT);
const topLevel = new Set(readdirSync(ROOT).filter((n) => !SKIP_DIRS.has(n)));
const ignored = readFileSync(join(ROOT, ".gitignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));

/** The regex source of a named path: globs, placeholders and ellipses match any name. */
function pattern(named: string): string {
  let out = "";
  for (let i = 0; i < named.length; i++) {
    const ch = named[i]!;
    if (ch === "*") out += "[^/]*";
    else if (ch === "…") out += ".*";
    else if (ch === "<") {
      const end = named.indexOf(">", i);
      out += "[^/]+";
      i = end < 0 ? named.length : end;
    } else out += escapeRegExp(ch);
  }
  return out;
}

/** `a.{json,md}` is two names, each of which must exist. */
function expand(named: string): string[] {
  const m = /\{([^{}]*)\}/.exec(named);
  if (!m) return [named];
  return m[1]!.split(",").flatMap((alt) => expand(named.slice(0, m.index) + alt + named.slice(m.index + m[0].length)));
}
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The repository paths a doc names: backticked or linked, with `NAME=` prefixes and trailing punctuation dropped. */
function named(doc: string): string[] {
  const text = readFileSync(join(ROOT, doc), "utf8");
  const raw = [...text.matchAll(/`([^`\s]+)`/g), ...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
  const found = new Set<string>();
  for (let c of raw) {
    if (/^[a-z]+:/i.test(c) || c.startsWith("#") || c.startsWith("/")) continue; // URLs, anchors, routes
    c = c
      .replace(/^[A-Z_]+=/, "")
      .replace(/#.*$/, "")
      .replace(/^\.\//, "")
      .replace(/[.,:;]+$/, "");
    // A link out of the doc's folder (`../bench/results/latest.md`) names the path it resolves to.
    if (c.startsWith("../")) c = relative(ROOT, normalize(join(ROOT, dirname(doc), c)));
    const first = c.split("/")[0]!;
    const rooted = topLevel.has(first) && (c.includes("/") || FILE_LIKE.test(c));
    const fileLike = /^[\w.@<>{},*…-]+(\/[\w.@<>{},*…-]+)*\/?$/.test(c) && FILE_LIKE.test(c.replace(/\{[^}]*\}$/, "x.md"));
    if (rooted || BARE_FILES.has(c) || (fileLike && !ELSEWHERE.has(c))) found.add(c);
  }
  return [...found].sort();
}

/** Whether a git-ignored place (an output, or what the build makes) is what `name` names. */
function isIgnored(name: string): boolean {
  const n = name.replace(/\/$/, "");
  return ignored.some((g) => {
    const glob = g.replace(/\/$/, "");
    const re = new RegExp(`^${pattern(glob)}(?:/.*)?$`);
    return re.test(n) || (glob.includes("/") && re.test(`${dirname(glob)}/${n}`));
  });
}

function existsOne(doc: string, name: string): boolean {
  if (isIgnored(name)) return true;
  const body = pattern(name.replace(/\/$/, ""));
  const within = dirname(doc) === "." ? [""] : ["", `${dirname(doc)}/`];
  const tests = within.map((d) => new RegExp(`^${escapeRegExp(d)}${body}/?$`));
  if (!topLevel.has(name.split("/")[0]!)) tests.push(new RegExp(`(?:^|/)${body}/?$`));
  return tests.some((re) => paths.some((p) => re.test(p)));
}

const exists = (doc: string, name: string) => expand(name).every((n) => existsOne(doc, n));

describe.each(DOCS)("%s", (doc) => {
  it("names only repository paths that exist", () => {
    const names = named(doc);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !exists(doc, n))).toEqual([]);
  });
});

it("catches a path that does not exist, in any of the forms", () => {
  expect(exists("README.md", "src/tick/loop.ts")).toBe(true);
  expect(exists("README.md", "src/tick/lop.ts")).toBe(false);
  expect(exists("README.md", "bench/results/latest.{json,md}")).toBe(true);
  expect(exists("README.md", "bench/results/latest.{json,txt}")).toBe(false);
  expect(exists("README.md", "bench/results/tmp/<name>-<time>.log")).toBe(true);
  expect(exists("docs/ARCHITECTURE.md", "lib/dead.lua")).toBe(true);
  expect(exists("docs/ARCHITECTURE.md", "lib/alive.lua")).toBe(false);
  expect(exists("bench/README.md", "results/latest.md")).toBe(true);
  expect(exists("bench/README.md", "bench/worker.ts")).toBe(false);
  expect(exists("CONTRIBUTING.md", "LICENSE")).toBe(true);
  expect(named("docs/README.md")).toContain("bench/README.md");
  expect(exists("CONTRIBUTING.md", "NOTICE")).toBe(false);
});
