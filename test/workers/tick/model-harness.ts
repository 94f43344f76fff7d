/**
 * The model-based tick test's ONE adapter to the code under test
 * (test/workers/tick/model.test.ts drives everything through this file).
 *
 * Re-pointing it at new tick / queue code should take minutes: only the
 * functions marked "RE-POINT" below touch src/tick and src/queue internals.
 *
 *   startTick(scheduledTime, windowMs)   one cron invocation: cronTick on the sim clock (with
 *                                        the wake alarm, its look first and a loop that ends
 *                                        idle), fan-out chunks run in-process (runChunk)
 *   enqueue(inputs, producer)            the producer's write, then producerEnqueued
 *   producerEnqueued(jobs, producer)     the wake path (src/tick/wake.ts) on the sim clock: its
 *                                        drains run here, and with the wake alarm it arms
 *                                        a SimAlarm (sim-alarm.ts) whose firing runs the loop
 *                                        TickChunk.wakeTick runs (wakeLoop)
 *   configure(topic, patch)              queue.configureTopic
 *   setFlowKey(topic, key, settings)     queue.setFlowKey, then the wake (as its route)
 *   flowState(topic)                     what a shaped topic's flow keys hold in Redis (to observe)
 *   claimPull / ackPull / nackPull       queue.claim / ack / nack, as a pull consumer (its settles recorded)
 *   get(id)                              queue.get
 *   look()                               the cron's look (lock, sleep mark, index head), to observe
 *
 * Everything it does is recorded in `trace` (claims, settles, sleep-mark
 * changes, who held the tick lock when, invocations, drains, the alarm's arms
 * and firings, log lines), tagged with the runner that did
 * it (tick#n, drain#n, fanout, pull, producer) through an AsyncLocalStorage,
 * so a failing run can be explained. Recording patches Queue.prototype's
 * claim, settle and peek for this harness' prefix only: it keeps working
 * when the new code builds its queues itself. The settle patch also loses
 * the settles `loseSettle` picks: they never reach Redis (the invocation that
 * ran the attempt died with it), so their leases expire and a claim reaps them. The loops' locks are the
 * harness' own, recorded as they are taken and let go.
 *
 * Time: every queue reads the sim clock (`queueFromSettings(s, { now })`),
 * the loop and drains sleep on it. Redis TTLs (tick lock, sleep mark "1") still
 * run on real time; runs are short enough in real time that none expires.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { settings as parseSettings, type Env, type Settings } from "../../../src/env.js";
import { Handlers } from "../../../src/handlers/registry.js";
import { queueFromSettings, tickLockFromSettings } from "../../../src/queue/from-settings.js";
import type { FlowKeySettings } from "../../../src/queue/flow-keys.js";
import { topicOfJobId } from "../../../src/queue/ids.js";
import type { FlowKeys } from "../../../src/queue/keys.js";
import type { TickLock } from "../../../src/queue/lock.js";
import {
  Queue,
  type ClaimResult,
  type EnqueueInput,
  type EnqueueResult,
  type JobSnapshot,
  type Outcome,
  type TickLook,
  type UpsertInput,
  type UpsertResult,
} from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import type { TopicPatch } from "../../../src/queue/topics.js";
import { MAX_HANDOVERS, wakeLoop } from "../../../src/tick/chunk.js";
import { runDrain as runDrainOf } from "../../../src/tick/drain.js";
import { runTick, type TickOptions, type TickReport } from "../../../src/tick/loop.js";
import { runChunk as runChunkOf, type ChunkReport } from "../../../src/tick/run-chunk.js";
import { cronTick } from "../../../src/tick/scheduled.js";
import type { LogLine } from "../../../src/tick/settle.js";
import { wakeForSoonJobs as wake } from "../../../src/tick/wake.js";
import { armForWorkLeft } from "../../../src/tick/wake-alarm.js";
import { freshEnv } from "../fixtures.js";
import { SimAlarm, type AlarmArm, type AlarmFault, type AlarmFiring } from "./sim-alarm.js";
import type { SimClock } from "./sim-clock.js";

/**
 * What the system promises about a resume: it lowers the topic's index score,
 * so an awake tick takes it at its next poll, and the route starts the
 * producer's wake path, so a sleeping tick's producers drain it at once. The
 * model's lateness bound (TICK_POLL_MS + 100 ms) starts this long after a resume.
 */
