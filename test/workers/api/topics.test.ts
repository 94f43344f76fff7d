import { describe, expect, it } from "vitest";
import { call, isolatedEnv } from "./helpers.js";

async function hmac(secret: string, body: string | Uint8Array) {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, typeof body === "string" ? enc.encode(body) : body));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("topics", () => {
  it("PUT sets settings (secrets write-only), GET reads them with stats, pause and resume", async () => {
    const env = isolatedEnv();
    const put = await call(env, "/v1/topics/mail", {
      method: "PUT",
      body: {
        ratePerSec: 20,
        burst: 5,
        concurrency: 10,
        maxAttempts: 3,
        backoff: { type: "schedule", delays: ["5s", "30s", "60s"] },
        url: "https://example.com/hook",
        timeoutMs: 5_000,
        signingSecret: "s".repeat(32),
        webhookSecret: "w".repeat(32),
      },
    });
    expect(put.status).toBe(200);
    expect(put.body.settings).toEqual({
      ratePerSec: 20,
      burst: 5,
      concurrency: 10,
      weight: 1,
      maxAttempts: 3,
      backoff: { type: "schedule", delays: [5_000, 30_000, 60_000] },
      paused: false,
      mode: "push",
      overflow: "reject",
      keepExpired: false,
      url: "https://example.com/hook",
      timeoutMs: 5_000,
      signatureScheme: "delayline",
      hasSigningSecret: true,
      hasPreviousSigningSecrets: false,
      hasWebhookSecret: true,
    });
    expect(JSON.stringify(put.body)).not.toMatch(/sss|www/);
    await call(env, "/v1/jobs", { body: { topic: "mail", payload: 1 } });
    const paused = await call(env, "/v1/topics/mail/pause", { method: "POST" });
    expect(paused.body.settings.paused).toBe(true);
    expect((await call(env, "/v1/topics/mail/resume", { method: "POST" })).body.settings.paused).toBe(false);
    const got = await call(env, "/v1/topics/mail");
    expect(got.body).toMatchObject({ topic: "mail", scheduled: 1, ready: 1, inflight: 0, dead: 0, counters: { dispatched: 0 } });
    const list = await call(env, "/v1/topics");
    expect(list.body.topics.map((t: { topic: string }) => t.topic)).toEqual(["mail"]);
    const reset = await call(env, "/v1/topics/mail", { method: "PUT", body: { maxAttempts: null, signingSecret: null } });
    expect(reset.body.settings).toMatchObject({ maxAttempts: 5, hasSigningSecret: false });
    expect((await call(env, "/v1/topics/mail", { method: "PUT", body: { ratePerSec: -1 } })).status).toBe(422);
    expect((await call(env, "/v1/topics/bad%20topic")).status).toBe(422);
  });

  it("PUT sets a weight of 1–100, shown by GET and the listing; null clears it back to 1", async () => {
    const env = isolatedEnv();
    expect((await call(env, "/v1/topics/heavy", { method: "PUT", body: { weight: 3 } })).body.settings.weight).toBe(3);
    expect((await call(env, "/v1/topics/heavy")).body.settings.weight).toBe(3);
    expect((await call(env, "/v1/topics/heavy", { method: "PUT", body: { concurrency: 4 } })).body.settings).toMatchObject({ weight: 3, concurrency: 4 });
    expect((await call(env, "/v1/topics")).body.topics.map((t: { settings: { weight: number } }) => t.settings.weight)).toEqual([3]);
    for (const weight of [0, 101, 1.5, "3"]) {
      const refused = await call(env, "/v1/topics/heavy", { method: "PUT", body: { weight } });
      expect(refused.status, String(weight)).toBe(422);
    }
    expect((await call(env, "/v1/topics/heavy")).body.settings.weight).toBe(3);
    expect((await call(env, "/v1/topics/heavy", { method: "PUT", body: { weight: 100 } })).body.settings.weight).toBe(100);
    expect((await call(env, "/v1/topics/heavy", { method: "PUT", body: { weight: null } })).body.settings.weight).toBe(1);
    // A topic that never set one shows the default.
    expect((await call(env, "/v1/topics/light", { method: "PUT", body: { maxAttempts: 2 } })).body.settings.weight).toBe(1);
  });
});

