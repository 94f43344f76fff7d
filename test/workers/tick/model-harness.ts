/**
 * The model-based tick test's ONE adapter to the code under test
 * (test/workers/tick/model.test.ts drives everything through this file).
 *
 * Re-pointing it at new tick / queue code should take minutes: only the
 * functions marked "RE-POINT" below touch src/tick and src/queue internals.
 *
 *   startTick(scheduledTime, windowMs)   one cron invocation: runTick on the sim clock,
 *                                        fan-out chunks run in-process (runChunk)
 *   enqueue(inputs, producer)            the producer's write, then producerEnqueued
 *   producerEnqueued(jobs, producer)     the wake path (today: a replica of src/tick/wake.ts
 *                                        on the sim clock, see "today's wiring" below)
 *   configure(topic, patch)              queue.configureTopic
 *   claimPull / ackPull / nackPull       queue.claim / ack / fail, as a pull consumer
 *   get(id)                              queue.get
 *
 * Everything it does is recorded in `trace` (claims, settles, sleep-mark
 * changes, invocations, drains, log lines), tagged with the runner that did
 * it (tick#n, drain#n, fanout, pull, producer) through an AsyncLocalStorage,
 * so a failing run can be explained. Recording patches Queue.prototype's
 * claim, settle and peek for this harness' prefix only: it keeps working
 * when the new code builds its queues itself.
 *
 * Time: every queue reads the sim clock (`queueFromSettings(s, { now })`),
 * the loop and drains sleep on it. Redis TTLs (tick lock, sleep mark) still
 * run on real time; runs are short enough in real time that none expires.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { settings as parseSettings, type Env, type Settings } from "../../../src/env.js";
import { Handlers } from "../../../src/handlers/registry.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { Queue, type ClaimResult, type EnqueueInput, type EnqueueResult, type JobSnapshot, type Outcome } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import type { TopicPatch } from "../../../src/queue/topics.js";
import { MAX_HANDOVERS } from "../../../src/tick/chunk.js";
import { runDrain as runDrainOf } from "../../../src/tick/drain.js";
import type { TickReport } from "../../../src/tick/loop.js";
import { runChunk as runChunkOf, type ChunkReport } from "../../../src/tick/run-chunk.js";
import type { LogLine } from "../../../src/tick/settle.js";
import { wakeForSoonJobs as wake } from "../../../src/tick/wake.js";
import { freshEnv, tickOnce } from "../fixtures.js";
import { testEnv } from "../self.js";
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
interface MarkEvent {
  at: number;
  runner: string;
  change: number | "c" | "clear";
}
interface InvocationEvent {
  id: string;
  scheduledTime: number;
  startedAt: number;
  windowEnd: number;
  endedAt?: number;
  report?: TickReport;
}
interface DrainEvent {
  id: string;
  topic: string;
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
  marks: MarkEvent[];
  invocations: InvocationEvent[];
  drains: DrainEvent[];
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
  startTick(scheduledTime: number, windowMs: number): Promise<TickReport>;
  enqueue(inputs: EnqueueInput[], producer?: number): Promise<EnqueueResult[]>;
  producerEnqueued(jobs: Array<{ topic: string; dueAt: number }>, producer?: number): Promise<void>;
  configure(topic: string, patch: TopicPatch): Promise<void>;
  claimPull(topic: string, max: number, leaseMs: number): Promise<ClaimResult>;
  ackPull(id: string, attempt: number): Promise<"acked" | "stale">;
  nackPull(id: string, attempt: number, failure: { error: string; retryAfterMs?: number; permanent?: boolean }): Promise<"retry" | "dead" | "stale">;
  get(id: string): Promise<JobSnapshot | null>;
  /** Stops recording (before the clock is run out at the end). */
  stopRecording(): void;
  /** Undoes the patches and deletes the run's keys. */
  dispose(): Promise<void>;
}

