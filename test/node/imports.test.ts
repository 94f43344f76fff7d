/**
 * No import cycles in src/ (runtime imports; `import type` is erased and
 * cannot form one), no Redis client outside src/queue, and layers that point
 * one way — src/protocol imports nothing else, the client nothing of the
 * server's runtime, the server nothing of the client — read with
 * TypeScript's own import scanner.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** Runs `check` on files it writes into a temporary folder (`write` makes the folders a path needs and returns the path), then removes the folder. */
function withFiles(check: (write: (name: string, text: string) => string, dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "delayline-imports-"));
  try {
    check((name, text) => {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    }, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

it("the check finds a cycle when there is one, and not one through import type (a control)", () => {
  withFiles((write) => {
    const a = write("a.ts", 'import { b } from "./b.js";\nexport const a = () => b;\n');
    const b = write("b.ts", 'import { a } from "./a.js";\nexport const b = () => a;\n');
    const c = write("c.ts", 'import type { D } from "./d.js";\nimport { type E } from "./e.js";\nexport type C = D | E;\n');
    const d = write("d.ts", 'import type { C } from "./c.js";\nexport type D = C;\n');
    const e = write("e.ts", 'import { type C } from "./c.js";\nexport type E = C;\n');
    expect(importCycles([a, b]).length).toBe(1);
    expect(importCycles([c, d, e])).toEqual([]);
  });
});

/** One import of a module: what it names (a default or namespace import names "*"), type-only imports included. */
interface ImportOf {
  spec: string;
  /** The module file for a relative specifier, else the specifier itself. */
  target: string;
  names: string[];
  /** Erased from the JavaScript: `import type`, `export type`, every name `type`, or an `import("…")` type. */
  typeOnly: boolean;
}

/** Every import of one module: declarations, `export … from`, `import()` and `import("…")` types. */
function importsOf(file: string): ImportOf[] {
  const out: ImportOf[] = [];
  const add = (spec: string, names: string[], typeOnly: boolean) =>
    out.push({ spec, target: spec.startsWith(".") ? resolve(dirname(file), spec.replace(/\.js$/, ".ts")) : spec, names, typeOnly });
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const names: string[] = [];
      let typeOnly = ts.isExportDeclaration(node) && node.isTypeOnly;
      if (ts.isImportDeclaration(node)) {
        const clause = node.importClause;
        if (clause?.name) names.push("*");
        const bindings = clause?.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings)) names.push("*");
        if (bindings && ts.isNamedImports(bindings)) names.push(...bindings.elements.map((e) => (e.propertyName ?? e.name).text));
        const allTypes = !clause?.name && bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.every((e) => e.isTypeOnly);
        typeOnly = clause?.isTypeOnly === true || (allTypes && bindings.elements.length > 0);
      } else if (node.exportClause && ts.isNamedExports(node.exportClause)) {
        names.push(...node.exportClause.elements.map((e) => (e.propertyName ?? e.name).text));
        typeOnly ||= node.exportClause.elements.length > 0 && node.exportClause.elements.every((e) => e.isTypeOnly);
      } else {
        names.push("*");
      }
      add(node.moduleSpecifier.text, names, typeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, ["*"], false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, ["*"], true);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS));
  return out;
}

/**
 * Imports that would let a Redis client out of `queueDir`, as "file: import":
 * the Upstash client itself, anything of `queueDir`'s redis.ts but its error
 * class, and the script runner and scripts (which take a client).
 */
function redisLeaks(files: string[], queueDir: string): string[] {
  const inQueue = (f: string) => !relative(queueDir, f).startsWith("..");
  const leaks: string[] = [];
  for (const file of files.filter((f) => !inQueue(f))) {
    for (const i of importsOf(file)) {
      const of = (name: string) => i.target === join(queueDir, name);
      const leak =
        i.spec === "@upstash/redis" ||
        i.spec.startsWith("@upstash/redis/") ||
        (of("redis.ts") && i.names.some((n) => n !== "RedisUnavailableError")) ||
        of("scripts.ts") ||
        of("lua.generated.ts");
      if (leak) leaks.push(`${relative(join(queueDir, "../.."), file)}: ${i.spec} { ${i.names.join(", ")} }`);
    }
  }
  return leaks;
}

