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
import { app } from "../../src/producer/app.js";
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
  const api = async (method: string, path: string, body: unknown) => {
    const res = await app.request(
      path,
      { method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) },
      env,
    );
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return (await res.json()) as Record<string, unknown>;
  };
  const s = settings(env);
  /** Delivers the topic's due jobs, as one chunk of the tick would. */
  const deliver = (topic: string) => runChunk({ queue: queueFromSettings(s), settings: s, topic, max: 10, log: () => {} });
  return { api, deliver };
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
