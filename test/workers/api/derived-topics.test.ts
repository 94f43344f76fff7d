import { describe, expect, it } from "vitest";
import { call, isolatedEnv } from "./helpers.js";

describe("topics derived from a topic (`<topic>@<name>`)", () => {
  it("read like any topic and say where they come from; a topic says it is one", async () => {
    const env = isolatedEnv();
    const root = await call(env, "/v1/topics/orders");
    expect([root.status, root.body.kind, root.body.parent]).toEqual([200, "topic", null]);
    const callbacks = await call(env, "/v1/topics/orders@_callbacks");
    expect([callbacks.status, callbacks.body.topic, callbacks.body.kind, callbacks.body.parent]).toEqual([200, "orders@_callbacks", "callbacks", "orders"]);
    const sub = await call(env, "/v1/topics/orders@billing");
    expect([sub.status, sub.body.kind, sub.body.parent]).toEqual([200, "subscription", "orders"]);
    for (const path of ["/v1/topics/orders@_callbacks/jobs", "/v1/topics/orders@billing/dead", "/v1/topics/orders@billing/jobs?state=inflight"]) {
      expect([path, (await call(env, path)).status]).toEqual([path, 200]);
    }
    await call(env, "/v1/topics/orders@_callbacks/pause", { method: "POST" });
    expect((await call(env, "/v1/topics/orders@_callbacks")).body.settings.paused).toBe(true);
  });

  it("take no jobs of their own: no enqueue, no pull claims, no url, mode or webhook secret", async () => {
    const env = isolatedEnv();
    const enqueue = await call(env, "/v1/jobs", { body: { topic: "orders@_callbacks", payload: 1 } });
    expect([enqueue.status, enqueue.body.errors[0].path]).toEqual([422, "topic"]);
    const claim = await call(env, "/v1/topics/orders@_callbacks/claim", { body: {} });
    expect([claim.status, claim.body.detail]).toEqual([409, expect.stringMatching(/derived from orders: its jobs are pushed/)]);
    const put = await call(env, "/v1/topics/orders@_callbacks", {
      method: "PUT",
      body: { url: "http://127.0.0.1:9/x", mode: "pull", webhookSecret: "w".repeat(32) },
    });
    expect([put.status, put.body.errors.map((e: { path: string }) => e.path)]).toEqual([422, ["mode", "url", "webhookSecret"]]);
    // What tunes its deliveries it takes.
    const tuned = await call(env, "/v1/topics/orders@_callbacks", { method: "PUT", body: { maxAttempts: 12, concurrency: 4 } });
    expect([tuned.status, tuned.body.settings.maxAttempts, tuned.body.settings.concurrency]).toEqual([200, 12, 4]);
  });

  it("a subscription's topic is changed only through its subscription (409), and names outside the grammar are 422", async () => {
    const env = isolatedEnv();
    for (const method of ["PUT", "DELETE"]) {
      const r = await call(env, "/v1/topics/orders@billing", { method, ...(method === "PUT" ? { body: { maxAttempts: 2 } } : {}) });
      expect([method, r.status, r.body.detail]).toEqual([method, 409, expect.stringContaining("/v1/topics/orders/subscriptions/billing")]);
    }
    for (const bad of ["orders@_other", "orders@a@b", "orders@", "@billing"]) {
      expect([bad, (await call(env, `/v1/topics/${encodeURIComponent(bad)}`)).status]).toEqual([bad, 422]);
    }
  });
});
