/** The package's version, read from its package.json at run time. */
import { readFileSync } from "node:fs";

/**
 * The `version` of the package.json two directories up: from `src/cli/` in the repository (`npm run cli`) and from
 * `dist/cli/` in the installed package alike, both of which sit two levels below the package's root.
 */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
  if (typeof pkg.version !== "string") throw new Error("package.json has no version");
  return pkg.version;
}