export const RESUME_TAKES_EFFECT_WITHIN_MS = 0;

// ---------------------------------------------------------------------------
// The trace
// ---------------------------------------------------------------------------

interface ClaimEvent {
  at: number;
  runner: string;
  topic: string;
  jobs: Array<{ id: string; attempt: number; dueAt: number }>;
  paused: boolean;
  rateLimitedForMs: number;
  nextDueAt: number | null;
  reaped: { retried: number; dead: number };
}
interface SettleEvent {
  at: number;
  runner: string;
  topic: string;
  outcomes: Array<{ id: string; attempt: number; kind: Outcome["kind"]; retryAt?: number; applied: boolean }>;
}
/** An attempt's settle that never reached Redis (`loseSettle` picked it). */
interface LostSettleEvent {
  at: number;
  runner: string;
  topic: string;
  id: string;
  attempt: number;
}
interface MarkEvent {
  at: number;
  runner: string;
  change: number | "c" | "clear";
}
interface InvocationEvent {
  id: string;
  /** What started it: the cron (its look, then maybe the loop), the wake alarm (TickChunk.wakeTick), a loop out of budget (continueTick). */
  by: "cron" | "alarm" | "handover";
  scheduledTime: number;
  startedAt: number;
  windowEnd: number;
  endedAt?: number;
  /** Null: a cron's look left the tick asleep, and no loop ran. */
  report?: TickReport | null;
}
/** A loop's hold of the tick lock: from when it took it to when it let go (absent while held). */
interface HoldEvent {
  runner: string;
  from: number;
  to?: number;
}
interface DrainEvent {
  id: string;
  topic: string;
  /** The producer isolate that asked for it; -1: a loop whose chunks ended after it let go of the lock. */
  producer: number;
  /** When the producer asked for it, the due time it waits for, and its horizon end. */
  requestedAt: number;
  dueAt: number;
  until: number;
  startedAt?: number;
  endedAt?: number;
  claimed: number;
  /** What ended it, when it failed. */
  error?: string;
}
export interface Trace {
  claims: ClaimEvent[];
  settles: SettleEvent[];
  lostSettles: LostSettleEvent[];
  marks: MarkEvent[];
  invocations: InvocationEvent[];
  holds: HoldEvent[];
  drains: DrainEvent[];
  /** The wake alarm, when the deployment has it: its fault, every arm asked for, every alarm that came due. */
  alarm: { fault: AlarmFault; arms: AlarmArm[]; firings: AlarmFiring[] } | null;
  /** Warnings and errors the loop and chunks logged (bounded). */
  logs: Array<{ at: number; runner: string; line: LogLine }>;
}

// ---------------------------------------------------------------------------
// Runner tagging
// ---------------------------------------------------------------------------

const runnerContext = new AsyncLocalStorage<string>();
/** Which runner (tick#n, drain#n, tick#n/fanout, pull, producer, driver) the caller runs in. */
export const currentRunner = (): string => runnerContext.getStore() ?? "driver";
const asRunner = <T>(runner: string, work: () => Promise<T>): Promise<T> => runnerContext.run(runner, work);

// ---------------------------------------------------------------------------
// The harness
// ---------------------------------------------------------------------------

export interface ModelHarness {
  readonly env: Env;
  readonly settings: Settings;
  readonly prefix: string;
  /** The deployment's code handlers, which its ticks, drains and fanned-out chunks run. */
  readonly handlers: Handlers;
  readonly trace: Trace;
  /** One cron invocation; null when its look left the tick asleep. */
  startTick(scheduledTime: number, windowMs: number): Promise<TickReport | null>;
  enqueue(inputs: EnqueueInput[], producer?: number): Promise<EnqueueResult[]>;
  /** An upsert by job key, then the wake, as the producer route does. */
  upsert(input: UpsertInput, producer?: number): Promise<UpsertResult>;
  cancel(id: string): Promise<"cancelled" | "not-found" | "inflight">;
  producerEnqueued(jobs: Array<{ topic: string; dueAt: number }>, producer?: number): Promise<void>;
  configure(topic: string, patch: TopicPatch): Promise<void>;
  setFlowKey(topic: string, key: string, settings: FlowKeySettings | null): Promise<void>;
  flowState(topic: string): Promise<FlowState>;
  claimPull(topic: string, max: number, leaseMs: number): Promise<ClaimResult>;
  ackPull(id: string, attempt: number): Promise<"acked" | "stale">;
  nackPull(id: string, attempt: number, failure: { error: string; retryAfterMs?: number; permanent?: boolean }): Promise<"retry" | "dead" | "stale">;
  get(id: string): Promise<JobSnapshot | null>;
  /** What a cron's look sees now (it records a heartbeat, as every look does). */
  look(): Promise<TickLook>;
  /** Stops recording, and the wake alarm from firing (before the clock is run out at the end). */
  stopRecording(): void;
  /** Undoes the patches and deletes the run's keys. */
  dispose(): Promise<void>;
}

