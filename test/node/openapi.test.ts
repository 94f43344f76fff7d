import { validate } from "@readme/openapi-parser";
import { expect, it } from "vitest";
import { app } from "../../src/producer/app.js";

it("the OpenAPI document validates with an OpenAPI parser", async () => {
  // The document is generated from the same zod schemas the routes validate with; no settings or Redis are needed.
  const res = await app.request("/openapi.json");
  expect(res.status).toBe(200);
  const doc = (await res.json()) as Record<string, unknown>;
  const result = await validate(structuredClone(doc) as never);
  expect(result.valid, JSON.stringify((result as { errors?: unknown }).errors ?? null)).toBe(true);
});
