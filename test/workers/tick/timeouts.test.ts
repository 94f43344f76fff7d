/**
 * Handler timeouts, and the one-timer deadlines that time them: a job whose
 * handler outlives its timeout is retried as timed out, its signal aborted,
 * while the jobs beside it that finish in time are not touched. One chunk at
 * a time on the real clock.
 */
import { describe, expect, inject, it } from "vitest";
import { Deadlines } from "../../../src/handlers/deadlines.js";
import { runChunk } from "../../../src/tick/run-chunk.js";
import { tickDeployment, uniqueTopic } from "./helpers.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe("Deadlines", () => {
  it("fires each deadline once, earliest first, and never one that was cancelled", async () => {
    const d = new Deadlines();
    const fired: string[] = [];
    d.add(60, () => fired.push("60"));
    const cancelLater = d.add(40, () => fired.push("40, cancelled"));
    d.add(20, () => fired.push("20, added after a later one"));
    d.add(0, () => fired.push("0"));
    cancelLater();
    cancelLater();
    await sleep(150);
    expect(fired).toEqual(["0", "20, added after a later one", "60"]);
  });

  it("keeps time for what is left among thousands cancelled", async () => {
    const d = new Deadlines();
    let fired = 0;
    let kept = false;
    const cancels = Array.from({ length: 5_000 }, () => d.add(30, () => fired++));
    d.add(50, () => (kept = true));
    for (const cancel of cancels) cancel();
    await sleep(150);
    expect(fired).toBe(0);
    expect(kept).toBe(true);
  });
});

describe("handler timeouts", () => {
  it("retries a job whose handler outlives its timeout as timed out, its signal aborted, and settles the others as they ended", async () => {
    const d = tickDeployment();
    const topic = uniqueTopic("timeout");
    const aborted = new Map<number, boolean>();
    d.handlers.define(topic, async (job) => {
      const n = job.payload as number;
      if (n === 0) await new Promise<void>((resolve) => job.signal.addEventListener("abort", () => resolve()));
      aborted.set(n, job.signal.aborted);
    });
    const jobs = await d.queue.enqueueBatch([
      { topic, payload: 0, timeoutMs: 200, maxAttempts: 2 },
      { topic, payload: 1, timeoutMs: 60_000 },
      { topic, payload: 2, timeoutMs: 200 },
    ]);
    const report = await runChunk({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic, max: 10, log: () => {} });
    expect(report.outcomes).toMatchObject({ ack: 2, retry: 1 });
    expect(await d.queue.get(jobs[0]!.id)).toMatchObject({ state: "scheduled", attempts: 1, lastError: "timed out after 200 ms" });
    expect(await d.queue.get(jobs[1]!.id)).toMatchObject({ state: "succeeded" });
    expect(await d.queue.get(jobs[2]!.id)).toMatchObject({ state: "succeeded" });
    await sleep(50);
    expect(aborted.get(0)).toBe(true);
    expect(aborted.get(1)).toBe(false);
    expect(aborted.get(2)).toBe(false);
  });

  it("retries an http delivery that gets no answer within its timeout", async () => {
    const d = tickDeployment({ ALLOW_PRIVATE_TARGETS: "true" });
    const topic = uniqueTopic("hang");
    const { id } = await d.queue.enqueue({ topic, payload: 1, timeoutMs: 300, maxAttempts: 2, target: { url: `${inject("receiverUrl")}/${topic}/hang` } });
    const report = await runChunk({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic, max: 10, log: () => {} });
    expect(report.outcomes.retry).toBe(1);
    expect(await d.queue.get(id)).toMatchObject({ state: "scheduled", attempts: 1, lastError: "timed out after 300 ms" });
  });
});