/** What a shaped topic's flow keys hold (src/queue/lua/lib/flow.lua): job counts, and each key's entry. */
export interface FlowState {
  /** Keyed jobs scheduled or waiting (fdue), not yet due (fsched), due and waiting for their key's turn (fready), in the keys' index (fkidx). */
  scheduled: number;
  notDue: number;
  waiting: number;
  indexed: number;
  /** Keys in the calendar (fcal) and parked (fpark), with their scores. */
  calendar: Array<[string, number]>;
  parked: Array<[string, number]>;
  /** fin: keys' jobs in flight, and what they started of a turn cut short ("<key>\tu"). */
  inFlight: Record<string, string>;
}

/**
 * A deployment of its own (fresh prefix, code handlers of its own), all on `clock`. `env` overrides settings
 * (strings, as bindings are). With `alarm` it binds the wake alarm (TICK_ALARM, as wrangler.toml does),
 * simulated on `clock` with that fault; without, it has none. `loseSettle` picks the attempts whose
 * settle never reaches Redis.
 */
export function createModelHarness(options: {
  env: Partial<Env>;
  clock: SimClock;
  alarm?: { fault: AlarmFault; delays: number[] };
  loseSettle?: (id: string, attempt: number) => boolean;
}): ModelHarness {
  const { clock } = options;
  const env = freshEnv("model", options.env);
  // The test Worker binds a real TICK_ALARM: the model's deployment has its simulated one, or none.
  delete env.TICK_ALARM;
  const s = parseSettings(env);
  const now = () => clock.now();
  const queue = queueFromSettings(s, { now });
  const trace: Trace = { claims: [], settles: [], lostSettles: [], marks: [], invocations: [], holds: [], drains: [], logs: [], alarm: null };
  const handlers = new Handlers();
  let recording = true;
  const isRecording = () => recording;
  const unpatch = recordQueueCalls(s.prefix, trace, clock, isRecording, options.loseSettle ?? (() => false));
  const log = (line: LogLine) => {
    if (!recording) return;
    if (line.level === "warn" || line.level === "error") {
      if (trace.logs.length < 2_000) trace.logs.push({ at: clock.now(), runner: currentRunner(), line });
    }
  };
  const wiring = wiringOf({ env, s, handlers, clock, trace, log, isRecording });
  let invocations = 0;

  /** One invocation of the tick, recorded in the trace and run as a runner of its own (tick#n). */
  function invocation(by: InvocationEvent["by"], scheduledTime: number, windowEnd: number, run: (id: string) => Promise<TickReport | null>) {
    const id = `tick#${++invocations}`;
    const inv: InvocationEvent = { id, by, scheduledTime, startedAt: clock.now(), windowEnd };
    trace.invocations.push(inv);
    return asRunner(id, async () => {
      const report = await run(id);
      inv.endedAt = clock.now();
      inv.report = report;
      return report;
    });
  }

  // RE-POINT: what every loop runs on (src/tick/shard-tick.ts's shardTickOptions), its chunks fanned out and its successor here.
  function loopOptions(
    id: string,
    scheduledTime: number,
    handovers: number,
  ): Pick<TickOptions, "queue" | "lock" | "settings" | "handlers" | "scheduledTime" | "clock" | "log" | "fanOut" | "handOver" | "wake"> {
    const queue = queueFromSettings(s, { now });
    return {
      queue,
      lock: recordedLock(tickLockFromSettings(s), id, trace, clock, isRecording),
      settings: s,
      handlers,
      scheduledTime,
      clock,
      log,
      fanOut: (topic: string, max: number) => asRunner(`${id}/fanout`, () => wiring.runChunk(topic, max)),
      ...(handovers < MAX_HANDOVERS ? { handOver: (end: number) => continueTick(scheduledTime, end, handovers + 1) } : {}),
      // Its chunks that end after it let go of the lock wake their topics as a producer would (producer -1: a loop's).
      wake: (jobs) => asRunner(`${id}/late`, () => wiring.wakeForSoonJobs(queue, jobs, -1)),
    };
  }

  // RE-POINT: TickChunk.continueTick (src/tick/chunk.ts): the rest of a window, the loop alone.
  const continueTick = (scheduledTime: number, windowEnd: number, handovers: number): Promise<TickReport | null> =>
    invocation("handover", scheduledTime, windowEnd, (id) =>
      runTick({ ...loopOptions(id, scheduledTime, handovers), windowMs: windowEnd - scheduledTime, endWhenIdle: env.TICK_ALARM !== undefined }),
    );

  // RE-POINT: TickChunk.wakeTick (src/tick/chunk.ts), which the alarm's alarm() calls: the loop wakeLoop says, on the sim clock.
  async function wakeTick(prefix: string): Promise<void> {
    const w = wakeLoop(s, prefix, clock.now());
    if (!w) return;
    await invocation("alarm", w.scheduledTime, w.windowEnd, (id) =>
      runTick({
        ...loopOptions(id, w.scheduledTime, 0),
        windowMs: w.windowEnd - w.scheduledTime,
        waitForLock: w.waitForLock,
        endWhenIdle: env.TICK_ALARM !== undefined,
      }),
    );
  }

  const alarm = options.alarm ? new SimAlarm(clock, options.alarm.fault, options.alarm.delays, wakeTick) : null;
  if (alarm) {
    env.TICK_ALARM = alarm.namespace;
    trace.alarm = { fault: alarm.fault, arms: alarm.arms, firings: alarm.firings };
  }

  return {
    env,
    settings: s,
    prefix: s.prefix,
    handlers,
    trace,

    // RE-POINT: one cron invocation of the shard (src/tick/scheduled.ts's tickShard): with the wake alarm, its look first.
    startTick(scheduledTime, windowMs) {
      return invocation("cron", scheduledTime, scheduledTime + windowMs, (id) =>
        cronTick({ ...loopOptions(id, scheduledTime, 0), windowMs, wakeAlarm: env.TICK_ALARM !== undefined }),
      );
    },

    // RE-POINT: what the producer route does (src/producer/routes/jobs.ts): store, then wake.
    async enqueue(inputs, producer = 0) {
      const results = await asRunner("producer", () => queue.enqueueBatch(inputs));
      await this.producerEnqueued(
        results.filter((r) => !r.deduplicated && r.dueAt !== null).map((r) => ({ topic: r.topic, dueAt: r.dueAt! })),
        producer,
      );
      return results;
    },

    // RE-POINT: the producer route's upsert (src/producer/routes/jobs.ts's upsertJob): store, then wake unless ignored.
    async upsert(input, producer = 0) {
      const r = await asRunner("producer", () => queue.upsert(input));
      if (r.result !== "ignored") await this.producerEnqueued([{ topic: r.topic, dueAt: r.dueAt }], producer);
      return r;
    },
    cancel: (id) => asRunner("driver", () => queue.cancel(id)),

    producerEnqueued(jobs, producer = 0) {
      return asRunner("producer", () => wiring.wakeForSoonJobs(queue, jobs, producer));
    },

    // What PUT /v1/topics and …/resume do: configure, then wake the topic when it may deliver again.
    async configure(topic, patch) {
      await asRunner("driver", () => queue.configureTopic(topic, patch));
      if (patch.paused === false || patch.mode === "push") await this.producerEnqueued([{ topic, dueAt: now() }]);
    },
    // What PUT and DELETE /v1/topics/:topic/flow-keys/:key do: set (or remove), then wake the topic when the key may deliver again.
    async setFlowKey(topic, key, settings) {
      await asRunner("driver", () => queue.setFlowKey(topic, key, settings));
      if (!settings?.paused) await this.producerEnqueued([{ topic, dueAt: now() }]);
    },
    flowState: (topic) => readFlowState(s, queue.keys.topic(topic).flow),
    claimPull: (topic, max, leaseMs) => asRunner("pull", () => queue.claim(topic, { max, leaseMs, mode: "pull" })),
    // A pull consumer's ack and nack settle through the queue's own settle, not Queue.prototype.settle: recorded here.
    async ackPull(id, attempt) {
      const at = now();
      const r = await asRunner("pull", () => queue.ack(id, attempt));
      if (isRecording())
        trace.settles.push({ at, runner: "pull", topic: topicOfJobId(id) ?? "", outcomes: [{ id, attempt, kind: "ack", applied: r === "acked" }] });
      return r;
    },
    async nackPull(id, attempt, failure) {
      const at = now();
      const r = await asRunner("pull", () => queue.nack(id, attempt, failure));
      const kind = r === "dead" ? "dead" : "retry";
      if (isRecording()) trace.settles.push({ at, runner: "pull", topic: topicOfJobId(id) ?? "", outcomes: [{ id, attempt, kind, applied: r !== "stale" }] });
      return r;
    },
    get: (id) => queue.get(id),
    look: () => queue.look(clock.now()),

    stopRecording() {
      recording = false;
      alarm?.stop();
    },

    async dispose() {
      this.stopRecording();
      unpatch();
      await deleteKeys(s);
    },
  };
}

