/**
 * The metrics a topic keeps: outcome counters and histograms written by
 * settle, and the 24 h per-minute ring, whose memory stays bounded however
 * long it runs.
 */
import { describe, expect, it } from "vitest";
import { LATENESS_BOUNDS_MS, quantile, SERIES_MINUTES, snapshotOf, observationVector } from "../../../src/queue/metrics.js";
import type { Outcome } from "../../../src/queue/queue.js";
import { testQueue } from "./helpers.js";

const MINUTE = 60_000;
const T0 = 1_900_000_000_000 - (1_900_000_000_000 % MINUTE); // a minute boundary

/** An outcome for a job that was never claimed: settle refuses it (stale) but still records what was observed. */
const observedOnly = (latenessMs: number, durationMs = 1): Outcome => ({
  id: "m.01ARZ3NDEKTSV4RRFFQ69G5FAV",
  attempt: 1,
  kind: "ack",
  observed: { latenessMs, durationMs },
});

describe("metrics", () => {
  it("settle counts outcomes that applied and observes every dispatched attempt", async () => {
    const clock = { now: T0 };
    const { queue } = testQueue({ clock });
    await queue.enqueueBatch(Array.from({ length: 4 }, (_, i) => ({ topic: "m", payload: i })));
    const { jobs } = await queue.claim("m", { max: 10, leaseMs: 60_000 });
    clock.now += 40;
    const outcomes: Outcome[] = [
      { id: jobs[0]!.id, attempt: 1, kind: "ack", observed: { latenessMs: 5, durationMs: 7 } },
      { id: jobs[1]!.id, attempt: 1, kind: "retry", at: T0 + 1_000, error: "again", observed: { latenessMs: 30, durationMs: 120 } },
      { id: jobs[2]!.id, attempt: 1, kind: "dead", error: "no", observed: { latenessMs: 700_000, durationMs: 90_000 } },
      { id: jobs[3]!.id, attempt: 2, kind: "ack", observed: { latenessMs: 0, durationMs: 0 } }, // stale: wrong attempt
    ];
    await queue.settle("m", outcomes);
    const { counters, metrics } = await queue.topicStats("m");
    expect(counters).toEqual({ dispatched: 4, succeeded: 1, retried: 1, dead: 1, dropped: 0, expired: 0 });
    expect(metrics.lateness.count).toBe(4);
    expect(metrics.lateness.sumMs).toBe(5 + 30 + 700_000);
    // 0 and 5 ms in the first bucket, 30 ms in ≤ 50, 700 s beyond the last bound.
    expect(metrics.lateness.counts[0]).toBe(2);
    expect(metrics.lateness.counts[LATENESS_BOUNDS_MS.indexOf(50)]).toBe(1);
    expect(metrics.lateness.counts.at(-1)).toBe(1);
    expect(metrics.duration.count).toBe(4);
    expect(metrics.duration.counts.at(-1)).toBe(1); // 90 s is past the last bound (60 s)
  });

  it("keeps one slot per minute for 24 h: an old slot reads as empty once its minute comes round again, and memory stays bounded", async () => {
    const { queue, redis } = testQueue();
    // Three days of minutes, a few at a time, each observing one attempt.
    const minutes = 3 * SERIES_MINUTES;
    for (let m = 0; m < minutes; m += 60) {
      await Promise.all(Array.from({ length: 60 }, (_, k) => queue.settle("m", [observedOnly(m + k)], { now: T0 + (m + k) * MINUTE })));
    }
    const fields = (await redis.hkeys(queue.keys.topic("m").metrics)) as string[];
    expect(fields.length).toBeLessThanOrEqual(SERIES_MINUTES + 1);
    const last = T0 + (minutes - 1) * MINUTE;
    const day = await queue.topicSeries("m", { minutes: SERIES_MINUTES, now: last });
    expect(day).toHaveLength(SERIES_MINUTES);
    expect(day.every((p) => p.metrics?.lateness.count === 1)).toBe(true);
    // Each minute holds its own observation, not one from a day before.
    expect(day.at(-1)!.metrics!.lateness.sumMs).toBe(minutes - 1);
    expect(day[0]!.metrics!.lateness.sumMs).toBe(minutes - SERIES_MINUTES);
    // Asking for a minute whose slot was overwritten since reads it as empty.
    const old = await queue.topicSeries("m", { minutes: 1, now: T0 });
    expect(old[0]!.metrics).toBeNull();
    // The all-time total has every observation.
    expect((await queue.topicStats("m")).metrics.lateness.count).toBe(minutes);
  });

  it("a value on a bucket's bound counts in that bucket, one above the last bound in +Inf, and outcomes without an observation not at all", () => {
    const v = observationVector([
      { latenessMs: 10, durationMs: 5 },
      undefined,
      { latenessMs: 10.4, durationMs: 60_001 },
      { latenessMs: 600_001, durationMs: 0 },
      { latenessMs: -3, durationMs: 5.6 },
    ]);
    const s = snapshotOf(v);
    // Lateness bounds 10, 25, …, 600,000, then +Inf; a negative lateness reads as 0.
    expect(s.lateness.counts[0]).toBe(3);
    expect(s.lateness.counts.at(-1)).toBe(1);
    expect(s.lateness.count).toBe(4);
    expect(s.lateness.sumMs).toBe(10 + 10 + 600_001);
    // Duration bounds 5, 10, …, 60,000, then +Inf; 5.6 rounds to 6, above the first bound.
    expect(s.duration.counts.slice(0, 2)).toEqual([2, 1]);
    expect(s.duration.counts.at(-1)).toBe(1);
    expect(observationVector([undefined, undefined])).toBeNull();
    expect(observationVector([])).toBeNull();
  });

  it("quantiles interpolate inside buckets as Prometheus' histogram_quantile does", () => {
    const h = snapshotOf(observationVector([...Array(50).fill(5), ...Array(50).fill(40)].map((latenessMs) => ({ latenessMs, durationMs: 0 })))).lateness;
    expect(h.count).toBe(100);
    expect(quantile(h, 0.5)).toBe(10); // the 50th of 100 is the top of the first bucket (≤ 10 ms)
    expect(quantile(h, 0.99)).toBeCloseTo(25 + (25 * 49) / 50); // inside ≤ 50 ms
    expect(quantile(snapshotOf(null).lateness, 0.5)).toBeNull();
  });
});
