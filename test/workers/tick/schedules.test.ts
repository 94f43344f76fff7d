/**
 * Schedules fired by the tick (src/schedules/fire.ts, schedule-fire.lua), on
 * one virtual clock against the real Redis: exactly one job per occurrence
 * whatever runs alongside, on time, collapsing what an outage missed.
 */
import { describe, expect, it } from "vitest";
import type { Handlers } from "../../../src/handlers/registry.js";
import { fireDueSchedules, planFiring } from "../../../src/schedules/fire.js";
import { pauseSchedule, resumeSchedule, upsertSchedule, type ScheduleInput } from "../../../src/schedules/lifecycle.js";
import { recorder, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

const M0 = 1_900_000_020_000 - 20_000; // a minute boundary

const every = (ms: number, topic: string, extra: Partial<ScheduleInput> = {}): ScheduleInput => ({
  every: ms,
  timezone: "UTC",
  grace: 60_000,
  job: { topic, payload: "tick" },
  ...extra,
});

/** Records what each delivery says about its schedule. */
function scheduleRecorder(handlers: Handlers, topic: string, clock: VirtualClock) {
  const seen: Array<{ id: string; for: number; at: number; scheduleId: string }> = [];
  recorder(handlers, topic, clock, (job) => {
    seen.push({ id: job.id, for: job.schedule!.scheduledFor, at: clock.now(), scheduleId: job.schedule!.id });
  });
  return seen;
}

describe("schedules fired by the tick", () => {
  it("every 2 s for 5 virtual minutes under 4 overlapping invocations a minute: one job per occurrence, on time", { timeout: 120_000 }, async () => {
    const clock = new VirtualClock(M0);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("every2");
    const seen = scheduleRecorder(d.handlers, topic, clock);
    await upsertSchedule(d.queue.schedules, "every-2s", every(2_000, topic, { startAt: M0 + 2_000 }), clock.now());
    // Each minute's cron, and three more invocations of the same minute arriving 3, 6 and 9 s late.
    const invocations = [];
    for (let m = 0; m < 5; m++) {
      for (let k = 0; k < 4; k++) {
        invocations.push(
          (async () => {
            await clock.sleep(M0 + m * 60_000 + k * 3_000 - clock.now());
            return d.tick({ scheduledTime: M0 + m * 60_000, windowMs: 75_000 });
          })(),
        );
      }
    }
    const reports = await Promise.all(invocations);
    expect(reports.filter((r) => r.ended === "window").length).toBeGreaterThanOrEqual(5);
    const occurrences = Array.from({ length: 150 }, (_, i) => M0 + 2_000 * (i + 1));
    const fors = seen.map((s) => s.for).sort((a, b) => a - b);
    expect(new Set(fors).size).toBe(fors.length);
    expect(fors.slice(0, 150)).toEqual(occurrences);
    for (const s of seen) {
      expect(s.at).toBeGreaterThanOrEqual(s.for);
      expect(s.at - s.for).toBeLessThanOrEqual(1_100);
      expect(s.scheduleId).toBe("every-2s");
    }
    const job = await d.queue.get(seen[0]!.id);
    expect(job).toMatchObject({ state: "succeeded", scheduleId: "every-2s", scheduledFor: M0 + 2_000 });
  });

  it("after an outage, the occurrences missed by more than the grace collapse into one job for the latest; then it goes on on time", async () => {
    const clock = new VirtualClock(M0);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("outage");
    const seen = scheduleRecorder(d.handlers, topic, clock);
    await upsertSchedule(d.queue.schedules, "ten", every(10_000, topic, { startAt: M0 + 10_000 }), clock.now());
    await d.tick({ scheduledTime: M0, windowMs: 60_000 });
    // No tick for five minutes.
    clock.t = M0 + 365_000;
    await d.tick({ scheduledTime: M0 + 360_000, windowMs: 60_000 });
    const fors = seen.map((s) => s.for - M0);
    // (Each window ends before its 60th second: that occurrence is the next window's.)
    expect(fors).toEqual([10_000, 20_000, 30_000, 40_000, 50_000, 360_000, 370_000, 380_000, 390_000, 400_000, 410_000]);
    for (const s of seen.slice(6)) expect(s.at - s.for).toBeLessThanOrEqual(1_100);
    const state = (await d.queue.schedules.get("ten"))!.state;
    expect(state.runs).toBe(11);
    expect(state.next).toBe(M0 + 420_000);
  });

  it("a tick late by less than the grace runs each occurrence it missed", async () => {
    const clock = new VirtualClock(M0 + 45_000);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("late");
    const seen = scheduleRecorder(d.handlers, topic, clock);
    await upsertSchedule(d.queue.schedules, "ten", every(10_000, topic, { startAt: M0 + 10_000 }), M0);
    await d.tick({ scheduledTime: M0, windowMs: 60_000 });
    expect(seen.map((s) => s.for - M0)).toEqual([10_000, 20_000, 30_000, 40_000, 50_000]);
    // The four it missed ran at once, 35, 25, 15 and 5 s late; the fifth on time.
    expect(seen.slice(0, 4).every((s) => s.at - M0 < 46_000)).toBe(true);
    expect(seen[4]!.at - seen[4]!.for).toBeLessThanOrEqual(1_100);
  });

  it("60 schedules of 200 KB payloads due at once fire in reads and writes that each fit Upstash's 10 MB", async () => {
    const clock = new VirtualClock(M0);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("big-schedules");
    const payload = { blob: "x".repeat(200_000) };
    for (let i = 0; i < 60; i++)
      await upsertSchedule(d.queue.schedules, `big-${i}`, every(60_000, topic, { startAt: M0 + 10_000, job: { topic, payload } }), M0);
    // 12 MB of definitions: one read of them all, or one write of their jobs, would pass the bridge's 10 MB caps.
    const report = await fireDueSchedules(d.queue.schedules, M0 + 10_000, 40);
    expect(report.jobs).toHaveLength(60);
    expect(report.fenced).toBe(0);
    for (const j of report.jobs.filter((_, i) => i % 7 === 0)) expect(await d.queue.get(j.id)).toMatchObject({ state: "scheduled", payload });
  });

  it("fences: a firing read before an upsert, a pause, or its own earlier success stores nothing", async () => {
    const clock = new VirtualClock(M0);
    const d = tickDeployment({}, clock);
    const topic = uniqueTopic("fence");
    const store = d.queue.schedules;
    await upsertSchedule(store, "s", every(1_000, topic, { startAt: M0 + 1_000 }), clock.now());
    clock.t = M0 + 1_500;
    const [read] = (await store.due(clock.now())).schedules;
    const stale = planFiring(read!, clock.now());
    // An upsert that keeps the timing: the occurrence stays, the firing read before it is fenced off.
    await upsertSchedule(store, "s", every(1_000, topic, { startAt: M0 + 1_000, job: { topic, payload: "new" } }), clock.now());
    expect((await store.fire([stale])).fired).toEqual([false]);
    const fired = await fireDueSchedules(store, clock.now());
    expect(fired.jobs.map((j) => j.occurrence)).toEqual([M0 + 1_000]);
    expect(fired.nextAt).toBe(M0 + 2_000);
    // The same firing again (a retry after a lost answer, an overlapping tick): nothing.
    const [again] = (await store.due(M0 + 1_500)).schedules;
    expect(again).toBeUndefined();
    expect((await store.fire([{ ...stale, read: { ...stale.read, rev: 2 } }])).fired).toEqual([false]);
    const job = await d.queue.get(fired.jobs[0]!.id);
    expect(job?.payload).toBe("new");
    const listed = await d.queue.listJobs(topic, { state: "scheduled", payload: true });
    expect(listed.jobs).toEqual([expect.objectContaining({ id: fired.jobs[0]!.id, scheduleId: "s", scheduledFor: M0 + 1_000 })]);
    // Paused: due occurrences are skipped; resumed, it goes on from the next one after now.
    clock.t = M0 + 2_500;
    const [before] = (await store.due(clock.now())).schedules;
    await pauseSchedule(store, "s");
    expect((await store.fire([planFiring(before!, clock.now())])).fired).toEqual([false]);
    expect((await fireDueSchedules(store, M0 + 9_000)).jobs).toEqual([]);
    const resumed = await resumeSchedule(store, "s", M0 + 9_500);
    expect(resumed!.state.next).toBe(M0 + 10_000);
    expect((await store.get("s"))!.state.runs).toBe(1);
  });

  it("limit and endAt end a schedule, and an ended schedule costs the tick nothing", async () => {
    const clock = new VirtualClock(M0);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("ends");
    const seen = scheduleRecorder(d.handlers, topic, clock);
    await upsertSchedule(d.queue.schedules, "three", every(5_000, topic, { startAt: M0 + 5_000, limit: 3 }), clock.now());
    await upsertSchedule(d.queue.schedules, "until", every(5_000, topic, { startAt: M0 + 5_000, endAt: M0 + 12_000 }), clock.now());
    await d.tick({ scheduledTime: M0, windowMs: 60_000 });
    const by = (id: string) => seen.filter((s) => s.scheduleId === id).map((s) => s.for - M0);
    expect(by("three")).toEqual([5_000, 10_000, 15_000]);
    expect(by("until")).toEqual([5_000, 10_000]);
    expect((await d.queue.schedules.get("three"))!.state.next).toBeNull();
    const peek = await d.queue.peek({ now: M0 + 1_000_000_000, limit: 10 });
    expect(peek.schedulesDue).toBe(false);
    expect(peek.nextAt).toBeNull();
  });

  it("an http delivery names its schedule and occurrence (Delayline-Schedule-Id, Delayline-Scheduled-For)", async () => {
    const clock = new VirtualClock(M0);
    const d = tickDeployment({ TICK_POLL_MS: "1000" }, clock);
    const topic = uniqueTopic("hdr");
    const requests: Request[] = [];
    // Records and sends nothing.
    const recording = (async (input: RequestInfo | URL, init?: RequestInit) => {
      requests.push(new Request(input, init));
      return new Response("ok");
    }) as typeof fetch;
    await upsertSchedule(
      d.queue.schedules,
      "hooks",
      { ...every(10_000, topic, { startAt: M0 + 10_000, limit: 1 }), job: { topic, payload: { a: 1 }, target: { url: "https://hooks.example.com/in" } } },
      clock.now(),
    );
    await d.tick({ scheduledTime: M0, windowMs: 30_000, fetch: recording });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.headers.get("delayline-schedule-id")).toBe("hooks");
    expect(requests[0]!.headers.get("delayline-scheduled-for")).toBe(new Date(M0 + 10_000).toISOString());
    expect(await requests[0]!.json()).toEqual({ a: 1 });
  });
});
