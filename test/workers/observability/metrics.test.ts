/**
 * Metrics after a scripted scenario: known numbers of successes, retries and
 * dead jobs, run through the real tick loop (on a virtual clock, so every
 * lateness is known exactly), then read through /metrics, /v1/stats and the
 * queue's per-minute series. Every counter must equal the scenario's numbers.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { PermanentError, RetryableError } from "../../../src/handlers/registry.js";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import type { TickReport } from "../../../src/tick/loop.js";
import { call } from "../api/helpers.js";
import { tickDeployment, uniqueTopic, VirtualClock } from "../tick/helpers.js";

const T0 = 1_900_000_020_000; // 20 s past a minute boundary; in the future, so runAt is kept as given
// Jobs are stored 40 s before the tick starts, so one can be due 30 s before it.
const clock = new VirtualClock(T0 - 40_000);
const d = tickDeployment({ TICK_POLL_MS: "100" }, clock);
const ok = uniqueTopic("ok");
const flaky = uniqueTopic("flaky");
const doomed = uniqueTopic("doomed");
const pulled = uniqueTopic("pulled");
const logs: Array<Record<string, unknown>> = [];
const SECRET_PAYLOAD = "payload-secret-7f3a";
let report: TickReport;

beforeAll(async () => {
  // ok: 6 jobs on time and one claimed 30 s after it was due.
  d.handlers.define(ok, () => {});
  // flaky: every job fails its first attempt and succeeds on its second.
  d.handlers.define(flaky, (job) => {
    if (job.attempt === 1) throw new RetryableError("not yet", 1_000);
  });
  // doomed: 3 jobs fail all 3 attempts; 2 fail permanently at once.
  d.handlers.define(doomed, (job) => {
    if ((job.payload as { permanent?: boolean }).permanent) throw new PermanentError("refused");
    throw new Error("always fails");
  });
  await d.queue.configureTopic(doomed, { maxAttempts: 3, backoff: normalizeBackoff({ type: "fixed", delay: 1_000 }) });
  // A pull topic: the tick never claims it, but samples its backlog all the same.
  await d.queue.configureTopic(pulled, { mode: "pull" });
  await d.queue.enqueueBatch([
    ...Array.from({ length: 6 }, (_, i) => ({ topic: ok, payload: { i, note: SECRET_PAYLOAD }, runAt: T0 + 500 + i * 100 })),
    { topic: ok, payload: { late: true, note: SECRET_PAYLOAD }, runAt: T0 - 30_000 },
    ...Array.from({ length: 5 }, (_, i) => ({ topic: flaky, payload: { i, note: SECRET_PAYLOAD }, runAt: T0 + 2_000 })),
    ...Array.from({ length: 3 }, (_, i) => ({ topic: doomed, payload: { i, note: SECRET_PAYLOAD }, runAt: T0 + 3_000 })),
    ...Array.from({ length: 2 }, (_, i) => ({ topic: doomed, payload: { i, permanent: true, note: SECRET_PAYLOAD }, runAt: T0 + 3_000 })),
    { topic: pulled, payload: 1, runAt: T0 - 10_000 },
    { topic: pulled, payload: 2, runAt: T0 + 3_600_000 },
  ]);
  clock.t = T0;
  report = await d.tick({ scheduledTime: T0, clock, windowMs: 20_000, log: (line) => logs.push(line) });
});

const EXPECTED = {
  [ok]: { dispatched: 7, succeeded: 7, retried: 0, dead: 0, dropped: 0, expired: 0 },
  [flaky]: { dispatched: 10, succeeded: 5, retried: 5, dead: 0, dropped: 0, expired: 0 },
  [doomed]: { dispatched: 11, succeeded: 0, retried: 6, dead: 5, dropped: 0, expired: 0 },
};

type Sample = { name: string; labels: Record<string, string>; value: number };

/**
 * Reads the text exposition format strictly: every line is a HELP or TYPE
 * comment or a sample `name{label="value",...} value`, each family has one
 * TYPE before its samples, histogram buckets are cumulative and end in +Inf
 * equal to _count. (promtool checks the live stack's output too: test/node.)
 */
