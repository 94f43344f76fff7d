/**
 * Interoperability of delivery signatures with the verifiers receivers
 * actually use: Stripe's `webhooks.signature.verifyHeader` for the default
 * `delayline` scheme (its synchronous form needs Node's crypto, so this runs
 * in Node rather than workerd) and standardwebhooks' `Webhook.verify` for
 * `standard`. The jobs go the whole way but for the tick's loop: configured
 * and enqueued through the API, claimed and delivered by a chunk
 * (src/tick/run-chunk.ts) to a loopback receiver, against a real Redis.
 */
import Stripe from "stripe";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { settings, type Env } from "../../src/env.js";
import { Handlers } from "../../src/handlers/registry.js";
import { createApp } from "../../src/producer/app.js";
import { queueFromSettings } from "../../src/queue/from-settings.js";
import { runChunk } from "../../src/tick/run-chunk.js";
import { startReceiver, type Delivery } from "../receiver.js";

const TOKEN = "interop-api-token-0123456789";
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

// No request is ever sent: the client is only the way to Stripe's verifier.
const stripe = new Stripe("sk_test_never_used", { maxNetworkRetries: 0, telemetry: false });
const verifyHeader = (body: string, header: string, secret: string) => stripe.webhooks.signature!.verifyHeader(body, header, secret);

