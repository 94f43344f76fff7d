/**
 * With the wake alarm (TICK_ALARM), a tick with nothing due before the next
 * cron ends its loop instead of sleeping through the minute, each cron then
 * only looks (src/tick/cron-look.ts), and producers arm the alarm for jobs
 * due before that look (src/tick/wake-alarm.ts). On a virtual clock, with a
 * stand-in for the Durable Object namespace that records what is armed; the
 * alarm's own wiring (a real Durable Object) is test/workers/tick/self-invocations.test.ts's.
 */
import { expect, it } from "vitest";
import type { Env } from "../../../src/env.js";
import { nextCronAt } from "../../../src/tick/cron-look.js";
import { wakeForSoonJobs } from "../../../src/tick/wake.js";
import { recorder, tickDeployment, uniqueTopic, VirtualClock } from "./helpers.js";

/** A minute's start plus `s` seconds, far from now so no test's clock meets another's. */
const MINUTE = 1_900_000_020_000 - (1_900_000_020_000 % 60_000);

/** A TICK_ALARM stand-in: what producers armed, per deployment prefix. */
function alarms() {
  const armed: Array<{ at: number; prefix: string }> = [];
  const ns: NonNullable<Env["TICK_ALARM"]> = {
    idFromName: (name) => ({ name }) as unknown as object,
    get: () => ({ arm: async (at, prefix) => void armed.push({ at, prefix }) }),
  };
  return { armed, ns };
}

/** A deployment on `clock` whose loop has ended idle (sleep mark "c"). */
async function endedIdle(clock: VirtualClock, alarm: NonNullable<Env["TICK_ALARM"]>) {
  const d = tickDeployment({ TICK_POLL_MS: "1000", TICK_IDLE_PEEK_MS: "20000", TICK_ALARM: alarm } as Partial<Env>, clock);
  const report = await d.tick({ scheduledTime: clock.now(), windowMs: 60_000, endWhenIdle: true });
  expect(report.ended).toBe("idle");
  expect(await d.queue.tickSleep()).toBe("c");
  return d;
}

it("ends the loop once nothing is due before the next cron, and the next cron only looks", async () => {
  const clock = new VirtualClock(MINUTE);
  const d = await endedIdle(clock, alarms().ns);
  // Three empty rounds, the mark, a second and a poll for producers to see it: then the loop ends.
  expect(clock.now() - MINUTE).toBeLessThanOrEqual(5_000);
  expect((await d.queue.tickStatus())?.asleep).toBe(true);
  clock.t = MINUTE + 60_000;
  expect(await d.cron({ scheduledTime: MINUTE + 60_000 })).toBeNull();
  expect(await d.queue.health.lastTickAt()).toBe(MINUTE + 60_000);
  expect(await d.queue.tickSleep()).toBe("c");
});

it("a loop without the wake alarm sleeps through its minute as before", async () => {
  const clock = new VirtualClock(MINUTE);
  const d = tickDeployment({ TICK_POLL_MS: "1000", TICK_IDLE_PEEK_MS: "20000" }, clock);
  const report = await d.tick({ scheduledTime: MINUTE, windowMs: 60_000 });
  expect(report.ended).toBe("window");
  expect(report.idleSleeps).toBeGreaterThanOrEqual(2);
  expect(await d.queue.tickSleep()).toBe("1");
});

it("a job enqueued while no loop runs, due 45 s out (past a producer's drain), arms the alarm, whose loop delivers it on time", async () => {
  const clock = new VirtualClock(MINUTE);
  const { armed, ns } = alarms();
  const d = await endedIdle(clock, ns);
  const topic = uniqueTopic("alarm");
  const seen = recorder(d.handlers, topic, clock);
  const enqueuedAt = clock.now();
  const job = await d.queue.enqueue({ topic, payload: 1, runAt: enqueuedAt + 45_000 });
  const drains: string[] = [];
  const waits: Array<Promise<unknown>> = [];
  /** The producer's wake after storing a job of `topic` due at `dueAt`, its waitUntil work awaited. */
  const produced = async (dueAt: number) => {
    const waitUntil = (w: Promise<unknown>) => void waits.push(w);
    await wakeForSoonJobs({
      env: d.env,
      settings: d.settings,
      queue: d.queue,
      jobs: [{ topic, dueAt }],
      waitUntil,
      clock,
      drain: async (t) => void drains.push(t),
    });
    await Promise.all(waits);
  };
  await produced(enqueuedAt + 45_000);
  // No drain (its invocation would end before the job is due): the alarm, a second ahead.
  expect(drains).toEqual([]);
  expect(armed).toEqual([{ at: enqueuedAt + 44_000, prefix: d.queue.keys.prefix }]);
  // A second job of this isolate, due later still, needs no alarm of its own: the first one's loop finds it.
  await produced(enqueuedAt + 50_000);
  expect(armed).toHaveLength(1);

  // The alarm fires: its loop (TickChunk.wakeTick) runs until the next cron's window, and a duplicate wake finds the lock held.
  clock.t = armed[0]!.at;
  const windowMs = nextCronAt(clock.now()) + d.settings.tickOverlapMs - clock.now();
  const [woken, duplicate] = await Promise.all([d.wake({ scheduledTime: clock.now(), windowMs }), d.wake({ scheduledTime: clock.now(), windowMs })]);
  expect([woken.ended, duplicate.ended].sort()).toEqual(["idle", "not-acquired"]);
  expect(seen.map((s) => [s.id, s.at - s.dueAt])).toEqual([[job.id, 0]]);
  expect(await d.queue.tickSleep()).toBe("c");
});

