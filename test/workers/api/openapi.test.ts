import { describe, expect, it } from "vitest";
import worker from "../../../app/worker.js";
import { call, isolatedEnv } from "./helpers.js";

const UNAUTHENTICATED = new Set(["/healthz", "/openapi.json", "/docs"]);
const SAMPLE: Record<string, string> = { id: "t.01ARZ3NDEKTSV4RRFFQ69G5FAV", topic: "t", key: "tenant-42" };

async function documented(): Promise<Array<{ method: string; path: string }>> {
  const doc = (await call(isolatedEnv(), "/openapi.json", { token: null })).body as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })));
}

describe("the OpenAPI document", () => {
  it("is served without a token as OpenAPI 3.1", async () => {
    const r = await call(isolatedEnv(), "/openapi.json", { token: null });
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe("3.1.0");
  });

  it("lists exactly the routes the app serves", async () => {
    // A route appears once per handler (validators included); compare distinct method + path pairs.
    const served = worker.app.routes
      .filter((r) => r.method !== "ALL" && !["/openapi.json", "/docs", "/docs/*", "/dashboard", "/dashboard/*", "/favicon.ico"].includes(r.path))
      .map((r) => `${r.method} ${r.path.replace(/:([^/]+)/g, "{$1}")}`);
    const listed = (await documented()).map((r) => `${r.method} ${r.path}`);
    expect(new Set(listed)).toEqual(new Set(served));
    expect(listed.length).toBe(new Set(served).size);
  });

  it("every documented route but /healthz answers 401 without a token", async () => {
    const env = isolatedEnv();
    const routes = (await documented()).filter((r) => !UNAUTHENTICATED.has(r.path));
    expect(routes.length).toBeGreaterThanOrEqual(17);
    for (const { method, path } of routes) {
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE[name]!);
      const r = await call(env, url, { method, token: null, ...(method === "GET" || method === "DELETE" ? {} : { body: {} }) });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.headers.get("content-type")).toBe("application/problem+json");
    }
  });

  it("shows an upsert's fields and its result on POST /v1/jobs, and a job's key on GET /v1/jobs/{id}", async () => {
    const doc = (await call(isolatedEnv(), "/openapi.json", { token: null })).body;
    expect(Object.keys(doc.components.schemas.JobRequest.properties)).toEqual(expect.arrayContaining(["jobKey", "onConflict", "maxWait"]));
    expect(doc.components.schemas.JobRequest.properties.onConflict.enum).toEqual(["replace", "keepDue", "ignore"]);
    expect(doc.components.schemas.Enqueued.properties.result.enum).toEqual(["created", "replaced", "ignored"]);
    expect(Object.keys(doc.components.schemas.Job.properties)).toEqual(expect.arrayContaining(["jobKey", "replacements"]));
  });

  it("shows dryRun and its answer on bulk cancel, replay and purge, a replay's edits and movedTo, and the history's edited and moved markers", async () => {
    const doc = (await call(isolatedEnv(), "/openapi.json", { token: null })).body;
    const { BulkCancel, BulkCancelled, Replay, Replayed, Purged, Attempt, Job } = doc.components.schemas;
    expect(Object.keys(BulkCancel.properties)).toContain("dryRun");
    expect(Object.keys(Replay.properties)).toEqual(expect.arrayContaining(["dryRun", "payload", "target", "webhookHeaders", "topic"]));
    for (const answer of [BulkCancelled, Replayed, Purged]) expect(Object.keys(answer.properties)).toEqual(expect.arrayContaining(["dryRun", "ids"]));
    expect(BulkCancelled.properties.ids.maxItems).toBe(20);
    expect(Object.keys(Replayed.properties)).toContain("movedTo");
    const purge = doc.paths["/v1/topics/{topic}/dead"].delete.parameters.map((p: { name: string }) => p.name);
    expect(purge).toContain("dryRun");
    expect(Attempt.properties.outcome.enum).toEqual(expect.arrayContaining(["edited", "moved"]));
    expect(Object.keys(Attempt.properties)).toEqual(expect.arrayContaining(["changes", "movedTo"]));
    expect(Job.properties.state.enum).toContain("moved");
  });
});
