// Builds public/dashboard/: the dashboard's TypeScript (with uPlot and the
// typed client) bundled by esbuild into one script, its CSS (uPlot's own
// plus ours) into one sheet, and the page. Workers static assets serve them,
// so the dashboard needs no CDN and works offline.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "public/dashboard");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: join(root, "dashboard/main.ts"), style: join(root, "dashboard/style.css") },
  outdir: out,
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync(join(root, "dashboard/index.html"), join(out, "index.html"));
