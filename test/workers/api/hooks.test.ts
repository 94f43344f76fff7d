/**
 * Webhook ingest keeps the provider's event headers (src/producer/webhook-headers.ts)
 * in the job's `webhookHeaders`: shown by GET /v1/jobs/:id, handed to a code
 * handler in its JobContext, sent on by the http handler; bounded in size.
 */
import { inject, describe, expect, it } from "vitest";
import type { JobContext } from "../../../src/handlers/registry.js";
import { runChunk } from "../../../src/tick/run-chunk.js";
import { tickDeployment, uniqueTopic } from "../tick/helpers.js";
import { call, deliveries } from "./helpers.js";

const github = {
  "content-type": "application/json",
  "x-github-event": "pull_request",
  "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
  "x-github-hook-id": "292430182",
  "user-agent": "GitHub-Hookshot/044aadd",
  "x-forwarded-for": "192.0.2.1",
  "x-hub-signature-256": "sha256=not-kept",
};

describe("webhook ingest keeps the provider's event headers", () => {
  it("a code handler receives X-GitHub-Event and the delivery id in webhookHeaders; other headers are not kept", async () => {
    const d = tickDeployment();
    const topic = uniqueTopic("gh-handler");
    const seen: JobContext[] = [];
    d.handlers.define(topic, (job) => {
      seen.push(job);
    });
    const r = await call(d.env, `/v1/hooks/${topic}`, { raw: '{"action":"opened"}', headers: github });
    expect(r.status).toBe(202);
    const kept = { "x-github-event": "pull_request", "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "x-github-hook-id": "292430182" };
    expect((await call(d.env, `/v1/jobs/${r.body.id}`)).body).toMatchObject({ payload: { action: "opened" }, webhookHeaders: kept });
    expect((await call(d.env, `/v1/jobs/${r.body.id}`)).body.webhookHeaders).toEqual(kept);

    expect((await runChunk({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic, max: 10, log: () => {} })).outcomes.ack).toBe(1);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.webhookHeaders).toEqual(kept);
    expect(seen[0]!.webhookHeaders?.["x-github-event"]).toBe("pull_request");
    expect(seen[0]!.payload).toEqual({ action: "opened" });
    // Still there once finished.
    expect((await call(d.env, `/v1/jobs/${r.body.id}`)).body).toMatchObject({ state: "succeeded", webhookHeaders: kept });
  });

  it("an ordinary job has no webhookHeaders; the http handler sends an ingested job's on with the delivery", async () => {
    const d = tickDeployment({ ALLOW_PRIVATE_TARGETS: "true" });
    const topic = uniqueTopic("gh-http");
    const path = `/${topic}/ok`;
    await call(d.env, `/v1/topics/${topic}`, { method: "PUT", body: { url: `${inject("receiverUrl")}${path}` } });
    const ordinary = await call(d.env, "/v1/jobs", { body: { topic, payload: { n: 1 } } });
    expect((await call(d.env, `/v1/jobs/${ordinary.body.id}`)).body).not.toHaveProperty("webhookHeaders");
    const hooked = await call(d.env, `/v1/hooks/${topic}`, { raw: '{"n":2}', headers: { ...github, "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W" } });
    expect(hooked.status).toBe(202);
    expect((await runChunk({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic, max: 10, log: () => {} })).outcomes.ack).toBe(2);
    const got = await deliveries(path);
    const byJob = new Map(got.map((g) => [g.headers["delayline-job-id"], g]));
    const sent = byJob.get(hooked.body.id)!;
    expect(sent.headers["x-github-event"]).toBe("pull_request");
    expect(sent.headers["webhook-id"]).toBe("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W");
    expect(sent.headers["x-forwarded-for"]).toBeUndefined();
    expect(sent.headers["user-agent"]).toBe("delayline");
    expect(byJob.get(ordinary.body.id)!.headers["x-github-event"]).toBeUndefined();
  });

  it(`a kept header over 256 bytes is refused with 431 naming it, and nothing is stored; 256 bytes are kept`, async () => {
    const d = tickDeployment();
    const topic = uniqueTopic("gh-big");
    const big = await call(d.env, `/v1/hooks/${topic}`, { raw: "{}", headers: { ...github, "x-github-event": "e".repeat(257) } });
    expect(big.status).toBe(431);
    expect(big.headers.get("content-type")).toBe("application/problem+json");
    expect(big.body.detail).toBe("the x-github-event header is 257 bytes; webhook ingest keeps headers of at most 256 bytes");
    expect((await call(d.env, `/v1/topics/${topic}`)).body.scheduled ?? 0).toBe(0);
    const edge = await call(d.env, `/v1/hooks/${topic}`, { raw: "{}", headers: { ...github, "x-event-id": "x".repeat(256) } });
    expect(edge.status).toBe(202);
    expect((await call(d.env, `/v1/jobs/${edge.body.id}`)).body.webhookHeaders["x-event-id"]).toHaveLength(256);
  });
});
