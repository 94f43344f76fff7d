/**
 * Deliveries of both signature schemes, as a receiver sees them on the wire
 * (the loopback receiver), checked by standardwebhooks' own verifier, which
 * runs in workerd, and by the client's Receiver. Stripe's verifier needs
 * Node's crypto for its synchronous verifyHeader: test/node/signature-interop.test.ts.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it } from "vitest";
import { Receiver, verifySignature } from "../../../src/client/index.js";
import { deliveries, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000;
const receiver = () => inject("receiverUrl");

const whsec = (fill: number) => `whsec_${btoa(String.fromCharCode(...new Uint8Array(32).fill(fill)))}`;

describe("signature schemes on the wire", () => {
  it("standard: webhook-id (the job id, the same at each retry), webhook-timestamp and webhook-signature verify with standardwebhooks", async () => {
    const secret = whsec(1);
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("standard");
    await d.queue.configureTopic(topic, { signatureScheme: "standard", signingSecret: secret, backoff: { type: "fixed", delay: 1_000 } });
    const { id } = await d.queue.enqueue({
      topic,
      payload: { n: 1, text: "héllo" },
      runAt: T0,
      // The job's own webhook-* headers never replace delayline's.
      target: { url: `${receiver()}/${topic}/statuses/500,200`, headers: { "webhook-id": "forged", "Webhook-Signature": "v1,forged" } },
    });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");

    const got = await deliveries(`/${topic}/`);
    expect(got.map((g) => g.headers["delayline-attempt"])).toEqual(["1", "2"]);
    for (const g of got) {
      expect(g.headers["webhook-id"]).toBe(id);
      expect(g.headers["webhook-timestamp"]).toMatch(/^\d+$/);
      expect(g.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(g.headers["delayline-signature"]).toBeUndefined();
      expect(new Webhook(secret).verify(g.body, g.headers)).toEqual({ n: 1, text: "héllo" });
      expect(() => new Webhook(whsec(2)).verify(g.body, g.headers)).toThrow(/No matching signature/);
      expect(() => new Webhook(secret).verify(`${g.body} `, g.headers)).toThrow(/No matching signature/);
      expect(await new Receiver({ currentSecret: secret }).verifyRequest(g.headers, g.body)).toBe(true);
      expect(await new Receiver({ currentSecret: secret, scheme: "delayline" }).verifyRequest(g.headers, g.body)).toBe(false);
    }
  });

  it("standard, rotating: signed with the new and the previous secrets; a receiver holding either one alone verifies", async () => {
    const [older, old, next] = [whsec(3), whsec(4), whsec(5)];
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("rotating");
    await d.queue.configureTopic(topic, { signatureScheme: "standard", signingSecret: next, previousSigningSecrets: [old, older] });
    const { id } = await d.queue.enqueue({ topic, payload: [1, 2, 3], runAt: T0, target: { url: `${receiver()}/${topic}/ok` } });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");
    const [got] = await deliveries(`/${topic}/`);
    expect(got!.headers["webhook-signature"]!.split(" ")).toHaveLength(3);
    for (const secret of [next, old, older]) {
      expect(new Webhook(secret).verify(got!.body, got!.headers)).toEqual([1, 2, 3]);
      expect(await new Receiver({ currentSecret: secret }).verifyRequest(got!.headers, got!.body)).toBe(true);
    }
    expect(() => new Webhook(whsec(6)).verify(got!.body, got!.headers)).toThrow(/No matching signature/);
  });

  it("standard from the deployment's SIGNING_SCHEME and SIGNING_SECRET, for a topic that sets neither", async () => {
    const secret = whsec(7);
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", SIGNING_SCHEME: "standard", SIGNING_SECRET: secret }, clock);
    const topic = uniqueTopic("deployment");
    const { id } = await d.queue.enqueue({ topic, payload: "x", runAt: T0, target: { url: `${receiver()}/${topic}/ok` } });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");
    const [got] = await deliveries(`/${topic}/`);
    expect(new Webhook(secret).verify(got!.body, got!.headers)).toBe("x");
  });

  it("a derived topic without a secret of its own signs as its root (secrets, previous ones and scheme); one with its own signs with its own", async () => {
    const [rootSecret, rootOld, own] = [whsec(8), whsec(9), "own-signing-secret-0123456789"];
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", SIGNING_SECRET: "deployment-secret-0123456789" }, clock);
    const root = uniqueTopic("root");
    await d.queue.configureTopic(root, { signatureScheme: "standard", signingSecret: rootSecret, previousSigningSecrets: [rootOld] });
    await d.queue.configureTopic(`${root}@own`, { signingSecret: own });
    const asRoot = await d.queue.enqueue({ topic: `${root}@_callbacks`, payload: { n: 1 }, runAt: T0, target: { url: `${receiver()}/${root}/as-root` } });
    const asOwn = await d.queue.enqueue({ topic: `${root}@own`, payload: { n: 2 }, runAt: T0, target: { url: `${receiver()}/${root}/own` } });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect([(await d.queue.get(asRoot.id))!.state, (await d.queue.get(asOwn.id))!.state]).toEqual(["succeeded", "succeeded"]);
    const [signedAsRoot] = await deliveries(`/${root}/as-root`);
    expect(signedAsRoot!.headers["webhook-id"]).toBe(asRoot.id);
    for (const secret of [rootSecret, rootOld]) expect(new Webhook(secret).verify(signedAsRoot!.body, signedAsRoot!.headers)).toEqual({ n: 1 });
    const [signedOwn] = await deliveries(`/${root}/own`);
    expect(await new Receiver({ currentSecret: own, scheme: "delayline" }).verifyRequest(signedOwn!.headers, signedOwn!.body)).toBe(true);
    expect(await new Receiver({ currentSecret: rootSecret }).verifyRequest(signedOwn!.headers, signedOwn!.body)).toBe(false);
  });

  it("delayline, rotating: one t= and a v1= per secret, the current one first; either secret alone verifies", async () => {
    const [old, next] = ["old-signing-secret-0123456789", "new-signing-secret-0123456789"];
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
    const topic = uniqueTopic("delayline");
    await d.queue.configureTopic(topic, { signingSecret: next, previousSigningSecrets: [old] });
    const { id } = await d.queue.enqueue({ topic, payload: { a: 1 }, runAt: T0, target: { url: `${receiver()}/${topic}/ok` } });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");
    const [got] = await deliveries(`/${topic}/`);
    const header = got!.headers["delayline-signature"]!;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(got!.headers["webhook-signature"]).toBeUndefined();
    for (const secret of [next, old]) {
      expect(await verifySignature({ header, body: got!.body, secrets: secret })).toEqual({ ok: true });
      expect(await new Receiver({ currentSecret: secret }).verify(header, got!.body)).toBe(true);
    }
    expect(await verifySignature({ header, body: got!.body, secrets: "another-secret-0123456789" })).toEqual({ ok: false, reason: "mismatch" });
  });
});