// ---------------------------------------------------------------------------
// The wiring: the code's own wakeForSoonJobs, runDrain and runChunk, on the
// sim clock. What a deployment reaches through TICK_RUNNER (a fanned-out
// chunk, a drain's successor) runs here as a task of the simulation.
// ---------------------------------------------------------------------------

function wiringOf(ctx: { env: Env; s: Settings; handlers: Handlers; clock: SimClock; trace: Trace; log: (line: LogLine) => void; isRecording: () => boolean }) {
  const { env, s, handlers, clock, trace, log } = ctx;
  const now = () => clock.now();
  let drains = 0;

  /** TickChunk.run. */
  const runChunk = (topic: string, max: number): Promise<ChunkReport> =>
    runChunkOf({ queue: queueFromSettings(s, { now }), settings: s, handlers, topic, max, clock, log });

  /** TickChunk.drain, with its fan-out and successors, and at its end the wake alarm for work it leaves before the next cron's look. */
  const runDrain = async (topic: string, horizonMs: number, handovers = 0): Promise<ChunkReport> => {
    const queue = queueFromSettings(s, { now });
    const report = await runDrainOf({
      queue,
      settings: s,
      handlers,
      topic,
      horizonMs,
      clock,
      log,
      fanOut: (t, max) => runChunk(t, max),
      ...(handovers < MAX_HANDOVERS ? { handOver: (h: number) => runDrain(topic, h, handovers + 1) } : {}),
    });
    // TickChunk.drain logs a failed arm and goes on; a run with the fault arm-fails expects them.
    await armForWorkLeft(env, queue, report.nextLookAt ?? null, clock.now()).catch(() => undefined);
    return report;
  };

  /** The producer's wake path (src/tick/wake.ts) with its drains as tasks of the simulation. */
  async function wakeForSoonJobs(queue: Queue, jobs: Array<{ topic: string; dueAt: number }>, producer: number): Promise<void> {
    await wake({
      env,
      settings: s,
      queue,
      jobs,
      clock,
      waitUntil: (work) => void clock.spawn(`waitUntil#${drains + 1}`, () => work.catch(() => undefined)),
      drain: (topic, horizonMs) => {
        const id = `drain#${++drains}`;
        const event: DrainEvent = {
          id,
          topic,
          producer,
          requestedAt: clock.now(),
          dueAt: clock.now(),
          until: clock.now() + horizonMs,
          claimed: 0,
          startedAt: clock.now(),
        };
        if (ctx.isRecording()) trace.drains.push(event);
        return asRunner(id, async () => {
          try {
            const r = await runDrain(topic, horizonMs);
            event.claimed = r.claimed;
            return r;
          } catch (err) {
            event.error = String(err);
            throw err;
          } finally {
            event.endedAt = clock.now();
          }
        });
      },
    });
  }

  return { runChunk, wakeForSoonJobs };
}