describe("pull consumers and dead letters", () => {
  it("claim, ack, nack to retry and to dead; stale attempts are 409; replay and purge", async () => {
    const env = isolatedEnv();
    expect((await call(env, "/v1/topics/work/claim", { body: {} })).status).toBe(409);
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", backoff: { type: "fixed", delay: 0 } } });
    const ids = (
      await call(env, "/v1/jobs/batch", { body: { jobs: [1, 2, 3].map((n) => ({ topic: "work", payload: { n }, maxAttempts: 2 })) } })
    ).body.jobs.map((j: { id: string }) => j.id);
    const claim = await call(env, "/v1/topics/work/claim", { body: { max: 10, leaseMs: 60_000 } });
    expect(claim.body.jobs.map((j: { id: string; attempt: number }) => [j.id, j.attempt])).toEqual(ids.map((id: string) => [id, 1]));
    expect(claim.body.jobs[0]).toMatchObject({ payload: { n: 1 }, dueAt: expect.any(String), leaseExpiresAt: expect.any(String) });
    // An empty body takes the defaults.
    expect((await call(env, "/v1/topics/work/claim", { method: "POST" })).body.jobs).toEqual([]);

    expect((await call(env, `/v1/jobs/${ids[0]}/ack`, { body: { attempt: 1 } })).body).toEqual({ id: ids[0], state: "succeeded" });
    expect((await call(env, `/v1/jobs/${ids[0]}/ack`, { body: { attempt: 1 } })).status).toBe(409);
    expect((await call(env, `/v1/jobs/${ids[1]}/nack`, { body: { attempt: 1, error: "busy" } })).body).toEqual({ id: ids[1], state: "scheduled" });
    expect((await call(env, `/v1/jobs/${ids[2]}/nack`, { body: { attempt: 1, error: "bad input", permanent: true } })).body).toEqual({
      id: ids[2],
      state: "dead",
    });
    expect((await call(env, `/v1/jobs/${ids[1]}/ack`, { body: { attempt: 1 } })).status).toBe(409);
    const again = await call(env, "/v1/topics/work/claim", { body: { max: 10 } });
    expect(again.body.jobs.map((j: { id: string; attempt: number }) => [j.id, j.attempt])).toEqual([[ids[1], 2]]);
    expect((await call(env, `/v1/jobs/${ids[1]}/nack`, { body: { attempt: 2, error: "still busy" } })).body.state).toBe("dead");
    expect((await call(env, `/v1/jobs/${ids[1]}`)).body).toMatchObject({ state: "dead", attempts: 2, lastError: "still busy" });

    const dead = await call(env, "/v1/topics/work/dead?limit=1");
    expect(dead.body.entries).toEqual([
      { id: ids[1], attempts: 2, lastError: "still busy", failedAt: expect.any(String), payload: { n: 2 }, history: expect.any(Array) },
    ]);
    // The repeated ack of attempt 1 (a 409) is no attempt of its own.
    expect(dead.body.entries[0].history.map((h: { attempt: number; outcome: string; error?: string }) => [h.attempt, h.outcome, h.error])).toEqual([
      [1, "retry", "busy"],
      [2, "dead", "still busy"],
    ]);
    expect(dead.body.nextCursor).toEqual(expect.any(String));
    expect((await call(env, `/v1/topics/work/dead?cursor=${dead.body.nextCursor}`)).body.entries.map((e: { id: string }) => e.id)).toEqual([ids[2]]);
    expect((await call(env, "/v1/topics/work/dead?cursor=1")).status).toBe(422);
    expect((await call(env, "/v1/topics/work/dead?limit=0")).status).toBe(422);
    expect((await call(env, "/v1/topics/work/dead/replay", { body: { ids: [ids[2]] } })).body).toEqual({ replayed: 1, notFound: [], nextCursor: null });
    expect((await call(env, "/v1/topics/work/dead/replay", { body: {} })).status).toBe(422);
    const replayed = await call(env, "/v1/topics/work/claim", { body: { max: 10 } });
    expect(replayed.body.jobs.map((j: { id: string; attempt: number }) => [j.id, j.attempt])).toEqual([[ids[2], 1]]);
    expect((await call(env, "/v1/topics/work/dead", { method: "DELETE" })).body).toEqual({ purged: 1, nextCursor: null });
    expect((await call(env, "/v1/topics/work")).body.counters).toEqual({ dispatched: 5, succeeded: 1, retried: 1, dead: 2, dropped: 0, expired: 0 });
  });
});

