import { createExecutionContext } from "cloudflare:test";
import worker from "../../../app/worker.js";
import type { Env } from "../../../src/env.js";
import { freshEnv } from "../fixtures.js";

export { deliveries } from "../fixtures.js";

export const TOKEN = "test-api-token-0123456789";

/** An env of its own (fresh key prefix) so each test's keys are separate. */
export function isolatedEnv(overrides: Partial<Env> = {}): Env {
  return freshEnv("api", overrides);
}

export interface CallOptions {
  method?: string;
  body?: unknown;
  raw?: BodyInit;
  headers?: Record<string, string>;
  token?: string | null;
}

/** Calls the Worker's fetch entry point (in workerd) with the given env. */
export async function call(env: Env, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== null) headers.authorization ??= `Bearer ${options.token ?? TOKEN}`;
  let body: BodyInit | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await worker.fetch(
    new Request(`http://delayline.test${path}`, { method: options.method ?? (body === undefined ? "GET" : "POST"), headers, body }),
    env,
    createExecutionContext(),
  );
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, body: json, text };
}
