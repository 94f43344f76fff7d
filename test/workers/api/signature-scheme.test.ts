/**
 * A topic's signatureScheme and its secrets at the API's edge: whsec_ secrets
 * are checked before Redis is asked, and the view shows the scheme in force
 * but never a secret.
 */
import { describe, expect, it } from "vitest";
import { hmacHex } from "../../../src/protocol/hmac.js";
import { deliverySigner, signatureHeaders, signPayload, signStandard } from "../../../src/protocol/sign.js";
import { parseSignature, verifySignature, verifyStandardSignature } from "../../../src/protocol/verify.js";
import { call, isolatedEnv } from "./helpers.js";

const whsec = (bytes: number, fill = 7) => `whsec_${btoa(String.fromCharCode(...new Uint8Array(bytes).fill(fill)))}`;

// Nothing listens on port 9 of loopback: a request that reached Redis would be 503, not 422.
const noRedis = () => isolatedEnv({ UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" });

describe("signatureScheme and whsec_ secrets", () => {
  it("refuses, as 422 problem+json without asking Redis, a non-whsec_ secret with standard, and a malformed whsec_ one with either scheme", async () => {
    const env = noRedis();
    const cases: Array<[unknown, string]> = [
      [{ signatureScheme: "standard", signingSecret: "plain-secret-0123456789" }, "signingSecret"],
      [
        { signatureScheme: "standard", signingSecret: whsec(32), previousSigningSecrets: [whsec(32, 1), "plain-secret-0123456789"] },
        "previousSigningSecrets[1]",
      ],
      [{ signatureScheme: "standard", signingSecret: whsec(16) }, "signingSecret"],
      [{ signatureScheme: "standard", signingSecret: whsec(65) }, "signingSecret"],
      [{ signingSecret: "whsec_not*base64*at*all" }, "signingSecret"],
      [{ signingSecret: `${whsec(32)}=` }, "signingSecret"],
      [{ signatureScheme: "delayline", previousSigningSecrets: ["whsec_tooShort="] }, "previousSigningSecrets[0]"],
      [{ previousSigningSecrets: [] }, "previousSigningSecrets"],
      [{ previousSigningSecrets: [whsec(32, 1), whsec(32, 2), whsec(32, 3), whsec(32, 4)] }, "previousSigningSecrets"],
      [{ signatureScheme: "stripe" }, "signatureScheme"],
    ];
    for (const [body, path] of cases) {
      const res = await call(env, "/v1/topics/t", { method: "PUT", body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
  });

  it("takes a whsec_ secret with rotation secrets; the view shows the scheme in force and no secret; null falls back to SIGNING_SCHEME", async () => {
    const env = isolatedEnv();
    const current = whsec(32, 9);
    const previous = whsec(24, 8);
    const put = await call(env, "/v1/topics/sw", {
      method: "PUT",
      body: { signatureScheme: "standard", signingSecret: current, previousSigningSecrets: [previous] },
    });
    expect(put.status).toBe(200);
    expect(put.body.settings).toMatchObject({ signatureScheme: "standard", hasSigningSecret: true, hasPreviousSigningSecrets: true });
    expect(JSON.stringify(put.body)).not.toContain(current.slice(6, 20));
    expect(JSON.stringify(put.body)).not.toContain(previous.slice(6, 20));
    // A delayline-scheme topic may hold a whsec_ secret too (used as its text, as Stripe does).
    const back = await call(env, "/v1/topics/sw", { method: "PUT", body: { signatureScheme: null, previousSigningSecrets: null } });
    expect(back.body.settings).toMatchObject({ signatureScheme: "delayline", hasSigningSecret: true, hasPreviousSigningSecrets: false });

    const standardDeployment = isolatedEnv({ SIGNING_SCHEME: "standard" });
    const dflt = await call(standardDeployment, "/v1/topics/sw", { method: "PUT", body: { maxAttempts: 2 } });
    expect(dflt.body.settings.signatureScheme).toBe("standard");
    const own = await call(standardDeployment, "/v1/topics/sw", { method: "PUT", body: { signatureScheme: "delayline" } });
    expect(own.body.settings.signatureScheme).toBe("delayline");
  });
});

describe("the client's signature functions", () => {
  it("verifyStandardSignature says why it refuses: missing, malformed, expired, mismatch", async () => {
    const secret = whsec(32, 3);
    const h = await signatureHeaders("standard", [secret], { id: "t.01JD8X3Q5T4W9Y7ZC2B6N0M1KR", body: "{}", timestampSec: 1_800_000_000 });
    const base = {
      id: h["webhook-id"],
      timestamp: h["webhook-timestamp"],
      signature: h["webhook-signature"],
      body: "{}",
      secrets: secret,
      nowSec: 1_800_000_100,
    };
    expect(await verifyStandardSignature(base)).toEqual({ ok: true });
    expect(await verifyStandardSignature({ ...base, body: new TextEncoder().encode("{}") as Uint8Array<ArrayBuffer> })).toEqual({ ok: true });
    expect(await verifyStandardSignature({ ...base, signature: undefined })).toEqual({ ok: false, reason: "missing" });
    expect(await verifyStandardSignature({ ...base, timestamp: "1.8e9" })).toEqual({ ok: false, reason: "malformed" });
    expect(await verifyStandardSignature({ ...base, signature: "v1a,abc" })).toEqual({ ok: false, reason: "malformed" });
    expect(await verifyStandardSignature({ ...base, nowSec: 1_800_000_301 })).toEqual({ ok: false, reason: "expired" });
    expect(await verifyStandardSignature({ ...base, id: "t.01JD8X3Q5T4W9Y7ZC2B6N0M1KS" })).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifyStandardSignature({ ...base, secrets: [whsec(32, 4), secret] })).toEqual({ ok: true });
    expect(await signatureHeaders("standard", [], { id: "x", body: "" })).toEqual({});
  });

  it("a delivery signer, its keys imported once, signs each of many deliveries as signPayload and signStandard do, with every secret", async () => {
    const plain = ["current-secret-0123456789", "previous-secret-0123456789"];
    const standard = [whsec(32, 5), whsec(24, 6)];
    const delayline = deliverySigner("delayline", plain);
    const webhooks = deliverySigner("standard", standard);
    const deliveries = Array.from({ length: 20 }, (_, i) => ({
      id: `t.01JD8X3Q5T4W9Y7ZC2B6N0M1K${i % 10}`,
      body: JSON.stringify({ i }),
      timestampSec: 1_800_000_000 + i,
    }));
    // Side by side, as a chunk's deliveries start: the first ones wait for the keys, the rest find them.
    const signed = await Promise.all(deliveries.map(async (d) => [await delayline(d), await webhooks(d)] as const));
    for (const [i, d] of deliveries.entries()) {
      expect(signed[i]![0]).toEqual({ "delayline-signature": await signPayload(plain, d.body, d.timestampSec) });
      expect(signed[i]![1]).toEqual({
        "webhook-id": d.id,
        "webhook-timestamp": String(d.timestampSec),
        "webhook-signature": await signStandard(standard, d.id, d.timestampSec, d.body),
      });
    }
    expect(
      await verifySignature({ header: signed[3]![0]["delayline-signature"], body: deliveries[3]!.body, secrets: plain[1]!, nowSec: 1_800_000_003 }),
    ).toEqual({
      ok: true,
    });
    expect(await deliverySigner("delayline", [])(deliveries[0]!)).toEqual({});
  });

  it("parseSignature keeps every v1= (and skips Stripe's v0=); a malformed one makes the header malformed", async () => {
    const header = await signPayload(["a-secret-0123456789", "b-secret-0123456789"], "body", 1_800_000_000);
    expect(parseSignature(header)!.v1).toHaveLength(2);
    expect(parseSignature(`${header},v0=00`)!.v1).toHaveLength(2);
    expect(parseSignature(`${header},v1=xyz`)).toBeNull();
    expect(await verifySignature({ header, body: "body", secrets: "b-secret-0123456789", nowSec: 1_800_000_000 })).toEqual({ ok: true });
  });

  it("webhook ingest accepts a timestamped header with several v1=, one of them the topic's, and deduplicates it in any order", async () => {
    const env = isolatedEnv();
    const secret = "webhook-secret-0123456789";
    await call(env, "/v1/topics/multi", { method: "PUT", body: { webhookSecret: secret } });
    const body = '{"event":"paid"}';
    const t = Math.floor(Date.now() / 1000);
    const [ours, other] = [await hmacHex(secret, `${t}.${body}`), await hmacHex("someone-else-0123456789", `${t}.${body}`)];
    const send = (signature: string) =>
      call(env, "/v1/hooks/multi", { raw: body, token: null, headers: { "content-type": "application/json", "x-delayline-signature": signature } });
    const first = await send(`t=${t},v1=${other},v1=${ours}`);
    expect(first.status).toBe(202);
    expect((await send(`t=${t},v1=${ours},v1=${other}`)).body).toEqual({ id: first.body.id, deduplicated: true });
    expect((await send(`t=${t},v1=${other}`)).status).toBe(401);
  });
});