/** A deployment of its own (fresh key prefix) on the test Redis. */
function deployment(overrides: Partial<Env> = {}) {
  const env: Env = {
    UPSTASH_REDIS_REST_URL: inject("bridgeUrl"),
    UPSTASH_REDIS_REST_TOKEN: inject("bridgeToken"),
    DELAYLINE_TOKEN: TOKEN,
    DELAYLINE_PREFIX: `i${crypto.randomUUID().slice(0, 8)}:{interop}`,
    ALLOW_PRIVATE_TARGETS: "true",
    ...overrides,
  };
  const app = createApp();
  const api = async (method: string, path: string, body: unknown) => {
    const res = await app.request(
      path,
      {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      },
      env,
    );
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return (await res.json()) as Record<string, unknown>;
  };
  const s = settings(env);
  /** Delivers the topic's due jobs, as one chunk of the tick would. */
  const deliver = (topic: string) => runChunk({ queue: queueFromSettings(s), settings: s, handlers: new Handlers(), topic, max: 10, log: () => {} });
  /** POST /v1/hooks/:topic without a token: the status and JSON answer. */
  const hook = async (topic: string, body: string, headers: Record<string, string>) => {
    const res = await app.request(`/v1/hooks/${topic}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }, env);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  /** The topic's scheduled jobs. */
  const scheduled = async (topic: string) => (await api("GET", `/v1/topics/${topic}`, undefined)).scheduled;
  return { api, deliver, hook, scheduled };
}

/** Enqueues one job for the receiver, delivers it and returns what the receiver got. */
async function deliveredOnce(d: ReturnType<typeof deployment>, topic: string, payload: unknown): Promise<Delivery> {
  const path = `/${topic}-${crypto.randomUUID().slice(0, 8)}/ok`;
  await d.api("POST", "/v1/jobs", { topic, payload, target: { url: `${receiver.url}${path}` } });
  expect((await d.deliver(topic)).outcomes.ack).toBe(1);
  const got = (await (await fetch(`${receiver.url}/__deliveries?prefix=${encodeURIComponent(path)}`)).json()) as Delivery[];
  expect(got).toHaveLength(1);
  return got[0]!;
}

const whsec = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString("base64")}`;

describe("the default delayline scheme and Stripe's verifier", () => {
  it("Stripe's verifyHeader accepts Delayline-Signature with the topic's secret, and refuses another secret or a changed body", async () => {
    const d = deployment();
    const secret = "topic-signing-secret-0123456789";
    await d.api("PUT", "/v1/topics/stripe-one", { signingSecret: secret });
    const got = await deliveredOnce(d, "stripe-one", { amount: 42, note: "héllo" });
    const header = got.headers["delayline-signature"]!;
    expect(() => verifyHeader(got.body, header, secret)).not.toThrow();
    expect(() => verifyHeader(got.body, header, "another-secret-0123456789")).toThrow(/No signatures found matching/);
    expect(() => verifyHeader(got.body.replace("42", "43"), header, secret)).toThrow(/No signatures found matching/);
  });

  it("while rotating, a receiver holding only the previous or only the new secret verifies with Stripe's verifier", async () => {
    const d = deployment({ SIGNING_SECRET: "deployment-secret-0123456789" });
    const [old, next] = ["old-signing-secret-0123456789", "new-signing-secret-0123456789"];
    await d.api("PUT", "/v1/topics/stripe-rotating", { signingSecret: next, previousSigningSecrets: [old] });
    const got = await deliveredOnce(d, "stripe-rotating", [1, 2]);
    const header = got.headers["delayline-signature"]!;
    for (const secret of [next, old]) expect(() => verifyHeader(got.body, header, secret)).not.toThrow();
    expect(() => verifyHeader(got.body, header, "deployment-secret-0123456789")).toThrow(/No signatures found matching/);
  });
});

describe("the standard scheme and standardwebhooks' verifier", () => {
  it("Webhook.verify accepts the delivery with the topic's whsec_ secret; the webhook-id is the job id", async () => {
    const d = deployment();
    const secret = whsec(1);
    await d.api("PUT", "/v1/topics/sw-one", { signatureScheme: "standard", signingSecret: secret });
    const got = await deliveredOnce(d, "sw-one", { type: "invoice.paid", data: { id: 7 } });
    expect(got.headers["webhook-id"]).toBe(got.headers["delayline-job-id"]);
    expect(new Webhook(secret).verify(got.body, got.headers)).toEqual({ type: "invoice.paid", data: { id: 7 } });
    expect(() => new Webhook(whsec(2)).verify(got.body, got.headers)).toThrow(/No matching signature/);
  });

  it("while rotating, a receiver holding only the old or only the new secret verifies", async () => {
    const d = deployment({ SIGNING_SCHEME: "standard" });
    const [old, next] = [whsec(3), whsec(4)];
    await d.api("PUT", "/v1/topics/sw-rotating", { signingSecret: next, previousSigningSecrets: [old] });
    const got = await deliveredOnce(d, "sw-rotating", "text payload");
    expect(got.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(old).verify(got.body, got.headers)).toBe("text payload");
    expect(new Webhook(next).verify(got.body, got.headers)).toBe("text payload");
    expect(() => new Webhook(whsec(5)).verify(got.body, got.headers)).toThrow(/No matching signature/);
  });
});

describe("webhook ingest verifies what Stripe's and standardwebhooks' libraries sign", () => {
  it("Stripe: a header from generateTestHeaderString is accepted; Stripe's retry of the event (signed again) and a replay with extra v1s make no second job", async () => {
    const d = deployment();
    const secret = "whsec_stripe_test_secret_0123456789";
    await d.api("PUT", "/v1/topics/stripe-in", { webhookSecret: secret });
    const payload = JSON.stringify({ id: "evt_1Q2w3E4r5T6y", object: "event", type: "invoice.paid", data: { object: { id: "in_1" } } });
    const now = Math.floor(Date.now() / 1000);
    const header = stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now - 10 });
    const first = await d.hook("stripe-in", payload, { "stripe-signature": header });
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    for (const again of [
      header,
      `${header},v1=${"0".repeat(64)}`,
      `v1=${"f".repeat(64)},${header}`,
      stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now }),
    ]) {
      expect(await d.hook("stripe-in", payload, { "stripe-signature": again }), again).toEqual({
        status: 202,
        body: { id: first.body.id, deduplicated: true },
      });
    }
    const other = JSON.stringify({ id: "evt_9Z8x7C6v5B4n", object: "event", type: "invoice.paid" });
    const second = await d.hook("stripe-in", other, { "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: other, secret }) });
    expect(second.body.deduplicated).toBe(false);
    // Another secret, a changed body, an expired timestamp: 401.
    const bad = [
      { "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload, secret: "whsec_another_secret_0123456789" }) },
      { "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: payload.replace("in_1", "in_2"), secret }) },
      { "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now - 301 }) },
    ];
    for (const headers of bad) expect((await d.hook("stripe-in", payload, headers)).status, headers["stripe-signature"]).toBe(401);
    expect(await d.scheduled("stripe-in")).toBe(2);
  });

  it("Standard Webhooks: Webhook.sign's headers are accepted; a retry with the same webhook-id (signed again) is no second job; a bad signature is 401", async () => {
    const d = deployment();
    const secret = whsec(9);
    await d.api("PUT", "/v1/topics/sw-in", { webhookSecret: secret });
    const wh = new Webhook(secret);
    const payload = JSON.stringify({ type: "user.created", data: { id: 42 } });
    const signed = (id: string, at: Date, body = payload) => ({
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": wh.sign(id, at, body),
    });
    const headers = signed("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", new Date(Date.now() - 20_000));
    const first = await d.hook("sw-in", payload, headers);
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    for (const again of [
      headers,
      signed("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", new Date()),
      { ...headers, "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")} ${headers["webhook-signature"]}` },
      { ...headers, "webhook-signature": `${headers["webhook-signature"]}  v1,AAAA` },
    ]) {
      expect(await d.hook("sw-in", payload, again), JSON.stringify(again)).toEqual({ status: 202, body: { id: first.body.id, deduplicated: true } });
    }
    // The kept headers: the message id and its timestamp.
    const job = await d.api("GET", `/v1/jobs/${first.body.id}`, undefined);
    expect(job.webhookHeaders).toEqual({ "webhook-id": headers["webhook-id"], "webhook-timestamp": headers["webhook-timestamp"] });
    const second = await d.hook("sw-in", payload, signed("msg_2KWPBgLlAfxdpx2AI54pPJ85f4X", new Date()));
    expect(second.body.deduplicated).toBe(false);
    const bad = [
      signed("msg_other", new Date(), payload.replace("42", "43")),
      { ...signed("msg_other2", new Date()), "webhook-id": "msg_other3" },
      {
        "webhook-id": "msg_x",
        "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "webhook-signature": new Webhook(whsec(10)).sign("msg_x", new Date(), payload),
      },
      signed("msg_old", new Date(Date.now() - 301_000)),
    ];
    for (const h of bad) expect((await d.hook("sw-in", payload, h)).status, JSON.stringify(h)).toBe(401);
    expect(await d.scheduled("sw-in")).toBe(2);
  });
});
