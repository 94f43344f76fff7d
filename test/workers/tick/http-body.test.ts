/**
 * What the built-in http handler does with a response's body: it reads it
 * (so the connection serves the next delivery), but only so much and only so
 * long — a body that is huge, endless or slow neither holds a delivery past
 * its status nor fills the Worker's memory. One chunk at a time on the real
 * clock (the virtual clock's fetch buffers whole bodies, which is what is
 * tested here).
 */
import { describe, expect, inject, it } from "vitest";
import { BODY_WAIT_MS } from "../../../src/handlers/http.js";
import { runChunk } from "../../../src/tick/run-chunk.js";
import { tickDeployment, uniqueTopic } from "./helpers.js";

const receiver = () => inject("receiverUrl");

/** What test/receiver.ts tells of a streamed answer and of a delivery. */
interface Streamed {
  bytes: number;
  finished: boolean;
}
interface Delivery {
  remotePort: number;
}

async function streamed(path: string): Promise<Streamed | null> {
  return (await (await fetch(`${receiver()}/__streamed?path=${encodeURIComponent(path)}`)).json()) as Streamed | null;
}

async function deliveries(prefix: string): Promise<Delivery[]> {
  return (await (await fetch(`${receiver()}/__deliveries?prefix=${encodeURIComponent(prefix)}`)).json()) as Delivery[];
}

/** One job to `path` on the receiver, delivered by one chunk; the job as it is afterwards. */
async function deliverOne(path: (topic: string) => string, job: { timeoutMs?: number; maxAttempts?: number } = {}) {
  const d = tickDeployment({ ALLOW_PRIVATE_TARGETS: "true" });
  const topic = uniqueTopic("body");
  const url = `${receiver()}${path(topic)}`;
  const { id } = await d.queue.enqueue({ topic, payload: { n: 1 }, target: { url }, ...job });
  const report = await runChunk({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic, max: 10, log: () => {} });
  expect(report.claimed).toBe(1);
  return { job: (await d.queue.get(id))!, path: new URL(url).pathname };
}

describe("the http handler's reading of response bodies", () => {
  it("settles a 2xx whose body goes on and on as delivered, having stopped reading it", async () => {
    // Were the body read to its end, the 20 s timeout would pass first and the job be retried.
    const { job, path } = await deliverOne((t) => `/${t}/huge/200`, { timeoutMs: 20_000, maxAttempts: 1 });
    expect(job).toMatchObject({ state: "succeeded", attempts: 1 });
    expect(job.history.at(-1)).toMatchObject({ outcome: "ok", httpStatus: 200 });
    const s = (await streamed(path))!;
    expect(s.finished).toBe(false);
    expect(s.bytes).toBeLessThan(256 * 1024 * 1024);
  });

  for (const chunked of [false, true]) {
    it(`settles a 2xx whose body trickles (${chunked ? "chunked" : "with a Content-Length"}) as delivered after ${BODY_WAIT_MS} ms, not as timed out`, async () => {
      // The whole body takes 60 s; the job's timeout is 10 s.
      const { job, path } = await deliverOne((t) => `/${t}/slow/200${chunked ? "?chunked=1" : ""}`, { timeoutMs: 10_000, maxAttempts: 1 });
      expect(job).toMatchObject({ state: "succeeded", attempts: 1 });
      expect(job.history.at(-1)).toMatchObject({ outcome: "ok", httpStatus: 200 });
      expect((await streamed(path))!.finished).toBe(false);
    });
  }

  it("keeps the start of an error's huge body as the error (1 KB in all), and the status for the history", async () => {
    const { job, path } = await deliverOne((t) => `/${t}/huge/500`, { timeoutMs: 20_000, maxAttempts: 1 });
    expect(job).toMatchObject({ state: "dead", attempts: 1, lastError: `HTTP 500: ${"x".repeat(1_024)}`.slice(0, 1_024) });
    expect(job.history.at(-1)).toMatchObject({ outcome: "dead", httpStatus: 500 });
    const s = (await streamed(path))!;
    expect(s.finished).toBe(false);
    expect(s.bytes).toBeLessThan(256 * 1024 * 1024);
  });

  it("retries a 503 whose body trickles after its Retry-After, with what of the body arrived", async () => {
    const before = Date.now();
    const { job } = await deliverOne((t) => `/${t}/slow/503?retryAfter=600&chunked=1`, { timeoutMs: 10_000, maxAttempts: 2 });
    expect(job).toMatchObject({ state: "scheduled", attempts: 1, lastError: expect.stringMatching(/^HTTP 503: x+$/) });
    expect(job.history.at(-1)).toMatchObject({ outcome: "retry", httpStatus: 503 });
    expect(job.dueAt!).toBeGreaterThanOrEqual(before + 600_000);
  });

  it("delivers one job after another over one kept-alive connection", async () => {
    const d = tickDeployment({ ALLOW_PRIVATE_TARGETS: "true" });
    const topic = uniqueTopic("reuse");
    await d.queue.configureTopic(topic, { url: `${receiver()}/${topic}/ok`, concurrency: 1 });
    await d.queue.enqueueBatch(Array.from({ length: 6 }, (_, i) => ({ topic, payload: i })));
    // Its concurrency lets a chunk take one job: six chunks, one after the other.
    for (let i = 0; i < 6; i++) {
      const report = await runChunk({ queue: d.queue, settings: d.settings, handlers: d.handlers, topic, max: 10, log: () => {} });
      expect(report.outcomes.ack).toBe(1);
    }
    const got = await deliveries(`/${topic}/ok`);
    expect(got).toHaveLength(6);
    // Cancelling each response's body instead would close its connection: six ports.
    expect(new Set(got.map((g) => g.remotePort)).size).toBe(1);
  });
});
