import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { validate } from "@readme/openapi-parser";
import { expect, it } from "vitest";
import { createApp } from "../../src/producer/app.js";

// The document is generated from the same zod schemas the routes validate with; no settings or Redis are needed.
async function served(): Promise<Record<string, unknown>> {
  const res = await createApp().request("/openapi.json");
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

it("the OpenAPI document validates with an OpenAPI parser", async () => {
  const result = await validate(structuredClone(await served()) as never);
  expect(result.valid, JSON.stringify((result as { errors?: unknown }).errors ?? null)).toBe(true);
});

it("every operation has an operationId, each once; the document names its servers and its licence", async () => {
  const doc = (await served()) as { paths: Record<string, Record<string, { operationId?: string }>>; servers: unknown; info: { license: unknown } };
  const ids = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => op.operationId ?? `(none: ${method} ${path})`));
  expect(ids.filter((id) => id.startsWith("(none"))).toEqual([]);
  expect(new Set(ids).size).toBe(ids.length);
  expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
  expect(doc.info.license).toEqual({ name: "MIT", url: "https://opensource.org/license/mit" });
  // Every $ref points into the document itself: linting it reads no other file or URL.
  expect(JSON.stringify(doc)).not.toMatch(/"\$ref":"(?!#)/);
});

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: Array<{ ruleId: string; severity: string; location: Array<{ pointer: string }> }>;
}

it("redocly lint (recommended rules) finds no error, and no warning but /healthz having no 4xx response", async () => {
  const dir = await mkdtemp(join(tmpdir(), "delayline-redocly-"));
  try {
    await writeFile(join(dir, "openapi.json"), JSON.stringify(await served()));
    // Its own config in its own folder, so nothing else is picked up; the document has no remote $ref.
    await writeFile(join(dir, "redocly.yaml"), "extends:\n  - recommended\ntelemetry: off\n");
    const cli = join(import.meta.dirname, "../../node_modules/@redocly/cli/bin/cli.js");
    // Nothing may leave this machine: no usage data, no look-up of a newer version.
    const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };
    const run = await promisify(execFile)(process.execPath, [cli, "lint", "openapi.json", "--format=json"], { cwd: dir, env, timeout: 60_000 }).catch(
      (err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? "", stderr: err.stderr ?? "" }),
    );
    const report = JSON.parse(run.stdout) as LintReport;
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}`);
    expect(report.totals.errors, problems.join("\n")).toBe(0);
    // /healthz answers 200 or 503 and nothing in the 4xx range.
    expect(problems).toEqual(["warn operation-4xx-response #/paths/~1healthz/get/responses"]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

it("one cursor name: every listing and resumable batch answers nextCursor (and takes cursor); no answer carries a field named cursor", async () => {
  type Schema = { $ref?: string; properties?: Record<string, unknown> };
  const doc = (await served()) as {
    paths: Record<
      string,
      Record<
        string,
        {
          parameters?: Array<{ name: string; in: string }>;
          requestBody?: { content: Record<string, { schema: Schema }> };
          responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
        }
      >
    >;
    components: { schemas: Record<string, Schema> };
  };
  const resolve = (s: Schema): Schema => (s.$ref ? resolve(doc.components.schemas[s.$ref.replace("#/components/schemas/", "")]!) : s);
  const answering: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const ok = op.responses["200"]?.content?.["application/json"]?.schema;
      const props = ok ? Object.keys(resolve(ok).properties ?? {}) : [];
      expect(props, `${method} ${path}`).not.toContain("cursor");
      if (!props.includes("nextCursor")) continue;
      answering.push(`${method} ${path}`);
      // What answers nextCursor takes it back as cursor, in the query or the body.
      const inQuery = (op.parameters ?? []).some((p) => p.name === "cursor" && p.in === "query");
      const body = op.requestBody?.content["application/json"]?.schema;
      const inBody = body ? "cursor" in (resolve(body).properties ?? {}) : false;
      expect(inQuery || inBody, `${method} ${path} takes cursor`).toBe(true);
    }
  }
  expect(answering).toEqual(
    expect.arrayContaining([
      "get /v1/schedules",
      "get /v1/topics/{topic}/jobs",
      "post /v1/topics/{topic}/jobs/cancel",
      "get /v1/topics/{topic}/dead",
      "post /v1/topics/{topic}/dead/replay",
      "delete /v1/topics/{topic}/dead",
    ]),
  );
});