describe("POST /v1/topics/:topic/dead/replay", () => {
  it("answers which ids were not among the dead letters: unknown, not dead, another topic's, already replayed; each once", async () => {
    const env = isolatedEnv();
    await call(env, "/v1/topics/work", { method: "PUT", body: { mode: "pull", maxAttempts: 1 } });
    const [dead, scheduled] = (await call(env, "/v1/jobs/batch", { body: { jobs: [{ topic: "work" }, { topic: "work", delay: "1h" }] } })).body.jobs.map(
      (j: { id: string }) => j.id,
    );
    const [claimed] = (await call(env, "/v1/topics/work/claim", { body: { max: 1 } })).body.jobs;
    expect(claimed.id).toBe(dead);
    await call(env, `/v1/jobs/${dead}/nack`, { body: { attempt: 1, error: "boom" } });

    expect((await call(env, "/v1/topics/work/dead/replay", { body: { ids: ["unknown"] } })).body).toEqual({
      replayed: 0,
      notFound: ["unknown"],
      nextCursor: null,
    });
    const elsewhere = "other.01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const mixed = await call(env, "/v1/topics/work/dead/replay", { body: { ids: ["unknown", dead, scheduled, "unknown", elsewhere, dead] } });
    expect(mixed.status).toBe(200);
    expect(mixed.body).toEqual({ replayed: 1, notFound: ["unknown", scheduled, elsewhere], nextCursor: null });
    // Replayed, it is no longer dead.
    expect((await call(env, "/v1/topics/work/dead/replay", { body: { ids: [dead] } })).body).toEqual({ replayed: 0, notFound: [dead], nextCursor: null });
    expect((await call(env, "/v1/topics/work/dead/replay", { body: { all: true } })).body).toEqual({ replayed: 0, notFound: [], nextCursor: null });
  });
});

