/**
 * The attempt history of jobs the tick delivers over http, as GET
 * /v1/jobs/:id and the dead-letter list show it.
 */
import { describe, expect, inject, it } from "vitest";
import { call } from "../api/helpers.js";
import { tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const receiver = () => inject("receiverUrl");

/**
 * A deployment whose virtual clock starts a minute before the real one, so
 * what the tick finishes lies within the retention window the API (on the
 * real clock) reads: the current or the previous retention bucket.
 */
function deployment() {
  const clock = new VirtualClock(Date.now() - 60_000);
  const d = tickDeployment({ TICK_POLL_MS: "100", ALLOW_PRIVATE_TARGETS: "true" }, clock);
  return { clock, d, run: () => d.tick({ scheduledTime: clock.now(), clock, windowMs: 30_000 }) };
}

describe("attempt history of http deliveries", () => {
  it("a receiver answering 500, 500, then 200: three attempts with those statuses, in order, in GET /v1/jobs/:id after it succeeded", async () => {
    const { clock, d, run } = deployment();
    const topic = uniqueTopic("hist");
    const start = clock.now();
    const { id } = await d.queue.enqueue({
      topic,
      payload: { n: 1 },
      runAt: start,
      maxAttempts: 5,
      backoff: { type: "fixed", delay: 1_000 },
      target: { url: `${receiver()}/${topic}/statuses/500,500,200` },
    });
    await run();

    const res = await call(d.env, `/v1/jobs/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.state).toBe("succeeded");
    const history = res.body.history as Array<Record<string, unknown>>;
    expect(history.map((h) => [h.attempt, h.outcome, h.httpStatus])).toEqual([
      [1, "retry", 500],
      [2, "retry", 500],
      [3, "ok", 200],
    ]);
    expect(history[0]!.error).toBe("HTTP 500: status 500 from the receiver");
    expect(history[2]!.error).toBeUndefined();
    // Each attempt started when the tick ran it, on its clock: in order, a backoff apart.
    const started = history.map((h) => Date.parse(h.startedAt as string));
    expect(started[0]).toBeGreaterThanOrEqual(start);
    expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(1_000);
    expect(started[2]! - started[1]!).toBeGreaterThanOrEqual(1_000);
    for (const h of history) expect(h.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("a job that dies shows all its attempts in its dead letter and in GET /v1/jobs/:id", async () => {
    const { clock, d, run } = deployment();
    const topic = uniqueTopic("hist-dead");
    const { id } = await d.queue.enqueue({
      topic,
      payload: "x",
      runAt: clock.now(),
      maxAttempts: 3,
      backoff: { type: "fixed", delay: 1_000 },
      target: { url: `${receiver()}/${topic}/statuses/503,502,500` },
    });
    await run();

    const dead = await call(d.env, `/v1/topics/${topic}/dead`);
    expect(dead.status).toBe(200);
    expect(dead.body.entries).toHaveLength(1);
    const entry = dead.body.entries[0];
    expect(entry.id).toBe(id);
    const expected = [
      [1, "retry", 503],
      [2, "retry", 502],
      [3, "dead", 500],
    ];
    expect(entry.history.map((h: Record<string, unknown>) => [h.attempt, h.outcome, h.httpStatus])).toEqual(expected);
    expect(entry.history[2].error).toBe("HTTP 500: status 500 from the receiver");

    const job = await call(d.env, `/v1/jobs/${id}`);
    expect(job.body.state).toBe("dead");
    expect(job.body.history.map((h: Record<string, unknown>) => [h.attempt, h.outcome, h.httpStatus])).toEqual(expected);
  });

  it("a permanent failure (a 4xx) is one dead attempt with its status; a delivery that never got a response has no status", async () => {
    const { clock, d, run } = deployment();
    const topic = uniqueTopic("hist-4xx");
    const refused = await d.queue.enqueue({ topic, payload: 1, runAt: clock.now(), target: { url: `${receiver()}/${topic}/status/404` } });
    // Nothing listens on port 9 of loopback: a network error.
    const unreachable = await d.queue.enqueue({ topic, payload: 2, runAt: clock.now(), maxAttempts: 1, target: { url: "http://127.0.0.1:9/" } });
    await run();

    const a = (await call(d.env, `/v1/jobs/${refused.id}`)).body;
    expect(a.history).toHaveLength(1);
    expect(a.history[0]).toMatchObject({ attempt: 1, outcome: "dead", httpStatus: 404 });
    const b = (await call(d.env, `/v1/jobs/${unreachable.id}`)).body;
    expect(b.history).toHaveLength(1);
    expect(b.history[0].outcome).toBe("dead");
    expect(b.history[0].httpStatus).toBeUndefined();
    expect(b.history[0].error).toMatch(/^network error/);
  });
});
