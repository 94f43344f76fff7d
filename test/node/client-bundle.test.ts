/**
 * The client ships as plain ESM with no runtime dependency: bundled for a
 * neutral platform (no Node built-ins, no package resolution beyond its own
 * files), what it emits imports nothing — so it runs in Node ≥ 20, Workers,
 * Deno, Bun and browsers. A value import of the API's schemas (zod, hono)
 * instead of a type-only one would fail here, as would one of the server's
 * modules (test/node/imports.test.ts names the import).
 */
import { build } from "esbuild";
import { join } from "node:path";
import { expect, it } from "vitest";

it("bundles src/client/index.ts to ESM that imports nothing", async () => {
  const r = await build({
    entryPoints: [join(import.meta.dirname, "../../src/client/index.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const output = Object.values(r.metafile.outputs)[0]!;
  expect(output.imports).toEqual([]);
  // Only the client's own files went in, and the protocol it shares with the server (signatures, Retry-After).
  expect(Object.keys(r.metafile.inputs).filter((f) => !f.startsWith("src/client/") && !f.startsWith("src/protocol/"))).toEqual([]);
  expect(output.exports).toEqual(expect.arrayContaining(["Delayline", "DelaylineError", "DelaylineAuthError", "DelaylineUnavailableError", "Receiver"]));
});
