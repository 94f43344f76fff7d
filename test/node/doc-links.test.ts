/**
 * Every relative link in the docs points at a file that exists, and a link
 * with a `#fragment` at a heading of that page (GitHub's anchors: lower case,
 * punctuation dropped, spaces as hyphens, a repeated heading numbered `-1`,
 * `-2`, …). The README sends a newcomer through these links, so a page moved
 * or a heading renamed must not leave one dangling.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { DOC_PAGES, ROOT } from "./doc-pages.js";

const DOCS = DOC_PAGES;

/** GitHub's anchor of a heading's text. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors a markdown text's headings get, outside code blocks. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative links `[text](target)` outside code blocks, with their line numbers. */
function links(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  let fenced = false;
  text.split("\n").forEach((line, i) => {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) return;
    for (const m of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (!/^[a-z][a-z+.-]*:/i.test(target) && !target.startsWith("/")) out.push({ target, line: i + 1 });
    }
  });
  return out;
}

/** What is wrong with each link of `doc` (given its text): `doc:line: target (why)`. */
function broken(doc: string, text: string, read: (path: string) => string | undefined): string[] {
  const problems: string[] = [];
  for (const { target, line } of links(text)) {
    const [path, fragment] = target.split("#") as [string, string | undefined];
    const file = path === "" ? doc : relative(ROOT, normalize(join(ROOT, dirname(doc), path)));
    const body = path === "" ? text : read(file);
    if (body === undefined) {
      problems.push(`${doc}:${line}: ${target} (no such file)`);
      continue;
    }
    if (fragment && file.endsWith(".md") && !anchors(body).has(fragment)) problems.push(`${doc}:${line}: ${target} (no heading with that anchor)`);
  }
  return problems;
}

function readRepo(path: string): string | undefined {
  const full = join(ROOT, path);
  if (!existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? "" : readFileSync(full, "utf8");
}

describe.each(DOCS)("%s", (doc) => {
  it("links only to files and headings that exist", () => {
    expect(broken(doc, readFileSync(join(ROOT, doc), "utf8"), readRepo)).toEqual([]);
  });
});

it("the README links to the pages under docs/", () => {
  const targets = links(readFileSync(join(ROOT, "README.md"), "utf8")).map((l) => l.target.split("#")[0]);
  const pages = DOCS.filter((d) => d.startsWith("docs/"));
  expect(pages.length).toBeGreaterThan(5);
  expect(pages.filter((p) => !targets.includes(p))).toEqual([]);
});

it("the package ships every page under docs/ that the README links to", () => {
  const { files } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: string[] };
  const shipped = (path: string) => files.some((f) => path === f || path.startsWith(`${f.replace(/\/$/, "")}/`));
  const linked = links(readFileSync(join(ROOT, "README.md"), "utf8"))
    .map((l) => l.target.split("#")[0]!)
    .filter((t) => t.startsWith("docs/"));
  expect(linked).toContain("docs/ARCHITECTURE.md");
  expect(linked.filter((t) => !shipped(t))).toEqual([]);
});

describe("the link check (controls)", () => {
  const pages: Record<string, string> = {
    "docs/a.md": "# Page A\n\n## The tick's *rounds* (`src/tick`)\n\n## Limits\n\n## Limits\n\n```sh\n# not a heading\n```\n",
  };
  const read = (p: string) => pages[p];

  it("computes GitHub's anchors", () => {
    expect(slug("CLI (`npx delayline`)")).toBe("cli-npx-delayline");
    expect(slug("Upstash's limits, and the settings bounded by them")).toBe("upstashs-limits-and-the-settings-bounded-by-them");
    expect([...anchors(pages["docs/a.md"]!)]).toEqual(["page-a", "the-ticks-rounds-srctick", "limits", "limits-1"]);
  });

  it("finds a missing file, a missing heading and a link out of a folder, and passes good ones", () => {
    const doc = [
      "[ok](a.md#limits-1) [self](#here) [gone](b.md) [bad anchor](a.md#nope)",
      "## Here",
      "[url](https://example.com) [code `](x.md)` ignored",
      "```",
      "[in code](nowhere.md)",
      "```",
      "[up](../README.md)",
    ].join("\n");
    expect(broken("docs/x.md", doc, read)).toEqual([
      "docs/x.md:1: b.md (no such file)",
      "docs/x.md:1: a.md#nope (no heading with that anchor)",
      "docs/x.md:7: ../README.md (no such file)",
    ]);
  });
});
