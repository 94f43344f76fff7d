/** The repository's markdown pages that the doc tests read. */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dirname, "../..");

/** README.md, CONTRIBUTING.md, bench/README.md, the bench's log and every page under docs/, those that exist. */
export const DOC_PAGES = [
  "README.md",
  "CONTRIBUTING.md",
  "bench/README.md",
  "bench/results/log.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
].filter((f) => existsSync(join(ROOT, f)));