/** `lock`, recording in the trace when `runner` takes it and when it lets it go. */
function recordedLock(lock: TickLock, runner: string, trace: Trace, clock: SimClock, isRecording: () => boolean): TickLock {
  const { acquire, release } = lock;
  let hold: HoldEvent | undefined;
  lock.acquire = async (ttlMs, windowEnd) => {
    const got = await acquire.call(lock, ttlMs, windowEnd);
    if (got.acquired && isRecording()) {
      hold = { runner, from: clock.now() };
      trace.holds.push(hold);
    }
    return got;
  };
  lock.release = async (finalStatus) => {
    try {
      return await release.call(lock, finalStatus);
    } finally {
      if (hold) hold.to = clock.now();
    }
  };
  return lock;
}

// ---------------------------------------------------------------------------
// Recording (RE-POINT only if Queue's claim / settle / peek change shape)
// ---------------------------------------------------------------------------

function recordQueueCalls(
  prefix: string,
  trace: Trace,
  clock: SimClock,
  isRecording: () => boolean,
  loseSettle: (id: string, attempt: number) => boolean,
): () => void {
  const proto = Queue.prototype;
  const { claim, settle, peek } = proto;
  const mine = (q: Queue) => q.keys.prefix === prefix && isRecording();
  proto.claim = async function (this: Queue, topic, options) {
    const at = options.now ?? clock.now();
    const runner = currentRunner();
    const r = await claim.call(this, topic, options);
    if (mine(this)) {
      trace.claims.push({
        at,
        runner,
        topic,
        jobs: r.jobs.map((j) => ({ id: j.id, attempt: j.attempt, dueAt: j.dueAt })),
        paused: r.paused,
        rateLimitedForMs: r.rateLimitedForMs,
        nextDueAt: r.nextDueAt,
        reaped: r.reaped,
      });
    }
    return r;
  };
  proto.settle = async function (this: Queue, topic, outcomes, options = {}) {
    const at = options.now ?? clock.now();
    const runner = currentRunner();
    const lost = outcomes.map((o) => mine(this) && loseSettle(o.id, o.attempt));
    const kept = outcomes.filter((_, i) => !lost[i]);
    const r = kept.length > 0 ? await settle.call(this, topic, kept, options) : [];
    if (mine(this)) {
      if (kept.length > 0)
        trace.settles.push({
          at,
          runner,
          topic,
          outcomes: kept.map((o, i) => ({
            id: o.id,
            attempt: o.attempt,
            kind: o.kind,
            ...(o.kind === "retry" ? { retryAt: o.at } : {}),
            applied: r[i]!.applied,
          })),
        });
      for (const [i, o] of outcomes.entries()) if (lost[i]) trace.lostSettles.push({ at, runner, topic, id: o.id, attempt: o.attempt });
    }
    // The caller hears nothing applied for a lost one, as for a stale one: it goes on.
    let k = 0;
    return outcomes.map((o, i) => (lost[i] ? { id: o.id, applied: false } : r[k++]!));
  };
  proto.peek = async function (this: Queue, options) {
    const at = clock.now();
    const runner = currentRunner();
    const r = await peek.call(this, options);
    if (mine(this) && options.sleepMark !== undefined && r.lockHeld) trace.marks.push({ at, runner, change: options.sleepMark });
    return r;
  };
  return () => {
    proto.claim = claim;
    proto.settle = settle;
    proto.peek = peek;
  };
}