/** A deployment of its own (fresh prefix, code handlers of its own), all on `clock`. `env` overrides settings (strings, as bindings are). */
export function createModelHarness(options: { env: Partial<Env>; clock: SimClock }): ModelHarness {
  const { clock } = options;
  const env = freshEnv("model", options.env);
  const s = parseSettings(env);
  const now = () => clock.now();
  const queue = queueFromSettings(s, { now });
  const trace: Trace = { claims: [], settles: [], marks: [], invocations: [], drains: [], logs: [] };
  const handlers = new Handlers();
  let recording = true;
  const unpatch = recordQueueCalls(s.prefix, trace, clock, () => recording);
  const log = (line: LogLine) => {
    if (!recording) return;
    if (line.level === "warn" || line.level === "error") {
      if (trace.logs.length < 2_000) trace.logs.push({ at: clock.now(), runner: currentRunner(), line });
    }
  };
  const wiring = wiringOf({ s, handlers, clock, trace, log, isRecording: () => recording });
  let invocations = 0;

  return {
    env,
    settings: s,
    prefix: s.prefix,
    handlers,
    trace,

    // RE-POINT: one cron invocation (src/tick/scheduled.ts without the heartbeat).
    startTick(scheduledTime, windowMs) {
      const id = `tick#${++invocations}`;
      const inv: InvocationEvent = { id, scheduledTime, startedAt: clock.now(), windowEnd: scheduledTime + windowMs };
      trace.invocations.push(inv);
      return asRunner(id, async () => {
        const report = await tickOnce(s, {
          queue: queueFromSettings(s, { now }),
          handlers,
          scheduledTime,
          windowMs,
          clock,
          log,
          fanOut: (topic, max) => asRunner(`${id}/fanout`, () => wiring.runChunk(topic, max)),
          handOver: (end) => asRunner(`${id}/successor`, () => this.startTick(scheduledTime, end - scheduledTime)),
        });
        inv.endedAt = clock.now();
        inv.report = report;
        return report;
      });
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

    producerEnqueued(jobs, producer = 0) {
      return asRunner("producer", () => wiring.wakeForSoonJobs(queue, jobs, producer));
    },

    // What PUT /v1/topics and …/resume do: configure, then wake the topic when it may deliver again.
    async configure(topic, patch) {
      await asRunner("driver", () => queue.configureTopic(topic, patch));
      if (patch.paused === false || patch.mode === "push") await this.producerEnqueued([{ topic, dueAt: now() }]);
    },
    claimPull: (topic, max, leaseMs) => asRunner("pull", () => queue.claim(topic, { max, leaseMs, mode: "pull" })),
    ackPull: (id, attempt) => asRunner("pull", () => queue.ack(id, attempt)),
    nackPull: (id, attempt, failure) => asRunner("pull", () => queue.nack(id, attempt, failure)),
    get: (id) => queue.get(id),

    stopRecording() {
      recording = false;
    },

    async dispose() {
      recording = false;
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

function wiringOf(ctx: { s: Settings; handlers: Handlers; clock: SimClock; trace: Trace; log: (line: LogLine) => void; isRecording: () => boolean }) {
  const { s, handlers, clock, trace, log } = ctx;
  const now = () => clock.now();
  let drains = 0;

  /** TickChunk.run. */
  const runChunk = (topic: string, max: number): Promise<ChunkReport> =>
    runChunkOf({ queue: queueFromSettings(s, { now }), settings: s, handlers, topic, max, clock, log });

  /** TickChunk.drain, with its fan-out and successors. */
  const runDrain = (topic: string, horizonMs: number, handovers = 0): Promise<ChunkReport> =>
    runDrainOf({
      queue: queueFromSettings(s, { now }),
      settings: s,
      handlers,
      topic,
      horizonMs,
      clock,
      log,
      fanOut: (t, max) => runChunk(t, max),
      ...(handovers < MAX_HANDOVERS ? { handOver: (h: number) => runDrain(topic, h, handovers + 1) } : {}),
    });

  /** The producer's wake path (src/tick/wake.ts) with its drains as tasks of the simulation. */
  async function wakeForSoonJobs(queue: Queue, jobs: Array<{ topic: string; dueAt: number }>, producer: number): Promise<void> {
    await wake({
      env: testEnv,
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

  return { runChunk, runDrain, wakeForSoonJobs };
}

// ---------------------------------------------------------------------------
// Recording (RE-POINT only if Queue's claim / settle / peek change shape)
// ---------------------------------------------------------------------------

function recordQueueCalls(prefix: string, trace: Trace, clock: SimClock, isRecording: () => boolean): () => void {
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
    const r = await settle.call(this, topic, outcomes, options);
    if (mine(this)) {
      trace.settles.push({
        at,
        runner,
        topic,
        outcomes: outcomes.map((o, i) => ({
          id: o.id,
          attempt: o.attempt,
          kind: o.kind,
          ...(o.kind === "retry" ? { retryAt: o.at } : {}),
          applied: r[i]!.applied,
        })),
      });
    }
    return r;
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
