// The npm package's JavaScript: src/ compiled by tsc to plain ESM with type
// declarations in dist/ (tsconfig.build.json), from a clean dist/ so nothing
// from an earlier layout ships. Run by `npm pack` / `npm publish` (prepack)
// after scripts/build.mjs generated the Lua module and public/.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const root = join(dirname(new URL(import.meta.url).pathname), "..");
rmSync(join(root, "dist"), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const run = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
if (run.status !== 0) process.exit(run.status ?? 1);
