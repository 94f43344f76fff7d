import { OpenAPIHono } from "@hono/zod-openapi";
import type { Env, Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";
import { validationProblem } from "./problem.js";

export type AppEnv = { Bindings: Env; Variables: { settings: Settings; queue: Queue } };

/** A router whose validation failures are 422 problem documents. */
export function router(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) return validationProblem(result.error, result.target === "json" ? "body" : result.target);
    },
  });
}

/** Error responses every authenticated route may give, for the OpenAPI document. */
export const problemResponses = (codes: number[]) =>
  Object.fromEntries(
    codes.map((code) => [
      code,
      { description: DESCRIPTIONS[code] ?? "Error", content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } } },
    ]),
  );

const DESCRIPTIONS: Record<number, string> = {
  400: "Malformed request",
  401: "Missing or wrong token",
  404: "Not found",
  409: "Conflict with the job's state",
  413: "Body too large",
  415: "Not JSON",
  422: "Schema violation",
  503: "Redis unreachable; nothing changed, retry later",
};
