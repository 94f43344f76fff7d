/**
 * No import cycles in src/ (runtime imports; `import type` is erased and
 * cannot form one), read with TypeScript's own import scanner.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";

const src = join(import.meta.dirname, "../../src");

/** Runtime imports of one module, as files under src/. */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly = ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly === true : node.isTypeOnly;
      // import { type A, type B } from … is erased too.
      const allTypes =
        ts.isImportDeclaration(node) &&
        node.importClause !== undefined &&
        node.importClause.name === undefined &&
        node.importClause.namedBindings !== undefined &&
        ts.isNamedImports(node.importClause.namedBindings) &&
        node.importClause.namedBindings.elements.length > 0 &&
        node.importClause.namedBindings.elements.every((e) => e.isTypeOnly);
      const spec = node.moduleSpecifier.text;
      if (!typeOnly && !allTypes && spec.startsWith(".")) out.push(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS));
  return out;
}

/** Every cycle found by a depth-first walk, as module paths relative to src/. */
function importCycles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, runtimeImports(f)]));
  const cycles: string[][] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const walk = (f: string) => {
    state.set(f, "visiting");
    stack.push(f);
    for (const next of graph.get(f) ?? []) {
      if (state.get(next) === "visiting") cycles.push([...stack.slice(stack.indexOf(next)), next].map((p) => relative(src, p)));
      else if (!state.has(next) && graph.has(next)) walk(next);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of graph.keys()) if (!state.has(f)) walk(f);
  return cycles;
}

const sources = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")).map((f) => join(src, f));

it("src/ has no import cycles", () => {
  expect(sources.length).toBeGreaterThan(30);
  expect(importCycles(sources)).toEqual([]);
});

it("the check finds a cycle when there is one, and not one through import type (a control)", () => {
  const dir = mkdtempSync(join(tmpdir(), "delayline-imports-"));
  try {
    const write = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    const a = write("a.ts", 'import { b } from "./b.js";\nexport const a = () => b;\n');
    const b = write("b.ts", 'import { a } from "./a.js";\nexport const b = () => a;\n');
    const c = write("c.ts", 'import type { D } from "./d.js";\nimport { type E } from "./e.js";\nexport type C = D | E;\n');
    const d = write("d.ts", 'import type { C } from "./c.js";\nexport type D = C;\n');
    const e = write("e.ts", 'import { type C } from "./c.js";\nexport type E = C;\n');
    expect(importCycles([a, b]).length).toBe(1);
    expect(importCycles([c, d, e])).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
