/**
 * The headers the built-in http handler sends, as a receiver sees them on
 * the wire: a job's own `target.headers` next to delayline's, whatever the
 * case of their names.
 */
import { describe, expect, inject, it } from "vitest";
import { verifySignature } from "../../../src/client/index.js";
import { deliveries, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const T0 = 1_900_000_020_000;
const receiver = () => inject("receiverUrl");

/** How often each header name (lower-cased) arrived. */
function nameCounts(raw: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

describe("the http handler's headers", () => {
  it("sends each header once: a job's Content-Type replaces the default, delayline's own headers win over the job's", async () => {
    const secret = "topic-signing-secret-0123456789";
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true" }, clock);
    const topic = uniqueTopic("headers");
    await d.queue.configureTopic(topic, { signingSecret: secret });
    const { id } = await d.queue.enqueue({
      topic,
      payload: { n: 1 },
      runAt: T0,
      target: {
        url: `${receiver()}/${topic}/ok`,
        headers: {
          "Content-Type": "text/plain",
          "Delayline-Signature": "x",
          "DELAYLINE-JOB-ID": "forged",
          "delayline-topic": "forged",
          "Delayline-Attempt": "99",
          "Delayline-Anything": "forged",
          "User-Agent": "not-delayline",
          "X-Custom": "kept",
          Authorization: "Bearer for-the-receiver",
        },
      },
    });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");

    const [got] = await deliveries(`/${topic}/ok`);
    expect(got).toBeDefined();
    const counts = nameCounts(got!.rawHeaders);
    for (const name of [
      "content-type",
      "delayline-signature",
      "delayline-job-id",
      "delayline-topic",
      "delayline-attempt",
      "user-agent",
      "x-custom",
      "authorization",
    ]) {
      expect(counts[name], name).toBe(1);
    }
    const h = got!.headers;
    expect(h["content-type"]).toBe("text/plain");
    expect(h["delayline-job-id"]).toBe(id);
    expect(h["delayline-topic"]).toBe(topic);
    expect(h["delayline-attempt"]).toBe("1");
    expect(h["delayline-anything"]).toBeUndefined();
    expect(h["user-agent"]).toBe("delayline");
    expect(h["x-custom"]).toBe("kept");
    expect(h.authorization).toBe("Bearer for-the-receiver");
    expect(await verifySignature({ header: h["delayline-signature"], body: got!.body, secrets: secret })).toEqual({ ok: true });
  });

  it("without a Content-Type of the job's, sends application/json; without a signing secret, no Delayline-Signature at all", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true" }, clock);
    const topic = uniqueTopic("unsigned");
    const { id } = await d.queue.enqueue({
      topic,
      payload: [1],
      runAt: T0,
      target: { url: `${receiver()}/${topic}/ok`, headers: { "delayline-signature": "t=1,v1=forged" } },
    });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");
    const [got] = await deliveries(`/${topic}/ok`);
    expect(nameCounts(got!.rawHeaders)["content-type"]).toBe(1);
    expect(got!.headers["content-type"]).toBe("application/json");
    expect(got!.headers["delayline-signature"]).toBeUndefined();
  });

  it("leaves out hop-by-hop and framing headers of jobs stored before they were refused at enqueue", async () => {
    const clock = new VirtualClock(T0);
    const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true" }, clock);
    const topic = uniqueTopic("hop");
    // The queue stores what it is given; the API refuses these headers (422), older jobs may still carry them.
    const { id } = await d.queue.enqueue({
      topic,
      payload: "x",
      runAt: T0,
      target: {
        url: `${receiver()}/${topic}/ok`,
        headers: { Connection: "close", "Keep-Alive": "timeout=5", Upgrade: "websocket", "Proxy-Authorization": "Basic eA==", TE: "trailers", "X-Kept": "1" },
      },
    });
    await d.tick({ scheduledTime: T0 - 20_000, clock, windowMs: 30_000 });
    expect((await d.queue.get(id))!.state).toBe("succeeded");
    const [got] = await deliveries(`/${topic}/ok`);
    const h = got!.headers;
    expect(h["x-kept"]).toBe("1");
    expect(h.upgrade).toBeUndefined();
    expect(h["keep-alive"]).toBeUndefined();
    expect(h["proxy-authorization"]).toBeUndefined();
    expect(h.te).toBeUndefined();
    expect(h.connection ?? "").not.toMatch(/close/);
  });
});
