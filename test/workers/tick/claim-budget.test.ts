/**
 * A claim's reply stays inside Upstash's 10 MB cap on one command's reply:
 * the claim stops taking jobs at CLAIM_REPLY_BUDGET_BYTES (always taking
 * one), and the jobs it leaves stay due, unleased, for the next claim. Under
 * the test bridge's Upstash limits (dev/bridge/limits.ts) a claim of 100 jobs
 * of 256 KiB (≈ 26 MB) would be refused after its leases were taken; here
 * every job is delivered once, on its first attempt, by pull and by push.
 */
import { describe, expect, inject, it } from "vitest";
import { CLAIM_REPLY_BUDGET_BYTES, DEFAULT_MAX_PAYLOAD_BYTES } from "../../../src/limits.js";
import type { ClaimOptions, ClaimResult } from "../../../src/queue/views.js";
import { call, isolatedEnv } from "../api/helpers.js";
import { deliveries, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000;
const JOBS = 100;
/** A payload of exactly the default limit, serialized: a JSON string of 256 KiB. */
const PAYLOAD = "x".repeat(DEFAULT_MAX_PAYLOAD_BYTES - 2);
/** Jobs per enqueue request: each request stays well under Upstash's 10 MB request cap (and MAX_BODY_BYTES). */
const PER_BATCH = 15;
const UPSTASH_REPLY_CAP = 10 * 1024 * 1024;

const batches = <T>(items: T[]): T[][] =>
  Array.from({ length: Math.ceil(items.length / PER_BATCH) }, (_, i) => items.slice(i * PER_BATCH, (i + 1) * PER_BATCH));

/** What one claim asked for and what it carried back. */
interface Seen {
  max: number;
  jobs: number;
  bytes: number;
  heldBy: ClaimResult["heldBy"];
}

describe("a claim of large payloads", () => {
  it("has a budget that, with a record of the largest default payload escaped twice over, stays inside the reply cap", () => {
    expect(CLAIM_REPLY_BUDGET_BYTES + DEFAULT_MAX_PAYLOAD_BYTES * 2).toBeLessThan(UPSTASH_REPLY_CAP);
  });

  it("always takes one job, even one whose record alone passes the budget; the next stays due for the next claim", async () => {
    const d = tickDeployment();
    const topic = uniqueTopic("biglone");
    await d.queue.configureTopic(topic, { mode: "pull" });
    const big = "y".repeat(CLAIM_REPLY_BUDGET_BYTES + 1024);
    const [a, b] = [await d.queue.enqueue({ topic, payload: big }), await d.queue.enqueue({ topic, payload: big })];
    const first = await d.queue.claim(topic, { max: 10, mode: "pull" });
    expect(first.jobs.map((j) => [j.id, j.attempt])).toEqual([[a.id, 1]]);
    expect(first.heldBy).toBe("bytes");
    expect(await d.queue.get(b.id)).toMatchObject({ state: "scheduled", attempts: 0 });
    const second = await d.queue.claim(topic, { max: 10, mode: "pull" });
    expect(second.jobs.map((j) => [j.id, j.attempt])).toEqual([[b.id, 1]]);
    expect(second.heldBy).toBeNull();
  });

  it("pull: 100 jobs of 256 KiB are claimed over several calls, each once on its first attempt, every call cut by bytes but the last", async () => {
    const env = isolatedEnv();
    const topic = uniqueTopic("bigpull");
    expect((await call(env, `/v1/topics/${topic}`, { method: "PUT", body: { mode: "pull" } })).status).toBe(200);
    const ids: string[] = [];
    for (const batch of batches(Array.from({ length: JOBS }, (_, i) => i))) {
      const res = await call(env, "/v1/jobs/batch", { body: { jobs: batch.map(() => ({ topic, payload: PAYLOAD })) } });
      expect(res.status).toBe(201);
      ids.push(...res.body.jobs.map((j: { id: string }) => j.id));
    }
    expect(ids).toHaveLength(JOBS);

    const perCall: number[] = [];
    const claimed: Array<{ id: string; attempt: number }> = [];
    for (let round = 0; round < JOBS && claimed.length < JOBS; round++) {
      const res = await call(env, `/v1/topics/${topic}/claim`, { body: { max: JOBS, leaseMs: 600_000 } });
      expect(res.status).toBe(200);
      const jobs = res.body.jobs as Array<{ id: string; attempt: number; payload: string }>;
      expect(jobs.length).toBeGreaterThan(0);
      for (const j of jobs) expect(j.payload).toBe(PAYLOAD);
      perCall.push(jobs.length);
      claimed.push(...jobs.map(({ id, attempt }) => ({ id, attempt })));
    }
    // Each call returned fewer than the 100 asked (the bytes cut it), and several calls took them all.
    expect(perCall.length).toBeGreaterThan(1);
    for (const n of perCall) expect(n).toBeLessThan(JOBS);
    expect(perCall.reduce((a, b) => a + b, 0)).toBe(JOBS);
    expect(claimed.map((c) => c.id).sort()).toEqual([...ids].sort());
    expect(claimed.every((c) => c.attempt === 1)).toBe(true);
    expect((await call(env, `/v1/topics/${topic}/claim`, { body: { max: JOBS } })).body.jobs).toEqual([]);

    for (const c of claimed) expect((await call(env, `/v1/jobs/${c.id}/ack`, { body: { attempt: 1 } })).status).toBe(200);
    for (const id of ids) expect((await call(env, `/v1/jobs/${id}`)).body).toMatchObject({ state: "succeeded", attempts: 1 });
    console.log(`pull: ${perCall.length} claim calls, jobs per call ${perCall.join(",")}`);
  });

  it.each([
    ["push", false],
    ["fan-out", true],
  ])("%s: the tick delivers 100 jobs of 256 KiB due at once, each once on its first attempt, its claims cut by bytes", async (_, fanned) => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true", TICK_SUBREQUEST_BUDGET: "1000" }, clock);
    const topic = uniqueTopic("bigpush");
    await d.queue.configureTopic(topic, { url: `${inject("receiverUrl")}/${topic}/ok` });
    const ids: string[] = [];
    for (const batch of batches(Array.from({ length: JOBS }, (_, i) => i))) {
      ids.push(...(await d.queue.enqueueBatch(batch.map(() => ({ topic, payload: PAYLOAD, runAt: T0 })))).map((j) => j.id));
    }
    // Watch the claims the tick makes (the queue itself runs as ever, on the real Redis).
    const seen: Seen[] = [];
    const claim = d.queue.claim.bind(d.queue);
    d.queue.claim = async (t: string, options: ClaimOptions) => {
      const r = await claim(t, options);
      if (t === topic)
        seen.push({ max: options.max, jobs: r.jobs.length, bytes: r.jobs.reduce((n, j) => n + JSON.stringify(j.record).length, 0), heldBy: r.heldBy });
      return r;
    };

    const report = await d.tick({ scheduledTime: T0, clock, windowMs: 30_000, ...(fanned ? { fanOut: d.runner(T0).fanOut } : {}) });
    expect(report.outcomes).toEqual({ ack: JOBS, retry: 0, dead: 0, stale: 0 });
    if (fanned) expect(report.fannedOut).toBeGreaterThan(0);
    const got = await deliveries(`/${topic}/ok`);
    expect(got.map((g) => g.headers["delayline-job-id"]).sort()).toEqual([...ids].sort());
    expect(got.every((g) => g.headers["delayline-attempt"] === "1" && g.body === JSON.stringify(PAYLOAD))).toBe(true);
    for (const id of ids) expect(await d.queue.get(id)).toMatchObject({ state: "succeeded", attempts: 1 });

    const taking = seen.filter((s) => s.jobs > 0);
    expect(taking.length).toBeGreaterThan(1);
    for (const s of taking) expect(s.bytes).toBeLessThanOrEqual(CLAIM_REPLY_BUDGET_BYTES);
    // The byte budget, not the chunk size, cut the claims, and said so.
    expect(taking.some((s) => s.jobs < s.max && s.heldBy === "bytes")).toBe(true);
    console.log(`${_}: ${report.fannedOut} fanned out; ${taking.length} claims took jobs, per claim ${taking.map((s) => `${s.jobs}/${s.max}`).join(",")}`);
  });
});
