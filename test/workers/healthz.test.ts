import { createScheduledController, createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../app/worker.js";
import { freshEnv } from "./fixtures.js";
import { self, testEnv as env } from "./self.js";

describe("GET /healthz", () => {
  it("reports Redis up without a token", async () => {
    const res = await self.fetch("http://delayline.test/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, redis: "up" });
  });

  it("answers 503 with redis: down when Redis is unreachable", async () => {
    const unreachable = { ...env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" };
    const res = await worker.fetch(new Request("http://delayline.test/healthz"), unreachable, createExecutionContext());
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ ok: false, redis: "down" });
  });

  it("reports the age of the last scheduled() run", async () => {
    const prefixed = freshEnv("hz");
    const ctx = createExecutionContext();
    // Long past: its window is over, so the loop returns at once after the heartbeat.
    const scheduledTime = Date.now() - 120_000;
    await worker.scheduled(createScheduledController({ scheduledTime, cron: "* * * * *" }), prefixed, ctx);
    await waitOnExecutionContext(ctx);
    const res = await worker.fetch(new Request("http://delayline.test/healthz"), prefixed, createExecutionContext());
    const body = await res.json<{ lastTickAt: number; tickAgeMs: number }>();
    expect(body.lastTickAt).toBe(scheduledTime);
    expect(body.tickAgeMs).toBeGreaterThanOrEqual(120_000);
  });
});

describe("settings", () => {
  it("fail loudly, naming the bad setting", async () => {
    const bad = { ...env, TICK_POLL_MS: "10" };
    const res = await worker.fetch(new Request("http://delayline.test/healthz"), bad, createExecutionContext());
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect((await res.json<{ detail: string }>()).detail).toMatch(/TICK_POLL_MS/);
  });
});

describe("unknown routes", () => {
  it("answer 404 problem+json", async () => {
    const res = await self.fetch("http://delayline.test/nope");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
  });
});