it("a lost alarm: the next cron's look finds the job and runs the loop, which delivers it on time", async () => {
  const clock = new VirtualClock(MINUTE + 30_000);
  const d = await endedIdle(clock, alarms().ns);
  const topic = uniqueTopic("lost");
  const seen = recorder(d.handlers, topic, clock);
  // Enqueued with no producer wake at all (the alarm was lost): due 15 s after the next cron.
  const job = await d.queue.enqueue({ topic, payload: 1, runAt: MINUTE + 75_000 });
  clock.t = MINUTE + 60_000;
  const report = await d.cron({ scheduledTime: MINUTE + 60_000 });
  expect(report).not.toBeNull();
  expect(report!.claimed).toBe(1);
  expect(report!.ended).toBe("idle");
  expect(seen.map((s) => [s.id, s.at - s.dueAt])).toEqual([[job.id, 0]]);
});

it("a cron look runs the loop while one runs or the mark is not the ended loop's", async () => {
  const clock = new VirtualClock(MINUTE);
  const d = tickDeployment({ TICK_POLL_MS: "1000", TICK_IDLE_PEEK_MS: "20000" }, clock);
  // No mark yet (a first cron, or a loop that ended working): the loop runs, and ends idle.
  const first = await d.cron({ scheduledTime: MINUTE });
  expect(first?.ended).toBe("idle");
  clock.t = MINUTE + 60_000;
  expect(await d.cron({ scheduledTime: MINUTE + 60_000 })).toBeNull();
});

it("while no loop runs, a schedule's next occurrence and a drain's retry due before the next cron's look arm the alarm; later ones do not", async () => {
  const { wakeForSoonSchedule } = await import("../../../src/tick/wake.js");
  const { armForWorkLeft } = await import("../../../src/tick/wake-alarm.js");
  const clock = new VirtualClock(MINUTE);
  const { armed, ns } = alarms();
  const d = await endedIdle(clock, ns);
  const now = clock.now();
  const waits: Array<Promise<unknown>> = [];
  const schedule = (nextAt: number) =>
    wakeForSoonSchedule({ env: d.env, settings: d.settings, queue: d.queue, nextAt, waitUntil: (w) => void waits.push(w), clock });
  // Past the next cron's look: that look finds it.
  await schedule(now + 90_000);
  await Promise.all(waits);
  expect(armed).toEqual([]);
  await schedule(now + 40_000);
  await Promise.all(waits);
  expect(armed.map((a) => a.at)).toEqual([now + 39_000]);
  // A drain's retry, sooner still: the alarm moves to it (this isolate armed it for later).
  await armForWorkLeft(d.env, d.queue, now + 30_000, now);
  await armForWorkLeft(d.env, d.queue, now + 90_000, now);
  expect(armed.map((a) => a.at)).toEqual([now + 39_000, now + 29_000]);
});

it("once its jobs settle, a topic is not looked at again at their leases' end: the next cron only looks", async () => {
  const clock = new VirtualClock(MINUTE + 30_000);
  const d = tickDeployment({ TICK_POLL_MS: "1000", TICK_IDLE_PEEK_MS: "20000", TICK_ALARM: alarms().ns } as Partial<Env>, clock);
  const topics = [0, 1, 2, 3].map((i) => uniqueTopic(`lease${i}`));
  const seen = topics.map((t) => recorder(d.handlers, t, clock));
  // Twelve jobs on four topics, due over the next few seconds: each claim scores its topic by its leases' end, a minute on.
  for (const [i, t] of topics.entries())
    for (let k = 0; k < 3; k++) await d.queue.enqueue({ topic: t, payload: k, runAt: clock.now() + 1_000 + i * 700 + k * 300 });
  const report = await d.tick({ scheduledTime: clock.now(), windowMs: 30_000, endWhenIdle: true });
  expect([report.ended, report.claimed, seen.flat().length]).toEqual(["idle", 12, 12]);
  // Every lease settled: the index holds no look before the sweep of the finished jobs, an hour on.
  const look = await d.queue.look(MINUTE + 60_000);
  expect(look.earliestAt).toBeGreaterThan(MINUTE + 3_600_000);
  clock.t = MINUTE + 60_000;
  expect(await d.cron({ scheduledTime: MINUTE + 60_000 })).toBeNull();
});

it("a minute whose first poll found nothing to sample still gets its backlog sample once work begins, though the loop ends idle in it", async () => {
  const clock = new VirtualClock(MINUTE + 1_000);
  const d = tickDeployment({ TICK_POLL_MS: "100", TICK_IDLE_PEEK_MS: "20000", TICK_ALARM: alarms().ns } as Partial<Env>, clock);
  const topic = uniqueTopic("sampled");
  recorder(d.handlers, topic, clock);
  // Jobs stored after the loop's first poll listed an empty index: one due soon, one in an hour (the backlog to sample).
  let stored = false;
  const producer = clock.spawn("producer", async () => {
    await clock.sleep(50);
    await d.queue.enqueue({ topic, payload: 1, runAt: MINUTE + 2_000 });
    await d.queue.enqueue({ topic, payload: 2, runAt: MINUTE + 3_600_000 });
    stored = true;
  });
  const report = await d.tick({ scheduledTime: MINUTE + 1_000, windowMs: 50_000, endWhenIdle: true });
  await producer;
  expect([stored, report.ended, report.claimed]).toEqual([true, "idle", 1]);
  expect(clock.now()).toBeLessThan(MINUTE + 60_000);
  const series = await d.queue.topicSeries(topic, { minutes: 1, now: MINUTE + 30_000 });
  expect(series.at(-1)?.backlog?.scheduled).toBe(1);
});