describe("POST /v1/hooks/:topic", () => {
  it("accepts the bearer token; JSON stays JSON, other bodies keep their type; ?delay= schedules", async () => {
    const env = isolatedEnv();
    const j = await call(env, "/v1/hooks/gh?delay=1m", { raw: '{"action":"opened"}', headers: { "content-type": "application/json" } });
    expect(j.status).toBe(202);
    expect((await call(env, `/v1/jobs/${j.body.id}`)).body).toMatchObject({ payload: { action: "opened" }, state: "scheduled" });
    const t = await call(env, "/v1/hooks/gh", { raw: "a=1&b=2", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect((await call(env, `/v1/jobs/${t.body.id}`)).body.payload).toEqual({ contentType: "application/x-www-form-urlencoded", text: "a=1&b=2" });
    expect((await call(env, "/v1/hooks/gh?delay=never", { raw: "x" })).status).toBe(422);
    expect((await call(env, "/v1/hooks/gh", { raw: new Uint8Array([0xff, 0xfe]) })).status).toBe(400);
  });

  it("accepts a valid HMAC signature (ours or GitHub's); refuses forged ones; a replay makes no second job", async () => {
    const env = isolatedEnv();
    const secret = "webhook-secret-0123456789";
    await call(env, "/v1/topics/gh", { method: "PUT", body: { webhookSecret: secret } });
    const body = '{"zen":"Keep it logically awesome."}';
    const sig = `sha256=${await hmac(secret, body)}`;
    const headers = { "content-type": "application/json" };
    const first = await call(env, "/v1/hooks/gh", { raw: body, token: null, headers: { ...headers, "x-delayline-signature": sig } });
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    const replay = await call(env, "/v1/hooks/gh", { raw: body, token: null, headers: { ...headers, "x-hub-signature-256": sig } });
    expect(replay.body).toEqual({ id: first.body.id, deduplicated: true });
    for (const forged of [`sha256=${await hmac("wrong-secret-000000000", body)}`, "sha256=00", "md5=abc", ""]) {
      const r = await call(env, "/v1/hooks/gh", { raw: body, token: null, headers: { ...headers, "x-delayline-signature": forged } });
      expect(r.status, forged).toBe(401);
      expect(r.headers.get("content-type")).toBe("application/problem+json");
    }
    // A signature for another body does not carry over.
    const tampered = await call(env, "/v1/hooks/gh", {
      raw: body.replace("awesome", "evil"),
      token: null,
      headers: { ...headers, "x-delayline-signature": sig },
    });
    expect(tampered.status).toBe(401);
    // Topics without a webhook secret accept only the token.
    expect((await call(env, "/v1/hooks/other", { raw: body, token: null, headers: { ...headers, "x-delayline-signature": sig } })).status).toBe(401);
    expect((await call(env, "/v1/topics/gh")).body.scheduled).toBe(1);
  });

  it("accepts a timestamped signature (t=…,v1=…) within 5 minutes; a replay within makes no second job, an older or future-skewed one is 401 saying why", async () => {
    const env = isolatedEnv();
    const secret = "webhook-secret-0123456789";
    await call(env, "/v1/topics/ts", { method: "PUT", body: { webhookSecret: secret } });
    const body = '{"event":"paid","amount":42}';
    const signed = async (t: number, text = body) => `t=${t},v1=${await hmac(secret, `${t}.${text}`)}`;
    const send = async (signature: string, text = body) =>
      call(env, "/v1/hooks/ts", { raw: text, token: null, headers: { "content-type": "application/json", "x-delayline-signature": signature } });
    const now = Math.floor(Date.now() / 1000);

    const fresh = await signed(now - 200);
    const first = await send(fresh);
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    expect((await call(env, `/v1/jobs/${first.body.id}`)).body.payload).toEqual({ event: "paid", amount: 42 });
    expect((await send(fresh)).body).toEqual({ id: first.body.id, deduplicated: true });
    // Signed again at another time it is another MAC, so another job: a sender's retry resends the same header to be recognised.
    expect((await send(await signed(now))).body.deduplicated).toBe(false);

    for (const [label, t] of [
      ["more than 5 minutes old", now - 301],
      ["an hour old", now - 3_600],
      ["more than 5 minutes ahead", now + 400],
    ] as const) {
      const r = await send(await signed(t));
      expect(r.status, label).toBe(401);
      expect(r.headers.get("content-type"), label).toBe("application/problem+json");
      expect(r.body.detail, label).toMatch(new RegExp(`timestamp t=${t} is \\d+ s (old|ahead); only 300 s either way are accepted`));
    }
    // Timestamp and body are both covered.
    const [t, mac] = [now, await hmac(secret, `${now}.${body}`)];
    expect((await send(`t=${t + 1},v1=${mac}`)).status).toBe(401);
    expect((await send(`t=${t},v1=${mac}`, body.replace("42", "43"))).status).toBe(401);
    expect((await send(`t=${t},v1=${await hmac("wrong-secret-000000000", `${t}.${body}`)}`)).status).toBe(401);
    expect((await send(`t=${t},v1=${mac.slice(1)}`)).status).toBe(401);
    expect((await call(env, "/v1/topics/ts")).body.scheduled).toBe(2);
  });

  it("a replay with extra, reordered, repeated or re-spaced v1 values makes no second job; another body or time does", async () => {
    const env = isolatedEnv();
    const secret = "webhook-secret-0123456789";
    await call(env, "/v1/topics/replay", { method: "PUT", body: { webhookSecret: secret } });
    const body = '{"event":"paid","amount":42}';
    const send = (signature: string, text = body) =>
      call(env, "/v1/hooks/replay", { raw: text, token: null, headers: { "content-type": "application/json", "x-delayline-signature": signature } });
    const t = Math.floor(Date.now() / 1000);
    const mac = await hmac(secret, `${t}.${body}`);
    const first = await send(`t=${t},v1=${mac}`);
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    const zeros = "0".repeat(64);
    const variants = [
      `t=${t},v1=${mac},v1=${zeros}`,
      `t=${t},v1=${zeros},v1=${mac}`,
      `v1=${mac},t=${t}`,
      `t=${t}, v1=${mac}`,
      ` t=${t} ,  v1=${mac} `,
      `t=${t},v1=${mac},v1=${mac}`,
      `t=${t},v1=${mac},v0=${zeros}`,
      ...Array.from({ length: 9 }, (_, i) => `t=${t},v1=${mac}${`,v1=${i.toString(16).repeat(64)}`.repeat(i % 3)}`),
      `t=${t},${Array.from({ length: 9 }, (_, i) => `v1=${String(i).repeat(64)}`).join(",")},v1=${mac}`,
    ];
    for (const signature of variants) {
      const r = await send(signature);
      expect(r.status, signature).toBe(202);
      expect(r.body, signature).toEqual({ id: first.body.id, deduplicated: true });
    }
    // Another body (signed) is another job; so is the same body signed at another second.
    const other = '{"event":"paid","amount":43}';
    const second = await send(`t=${t},v1=${await hmac(secret, `${t}.${other}`)},v1=${zeros}`, other);
    expect(second.body.deduplicated).toBe(false);
    expect(second.body.id).not.toBe(first.body.id);
    expect((await send(`t=${t - 1},v1=${await hmac(secret, `${t - 1}.${body}`)}`)).body.deduplicated).toBe(false);
    expect((await call(env, "/v1/topics/replay")).body.scheduled).toBe(3);
  });

  it("deduplicates body-signed deliveries by the body, so a redelivery after the secret changed, or under another X-GitHub-Delivery, makes no second job", async () => {
    const env = isolatedEnv();
    const headers = { "content-type": "application/json", "x-github-event": "push" };
    await call(env, "/v1/topics/gh", { method: "PUT", body: { webhookSecret: "old-webhook-secret-0123" } });
    const body = '{"ref":"refs/heads/main","after":"abc123"}';
    const deliver = async (secret: string, delivery: string, text = body) =>
      call(env, "/v1/hooks/gh", {
        raw: text,
        token: null,
        headers: { ...headers, "x-hub-signature-256": `sha256=${await hmac(secret, text)}`, "x-github-delivery": delivery },
      });
    const first = await deliver("old-webhook-secret-0123", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    expect(first.status).toBe(202);
    expect(first.body.deduplicated).toBe(false);
    // The secret is rotated; GitHub redelivers the same delivery signed with the new one.
    await call(env, "/v1/topics/gh", { method: "PUT", body: { webhookSecret: "new-webhook-secret-4567" } });
    const again = await deliver("new-webhook-secret-4567", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ id: first.body.id, deduplicated: true });
    // The old secret no longer works. GitHub signs neither a timestamp nor X-GitHub-Delivery: a captured
    // request replayed under another delivery id is the same signed body, so no second job.
    expect((await deliver("old-webhook-secret-0123", "0b989ba4-242f-11e5-81e1-ffffffffffff")).status).toBe(401);
    const replayed = await deliver("new-webhook-secret-4567", "0b989ba4-242f-11e5-81e1-ffffffffffff");
    expect(replayed.body).toEqual({ id: first.body.id, deduplicated: true });
    const other = await deliver("new-webhook-secret-4567", "0b989ba4-242f-11e5-81e1-ffffffffffff", body.replace("abc123", "def456"));
    expect(other.body.deduplicated).toBe(false);
    expect(other.body.id).not.toBe(first.body.id);
    expect((await call(env, "/v1/topics/gh")).body.scheduled).toBe(2);
  });
});