/** What a shaped topic's flow keys hold (read straight from Redis). */
async function readFlowState(s: Settings, f: FlowKeys): Promise<FlowState> {
  const redis = createRedis(s);
  const [scheduled, notDue, waiting, indexed, calendar, parked, inFlight] = await Promise.all([
    redis.zcard(f.fdue),
    redis.zcard(f.fsched),
    redis.zcard(f.fready),
    redis.zcard(f.fkidx),
    redis.zrange<string[]>(f.fcal, 0, -1, { withScores: true }),
    redis.zrange<string[]>(f.fpark, 0, -1, { withScores: true }),
    redis.hgetall<Record<string, string>>(f.fin),
  ]);
  const pairs = (flat: unknown[]): Array<[string, number]> => {
    const out: Array<[string, number]> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push([String(flat[i]), Number(flat[i + 1])]);
    return out;
  };
  return { scheduled, notDue, waiting, indexed, calendar: pairs(calendar), parked: pairs(parked), inFlight: inFlight ?? {} };
}

/** Deletes every key of the run's prefix. */
async function deleteKeys(s: Settings): Promise<void> {
  const redis = createRedis(s);
  let cursor = "0";
  do {
    const [next, keys] = (await redis.scan(cursor, { match: `${s.prefix}*`, count: 1_000 })) as [string | number, string[]];
    cursor = String(next);
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
}