const app = join(import.meta.dirname, "../../app");
const appSources = (readdirSync(app, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => join(app, f));

it("no file outside src/queue holds a Redis client: none imports @upstash/redis, src/queue/redis.ts's client factories or the script runner", () => {
  expect(appSources.length).toBeGreaterThan(0);
  expect(redisLeaks([...sources, ...appSources], join(src, "queue"))).toEqual([]);
});

it("the Redis check finds each way a client gets out, and lets the error class through (a control)", () => {
  withFiles((write, dir) => {
    const queueDir = join(dir, "src/queue");
    write("src/queue/redis.ts", "export class RedisUnavailableError extends Error {}\nexport const createRedis = () => 1;\n");
    const inside = write("src/queue/queue.ts", 'import { Redis } from "@upstash/redis/cloudflare";\nimport { createRedis } from "./redis.js";\n');
    const fine = write("src/tick/fine.ts", 'import { RedisUnavailableError } from "../queue/redis.js";\nimport { Queue } from "../queue/queue.js";\n');
    const leaking = [
      write("src/tick/a.ts", 'import type { Redis } from "@upstash/redis/cloudflare";\n'),
      write("src/tick/b.ts", 'import { createRedis as make } from "../queue/redis.js";\n'),
      write("src/tick/c.ts", 'import * as r from "../queue/redis.js";\n'),
      write("src/tick/d.ts", 'export { createRedis } from "../queue/redis.js";\n'),
      write("src/tick/e.ts", 'const m = await import("@upstash/redis");\n'),
      write("src/tick/f.ts", 'let r: import("@upstash/redis").Redis;\n'),
      write("src/tick/g.ts", 'import { runScript } from "../queue/scripts.js";\n'),
    ];
    expect(redisLeaks([inside, fine], queueDir)).toEqual([]);
    for (const f of leaking) expect(redisLeaks([f], queueDir), relative(dir, f)).toHaveLength(1);
  });
});

/**
 * Imports that break the layers, as "file: import". src/protocol (what the
 * server and its clients agree on: signatures, Retry-After) imports nothing
 * outside itself, not even a package; src/client imports at runtime only
 * itself and src/protocol (types of the API's schemas are fine: erased, they
 * ship no server code); and nothing outside src/client and src/cli imports
 * the client at all, so the server never depends on what it serves.
 */
function layerViolations(files: string[], srcDir: string): string[] {
  const within = (dir: string) => (f: string) => !relative(join(srcDir, dir), f).startsWith("..");
  const [inClient, inProtocol, inCli] = [within("client"), within("protocol"), within("cli")];
  const out: string[] = [];
  for (const file of files) {
    for (const i of importsOf(file)) {
      const relativeSpec = i.spec.startsWith(".");
      const broken = inProtocol(file)
        ? !relativeSpec || !inProtocol(i.target)
        : inClient(file)
          ? !i.typeOnly && (!relativeSpec || !(inClient(i.target) || inProtocol(i.target)))
          : !inCli(file) && relativeSpec && inClient(i.target);
      if (broken) out.push(`${relative(srcDir, file)}: ${i.spec}`);
    }
  }
  return out;
}

it("layers point one way: src/protocol imports nothing else, src/client nothing of the server's runtime, and only src/cli imports src/client", () => {
  expect(sources.filter((f) => f.includes("/protocol/")).length).toBeGreaterThan(3);
  expect(layerViolations(sources, src)).toEqual([]);
});

it("the layer check finds each way a layer is crossed, and lets the allowed imports through (a control)", () => {
  withFiles((write, dir) => {
    const srcDir = join(dir, "src");
    write("src/protocol/hmac.ts", "export const mac = 1;\n");
    write("src/queue/queue.ts", "export class Queue {}\n");
    write("src/client/index.ts", "export class Client {}\n");
    const fine = [
      write("src/protocol/sign.ts", 'import { mac } from "./hmac.js";\n'),
      write(
        "src/client/jobs.ts",
        'import type { Queue } from "../queue/queue.js";\nimport { type Queue as Q } from "../queue/queue.js";\nexport type { Queue as R } from "../queue/queue.js";\nimport { mac } from "../protocol/hmac.js";\nimport { Client } from "./index.js";\n',
      ),
      write("src/cli/main.ts", 'import { Client } from "../client/index.js";\nimport { Queue } from "../queue/queue.js";\n'),
      write("src/tick/dispatch.ts", 'import { mac } from "../protocol/hmac.js";\n'),
    ];
    const crossing = [
      write("src/protocol/a.ts", 'import { Queue } from "../queue/queue.js";\n'),
      write("src/protocol/b.ts", 'import type { Client } from "../client/index.js";\n'),
      write("src/protocol/c.ts", 'import { z } from "zod";\n'),
      write("src/client/d.ts", 'import { Queue } from "../queue/queue.js";\n'),
      write("src/client/e.ts", 'export { Queue } from "../queue/queue.js";\n'),
      write("src/client/f.ts", 'import { z } from "zod";\n'),
      write("src/client/g.ts", 'const q = await import("../queue/queue.js");\n'),
      write("src/handlers/h.ts", 'import type { Client } from "../client/index.js";\n'),
      write("src/tick/i.ts", 'import { Client } from "../client/index.js";\n'),
    ];
    expect(layerViolations(fine, srcDir)).toEqual([]);
    for (const f of crossing) expect(layerViolations([f], srcDir), relative(dir, f)).toHaveLength(1);
  });
});