function parseExposition(text: string): Sample[] {
  expect(text.endsWith("\n")).toBe(true);
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.trimEnd().split("\n")) {
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
      expect(m, line).not.toBeNull();
      if (m![1] === "TYPE") {
        expect(["counter", "gauge", "histogram"]).toContain(m![3]);
        expect(types.has(m![2]!), `one TYPE for ${m![2]}`).toBe(false);
        types.set(m![2]!, m![3]!);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(m, line).not.toBeNull();
    const labels: Record<string, string> = {};
    const body = m![2] ?? "";
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:\\.|[^"\\])*)"(,|$)/y;
    while (labelRe.lastIndex < body.length) {
      const l = labelRe.exec(body);
      expect(l, `labels of ${line}`).not.toBeNull();
      labels[l![1]!] = l![2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    expect(m![3], line).toMatch(/^(-?\d+(\.\d+)?(e[+-]?\d+)?|\+Inf|-Inf|NaN)$/);
    const name = m![1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
    expect(types.has(name) || types.get(family) === "histogram", `TYPE before ${line}`).toBe(true);
    samples.push({ name, labels, value: m![3] === "+Inf" ? Infinity : Number(m![3]) });
  }
  // Histograms: cumulative buckets ending in +Inf, which equals _count.
  for (const [family, type] of types) {
    if (type !== "histogram") continue;
    const topics = new Set(samples.filter((s) => s.name === `${family}_count`).map((s) => s.labels.topic));
    for (const topic of topics) {
      const buckets = samples.filter((s) => s.name === `${family}_bucket` && s.labels.topic === topic);
      for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
      expect(buckets.at(-1)!.labels.le).toBe("+Inf");
      expect(buckets.at(-1)!.value).toBe(samples.find((s) => s.name === `${family}_count` && s.labels.topic === topic)!.value);
    }
  }
  return samples;
}

/** The value of the one sample with this name and these labels. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(found, `${name}${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
}

describe("the scripted scenario", () => {
  it("ran as scripted", () => {
    expect(report.outcomes).toEqual({ ack: 12, retry: 11, dead: 5, stale: 0 });
  });

  it("/metrics is valid exposition format and every counter equals the scenario's numbers", async () => {
    const r = await call(d.env, "/metrics");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const samples = parseExposition(r.body as string);
    for (const [topic, want] of Object.entries(EXPECTED)) {
      const of = (name: string) => sampleValue(samples, name, { topic });
      expect(of("delayline_jobs_dispatched_total"), `${topic} dispatched`).toBe(want.dispatched);
      expect(of("delayline_jobs_succeeded_total"), `${topic} succeeded`).toBe(want.succeeded);
      expect(of("delayline_jobs_retried_total"), `${topic} retried`).toBe(want.retried);
      expect(of("delayline_jobs_dead_total"), `${topic} dead`).toBe(want.dead);
      expect(of("delayline_jobs_dropped_total"), `${topic} dropped`).toBe(0);
      expect(of("delayline_dead_letters")).toBe(want.dead);
      expect(of("delayline_jobs_scheduled")).toBe(0);
      expect(of("delayline_jobs_inflight")).toBe(0);
      expect(of("delayline_topic_paused")).toBe(0);
      // Every attempt is observed once in each histogram.
      expect(of("delayline_lateness_seconds_count")).toBe(want.dispatched);
      expect(of("delayline_handler_duration_seconds_count")).toBe(want.dispatched);
    }
    // Lateness on the virtual clock is exact: ok's late job waited 30 s, everything else 0 ms.
    const bucket = (le: string) => sampleValue(samples, "delayline_lateness_seconds_bucket", { topic: ok, le });
    expect([bucket("0.01"), bucket("10"), bucket("30"), bucket("+Inf")]).toEqual([6, 6, 7, 7]);
    expect(sampleValue(samples, "delayline_lateness_seconds_sum", { topic: ok })).toBe(30);
    expect(sampleValue(samples, "delayline_tick_rounds")).toBe(report.rounds);
    expect(sampleValue(samples, "delayline_tick_running")).toBe(0);
  });

  it("/v1/stats gives the same counters, quantiles and the tick's final status", async () => {
    const r = await call(d.env, "/v1/stats?minutes=0");
    expect(r.status).toBe(200);
    const topics = r.body.topics as Array<{ topic: string; counters: unknown; dead: number; lateness: { count: number; p50: number; p99: number } }>;
    for (const [topic, want] of Object.entries(EXPECTED)) {
      const t = topics.find((x) => x.topic === topic)!;
      expect(t.counters).toEqual(want);
      expect(t.dead).toBe(want.dead);
      expect(t.lateness.count).toBe(want.dispatched);
    }
    const okStats = topics.find((x) => x.topic === ok)!;
    // 6 of 7 in the 0–10 ms bucket: the median interpolates inside it; the 99th percentile is the 30 s job.
    expect(okStats.lateness.p50).toBeGreaterThanOrEqual(0);
    expect(okStats.lateness.p50).toBeLessThanOrEqual(10);
    expect(okStats.lateness.p99).toBeGreaterThan(10_000);
    expect(okStats.lateness.p99).toBeLessThanOrEqual(30_000);
    expect(r.body.tick.status).toMatchObject({ ended: "window", rounds: report.rounds, claimed: report.claimed });
  });

  it("the per-minute series adds up to the totals", async () => {
    for (const [topic, want] of Object.entries(EXPECTED)) {
      const series = await d.queue.topicSeries(topic, { minutes: 3, now: clock.now() });
      const sum = (k: "succeeded" | "retried" | "dead") => series.reduce((n, p) => n + (p.metrics?.[k] ?? 0), 0);
      expect({ succeeded: sum("succeeded"), retried: sum("retried"), dead: sum("dead") }).toEqual({
        succeeded: want.succeeded,
        retried: want.retried,
        dead: want.dead,
      });
      expect(series.reduce((n, p) => n + (p.metrics?.lateness.count ?? 0), 0)).toBe(want.dispatched);
      // The tick sampled the backlog in the minutes it ran.
      expect(series.some((p) => p.backlog !== null)).toBe(true);
    }
    const pull = await d.queue.topicSeries(pulled, { minutes: 3, now: clock.now() });
    expect(
      pull
        .map((p) => p.backlog)
        .filter((b) => b !== null)
        .at(-1),
    ).toEqual({ scheduled: 2, ready: 1, inflight: 0 });
  });

  it("logs one JSON line per round that did work and per failed attempt, never a payload", () => {
    const text = logs.map((l) => JSON.stringify(l));
    expect(text.join("\n")).not.toContain(SECRET_PAYLOAD);
    const failures = logs.filter((l) => l.msg === "job failed");
    expect(failures).toHaveLength(11 + 5);
    for (const f of failures) expect(Object.keys(f).sort()).toEqual(expect.arrayContaining(["attempt", "error", "id", "level", "outcome", "topic"]));
    const rounds = logs.filter((l) => l.msg === "tick round");
    expect(rounds.length).toBeGreaterThan(0);
    expect(rounds.reduce((n, l) => n + (l.claimed as number), 0)).toBe(28);
  });

  it("/metrics needs a token", async () => {
    const r = await call(d.env, "/metrics", { token: null });
    expect(r.status).toBe(401);
    expect(r.headers.get("content-type")).toBe("application/problem+json");
  });
});
