/**
 * The model-based test of the tick (issue 13): scenarios, how one runs on
 * the sim clock against the real Redis, and what is checked afterwards.
 * model.test.ts drives it with fast-check; everything it does to the code
 * under test goes through model-harness.ts. A scenario's shaped topic (flow
 * keys, issue 36) and its own checks are in model-flow.ts.
 */
import fc from "fast-check";
import { PermanentError, RetryableError } from "../../../src/handlers/registry.js";
import { normalizeBackoff, type Backoff, type BackoffInput } from "../../../src/queue/policy/backoff.js";
import type { JobSnapshot } from "../../../src/queue/queue.js";
import type { TopicPatch } from "../../../src/queue/topics.js";
import { unlookedUntil } from "../../../src/tick/cron-look.js";
import { SLEEP_MARK_STALENESS_MS } from "../../../src/tick/wake.js";
import { createModelHarness, currentRunner, RESUME_TAKES_EFFECT_WITHIN_MS, type ModelHarness, type Trace } from "./model-harness.js";
import type { AlarmFault } from "./sim-alarm.js";
import { type Behaviour, behaviourArb } from "./model-behaviour.js";
import { seededRandom, SimClock } from "./sim-clock.js";
import { BASE, type Interval, longestFree, merge, rel } from "./model-time.js";
import { type CancelRecord, type LifetimePart, lifetimePartArb, LifetimeRun } from "./model-lifetime.js";
import {
  type FlowAttempt,
  fairnessViolations,
  flowPartArb,
  type FlowSpec,
  flowSettingsOf,
  keyBlocked,
  keyLimitViolations,
  keyName,
  type KeyPause,
  type KeyPauseEvent,
  keySettingsOf,
  leftoverViolations,
  priorityViolations,
} from "./model-flow.js";

/** Slack on top of TICK_POLL_MS in the lateness bound (the issue's "+ 100 ms"). */
const LATENESS_SLACK_MS = 100;

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

export interface TopicSpec {
  mode: "push" | "pull";
  rate?: number;
  burst?: number;
  concurrency?: number;
  maxAttempts: number;
  backoff: BackoffInput;
  /** A shaped topic's flow settings and keys with settings of their own (model-flow.ts). */
  flow?: FlowSpec;
}
export interface JobSpec {
  topic: number;
  delay: number;
  /** Behaviour of attempt 1, 2, …; past its end, ok. */
  plan: Behaviour[];
  maxAttempts?: number;
  backoff?: BackoffInput;
  /** A shaped topic's job: its flow key (by index, keyName), its priority (1–9). */
  key?: number;
  priority?: number;
}
export interface Scenario {
  pollMs: number;
  idlePeekMs: number;
  chunk: number;
  overlapMs: number;
  topics: TopicSpec[];
  /** Enqueue calls: at `at` ms after BASE, by producer isolate `producer`. */
  batches: Array<{ at: number; producer: number; jobs: JobSpec[] }>;
  pauses: Array<{ topic: number; at: number; forMs: number }>;
  /** Cron invocation k starts crons[k % length] ms after minute k (late); windows are 60 s + overlapMs. */
  crons: number[];
  /** Extra invocations (Cloudflare delivering a cron twice): minute, offset. */
  duplicates: Array<{ minute: number; offset: number }>;
  /** The pull consumer: claims up to `max` every `everyMs`. */
  consumer: { everyMs: number; max: number };
  /** Seeds Math.random (backoff jitter) during the run. */
  seed: number;
  /**
   * The deployment binds the wake alarm (TICK_ALARM, as wrangler.toml does): each cron invocation looks
   * first, loops end when idle, producers arm the alarm (simulated, sim-alarm.ts) with `fault` throughout
   * the run; `delays` (0–2 s, in turn) are how late a late alarm fires, or when a duplicated one fires
   * again. Absent: no alarm, loops sleep through their minute.
   */
  alarm?: { fault: AlarmFault; delays: number[] };
  /** Flow keys of shaped topics paused at `at` for `forMs`. */
  keyPauses?: KeyPause[];
  /** Cancels and upserts by job key (model-lifetime.ts). */
  lifetime?: LifetimePart;
}

const planArb = behaviourArb([
  ["ok", 4],
  ["retry", 2],
  ["error", 2],
  ["permanent", 1],
]);

const backoffArb: fc.Arbitrary<BackoffInput> = fc.oneof(
  fc.record({ type: fc.constant("fixed" as const), delay: fc.integer({ min: 0, max: 10_000 }) }),
  fc.record({
    type: fc.constant("exponential" as const),
    delay: fc.integer({ min: 100, max: 4_000 }),
    factor: fc.constantFrom(1, 1.5, 2, 3),
    maxDelay: fc.integer({ min: 1_000, max: 20_000 }),
    jitter: fc.boolean(),
  }),
  fc.record({ type: fc.constant("schedule" as const), delays: fc.array(fc.integer({ min: 0, max: 15_000 }), { minLength: 1, maxLength: 3 }) }),
);

const topicArb: fc.Arbitrary<TopicSpec> = fc
  .record({
    mode: fc.oneof({ weight: 3, arbitrary: fc.constant("push" as const) }, { weight: 1, arbitrary: fc.constant("pull" as const) }),
    rate: fc.option(fc.constantFrom(0.5, 1, 2, 5, 10), { nil: undefined, freq: 2 }),
    burst: fc.option(fc.constantFrom(1, 2, 3, 5), { nil: undefined }),
    concurrency: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 2 }),
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    backoff: backoffArb,
  })
  .map((t) => {
    const out: TopicSpec = { mode: t.mode, maxAttempts: t.maxAttempts, backoff: t.backoff };
    if (t.rate !== undefined) out.rate = t.rate;
    if (t.rate !== undefined && t.burst !== undefined) out.burst = t.burst;
    if (t.concurrency !== undefined) out.concurrency = t.concurrency;
    return out;
  });

const delayArb = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 2_000 }),
  fc.integer({ min: 0, max: 60_000 }),
  fc.integer({ min: 0, max: 60_000 }),
  fc.constantFrom(19_999, 20_000, 20_001, 60_000),
  // Past a producer's drain (TICK_IDLE_PEEK_MS) and often before the next cron's look: the wake alarm's jobs, while no loop runs.
  fc.integer({ min: 20_001, max: 50_000 }),
);

const jobArb = (topics: number): fc.Arbitrary<JobSpec> =>
  fc
    .record({
      topic: fc.nat(topics - 1),
      delay: delayArb,
      plan: fc.array(planArb, { minLength: 4, maxLength: 4 }),
      maxAttempts: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined, freq: 4 }),
      backoff: fc.option(backoffArb, { nil: undefined, freq: 4 }),
    })
    .map((j) => {
      const out: JobSpec = { topic: j.topic, delay: j.delay, plan: j.plan };
      if (j.maxAttempts !== undefined) out.maxAttempts = j.maxAttempts;
      if (j.backoff !== undefined) out.backoff = j.backoff;
      return out;
    });

/**
 * Scenarios of 1–4 topics, jobs enqueued over up to 2.5 virtual minutes.
 * No `chain`: topic indexes are drawn from 0–3 and taken modulo the number
 * of topics, so fast-check shrinks every part independently.
 */
export function scenarioArb(options: { maxSpanMs?: number; maxBatches?: number } = {}): fc.Arbitrary<Scenario> {
  const span = options.maxSpanMs ?? 150_000;
  return fc
    .record({
      pollMs: fc.constantFrom(100, 1_000),
      idlePeekMs: fc.constantFrom(0, 20_000),
      chunk: fc.oneof({ weight: 3, arbitrary: fc.constant(100) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) }),
      overlapMs: fc.constant(15_000),
      topics: fc.array(topicArb, { minLength: 1, maxLength: 4 }),
      batches: fc.array(fc.record({ at: fc.integer({ min: 0, max: span }), producer: fc.nat(1), jobs: fc.array(jobArb(4), { minLength: 1, maxLength: 3 }) }), {
        minLength: 1,
        maxLength: options.maxBatches ?? 10,
      }),
      pauses: fc.array(fc.record({ topic: fc.nat(3), at: fc.integer({ min: 0, max: span }), forMs: fc.integer({ min: 500, max: 40_000 }) }), { maxLength: 2 }),
      crons: fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 4 }),
      duplicates: fc.array(fc.record({ minute: fc.nat(3), offset: fc.integer({ min: 0, max: 20_000 }) }), { maxLength: 1 }),
      consumer: fc.record({ everyMs: fc.integer({ min: 500, max: 5_000 }), max: fc.integer({ min: 1, max: 5 }) }),
      seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      alarm: fc.option(
        fc.record({
          fault: fc.constantFrom<AlarmFault>("none", "lost", "duplicated", "late", "arm-fails"),
          delays: fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 3 }),
        }),
        { nil: undefined, freq: 2 },
      ),
      // Last, so a seed draws every other part as before it was added.
      flow: fc.option(flowPartArb({ span, backoff: backoffArb, delay: delayArb }), { nil: undefined, freq: 2 }),
      // After the flow part, for the same reason.
      lifetime: fc.option(lifetimePartArb(span), { nil: undefined, freq: 2 }),
    })
    .map(({ flow, lifetime, ...sc }): Scenario => {
      const spread = sc.alarm ? 2 : 1;
      // A shaped topic comes after the others, with jobs, pauses and key pauses of its own.
      const shaped = sc.topics.length;
      return (
        // Plain objects (fc.record makes null-prototype ones), so a printed counterexample pastes as a literal.
        JSON.parse(
          JSON.stringify({
            ...sc,
            topics: flow ? [...sc.topics, flow.topic] : sc.topics,
            // With the alarm, the default peek: without one, the alarm is never armed and no loop ends idle (the runs without it cover that).
            idlePeekMs: sc.alarm ? 20_000 : sc.idlePeekMs,
            // With the alarm, batches and pauses over twice the span, so loops end idle between them and jobs arrive into the ended tick.
            batches: [
              ...sc.batches.map((b) => ({ ...b, at: b.at * spread, jobs: b.jobs.map((j) => ({ ...j, topic: j.topic % sc.topics.length })) })),
              ...(flow?.batches ?? []).map((b) => ({ ...b, at: b.at * spread, jobs: b.jobs.map((j) => ({ ...j, topic: shaped })) })),
            ],
            pauses: [
              ...sc.pauses.map((p) => ({ ...p, at: p.at * spread, topic: p.topic % sc.topics.length })),
              ...(flow?.pauses ?? []).map((p) => ({ ...p, at: p.at * spread, topic: shaped })),
            ],
            ...(flow ? { keyPauses: flow.keyPauses.map((p) => ({ topic: shaped, ...p, at: p.at * spread })) } : {}),
            // Upserts go to push topics (a series drawn for a pull topic is dropped), cancels and expiries to the plain topics' jobs.
            ...(lifetime
              ? {
                  lifetime: {
                    cancels: lifetime.cancels.flatMap((c) => {
                      const plain = sc.batches.flatMap((b) => b.jobs.map(() => b.at * spread));
                      const job = c.job % Math.max(1, plain.length);
                      return plain.length === 0 ? [] : [{ job, at: plain[job]! + c.after }];
                    }),
                    expiries: lifetime.expiries.flatMap((e) => {
                      const plain = sc.batches.flatMap((b) => b.jobs);
                      const job = e.job % Math.max(1, plain.length);
                      return plain.length === 0 ? [] : [{ job, ttl: plain[job]!.delay + e.extra }];
                    }),
                    ...(lifetime.lateness ? { lateness: { ...lifetime.lateness, topic: lifetime.lateness.topic % sc.topics.length } } : {}),
                    upserts: lifetime.upserts
                      .map((u) => ({ topic: u.topic % sc.topics.length, steps: u.steps.map((st) => ({ ...st, at: st.at * spread })) }))
                      // Not into a topic with a maxLateness: a late upserted job expires, which the series' checks do not expect.
                      .filter((u) => sc.topics[u.topic]!.mode === "push" && u.topic !== (lifetime.lateness?.topic ?? -1) % sc.topics.length),
                  },
                }
              : {}),
          }),
        ) as Scenario
      );
    });
}

// ---------------------------------------------------------------------------
// Running a scenario
// ---------------------------------------------------------------------------

/** One attempt as a push handler saw it (or, for pull topics, as the consumer did). */
interface AttemptRecord {
  id: string;
  attempt: number;
  dueAt: number;
  start: number;
  end?: number;
  runner: string;
  /** An attempt never settled (hang): when a claim reaped its lease, from the job's attempt history. */
  reapedAt?: number;
}
interface JobModel {
  j: number;
  spec: JobSpec;
  topic: string;
  mode: "push" | "pull";
  id?: string;
  enqueuedAt?: number;
  dueAt?: number;
  attempts: AttemptRecord[];
  /** Pull jobs a push handler got. */
  pushed: AttemptRecord[];
  final?: JobSnapshot | null;
  /** A cancel the scenario sent it (model-lifetime.ts); the first that cancelled it, or the last. */
  cancel?: CancelRecord;
  /** Its expiresAt, when the scenario gave it one (model-lifetime.ts). */
  expiresAt?: number;
}
export interface Violation {
  kind: string;
  message: string;
  job?: number;
  topic?: string;
  attempt?: number;
  /** The time the violation is about (for the explanation). */
  at?: number;
  /** What the checker found around it, for telling known bugs apart (see model.test.ts KNOWN_BUGS). */
  facts?: ViolationFacts;
}
interface ViolationFacts {
  /** The runner that claimed the late attempt, or that pushed a pull job. */
  runner?: string;
  /** The runner that settled the previous attempt (scheduled this retry). */
  retryScheduledBy?: string;
  /** The tick's sleep mark was set at the attempt's due time. */
  tickAsleepAtDue?: boolean;
  /** The lateness is explained by the claiming runner being busy with a chunk's handlers (head-of-line). */
  headOfLine?: boolean;
  /** The topic has a concurrency limit and was claimed from meanwhile (served, one slot at a time). */
  throttledByConcurrency?: boolean;
  /** A drain of the topic that was alive at the due time ended by a SpinError. */
  drainSpun?: boolean;
  /** The stretch the attempt waited through began when a resume took effect (resume + RESUME_TAKES_EFFECT_WITHIN_MS). */
  afterResume?: boolean;
  /** The tick's sleep mark was set when that stretch began. */
  tickAsleepAtFreeStart?: boolean;
  /** ... and the tick had marked itself asleep while the topic was paused. */
  fellAsleepWhilePaused?: boolean;
  /** Attempt 1 was enqueued while a drain of its topic, started earlier, ran with a horizon reaching past the due time. */
  enqueuedDuringDrain?: boolean;
  /** A pull job that a push handler got. */
  pullPushed?: boolean;
  /** A SimClock spin or the error it caused. */
  spin?: boolean;
}
interface RunStats {
  pushJobs: number;
  pullJobs: number;
  attempts: number;
  invocations: number;
  drains: number;
  virtualMs: number;
  realMs: number;
  requests: number;
  steps: number;
  ended: string;
  /** With the wake alarm: what it did, and how the tick slept. */
  alarm: AlarmStats | null;
  /** With a shaped topic: its jobs, keys and what was done to them. */
  flow: FlowStats | null;
  /** With cancels and upserts (model-lifetime.ts): what they did. */
  lifetime: LifetimeStats | null;
}
interface LifetimeStats {
  /** Cancels sent, and those that cancelled a job. */
  cancels: number;
  cancelled: number;
  /** Upsert series, upserts sent, and jobs they created. */
  series: number;
  upserts: number;
  created: number;
  /** Jobs given an expiresAt, jobs in a topic with a maxLateness, and jobs that ended expired. */
  expiring: number;
  lateBound: number;
  expired: number;
}
interface FlowStats {
  /** Its jobs, those with a flow key (the rest are in the default lane), the keys they used, and those with a priority. */
  jobs: number;
  keyed: number;
  keys: number;
  prioritized: number;
  /** Attempts that hung (their leases reaped), and key pauses. */
  hung: number;
  keyPauses: number;
}
interface AlarmStats {
  fault: AlarmFault;
  /** Arms asked for, alarms that came due, wakes they ran (TickChunk.wakeTick), jobs' attempts those loops claimed. */
  arms: number;
  firings: number;
  wakes: number;
  claimedByWakes: number;
  /** Cron invocations whose look left the tick asleep, and loops that ended idle. */
  looksAsleep: number;
  idleEnds: number;
  /** Push jobs enqueued while no loop held the lock, and of those, due past a producer's drain (TICK_IDLE_PEEK_MS): the alarm's. */
  enqueuedUnlooped: number;
  dueForAlarm: number;
}
export interface RunResult {
  scenario: Scenario;
  violations: Violation[];
  stats: RunStats;
  jobs: JobModel[];
  trace: Trace;
  topics: string[];
  pauses: Array<{ topic: string; paused: boolean; at: number }>;
  keyPauses: KeyPauseEvent[];
  /** A readable account of the violations and the events around them. */
  explain(): string;
}

const normalized = (b: BackoffInput): Backoff => normalizeBackoff(b);

/** Expected attempts and final state from a job's plan. */
function expectedOutcome(plan: Behaviour[], maxAttempts: number): { attempts: number; state: "succeeded" | "dead" } {
  for (let k = 1; k <= maxAttempts; k++) {
    const b = plan[k - 1] ?? { k: "ok", ms: 0 };
    if (b.k === "ok") return { attempts: k, state: "succeeded" };
    if (b.k === "permanent") return { attempts: k, state: "dead" };
  }
  return { attempts: maxAttempts, state: "dead" };
}

/** The retry delay after attempt `k` failed as `b`: exact, or a range for full jitter. */
function retryDelay(b: Behaviour, policy: Backoff, k: number): [number, number] {
  if (b.k === "retry" && b.after !== undefined) return [b.after, b.after];
  switch (policy.type) {
    case "fixed":
      return [policy.delay, policy.delay];
    case "schedule": {
      const d = policy.delays[Math.min(k, policy.delays.length) - 1]!;
      return [d, d];
    }
    case "exponential": {
      const raw = Math.min(policy.delay * policy.factor ** (k - 1), policy.maxDelay);
      return policy.jitter ? [0, Math.floor(raw)] : [Math.floor(raw), Math.floor(raw)];
    }
  }
}

/**
 * TICK_FANOUT of a scenario: 0 (a backlog is worked off here, each chunk's
 * successor claimed at its tail) in one run of four, else the default 4.
 * Taken from the seed, not drawn, so the seeds kept in model.test.ts draw the
 * scenarios they were found with.
 */
const fanoutOf = (sc: Pick<Scenario, "seed">): number => (Math.abs(sc.seed) % 4 === 0 ? 0 : 4);

/** Whether a scenario's loops may end idle (cronTick's endWhenIdle: the wake alarm, and an idle peek). */
const endsIdle = (sc: Pick<Scenario, "alarm" | "idlePeekMs">): boolean => sc.alarm !== undefined && sc.idlePeekMs > 0;

/** How long a run whose loops end idle goes on after its last job, for the tick to come to rest (a loop ends idle, crons look). */
const REST_WITHIN_MS = 3 * 60_000;

/**
 * With nothing left to do, a tick whose loops end idle comes to rest: no
 * loop runs and the sleep mark says so ("c"), so producers cover what comes
 * next and each cron only looks. Runs the clock on (crons, looks) until the
 * trace shows that, at most REST_WITHIN_MS, then checks it against Redis with
 * a look: a mark that says a loop runs while none does leaves a job due
 * before the next cron to that cron.
 */
async function comeToRest(clock: SimClock, harness: ModelHarness): Promise<Violation[]> {
  const { trace } = harness;
  const running = () => [
    ...trace.invocations.filter((i) => i.endedAt === undefined).map((i) => i.id),
    ...trace.holds.filter((h) => h.to === undefined).map((h) => `${h.runner}'s lock`),
  ];
  const lastMark = () => trace.marks.reduce<Trace["marks"][number] | undefined>((a, m) => (a === undefined || m.at >= a.at ? m : a), undefined);
  const from = clock.now();
  await clock.run({ stop: () => running().length === 0 && lastMark()?.change === "c", until: from + REST_WITHIN_MS });
  const look = await harness.look();
  const still = running();
  if (still.length === 0 && !look.lockHeld && look.sleepMark === "c") return [];
  const mark = look.sleepMark === null ? "unset" : `"${look.sleepMark}"`;
  return [
    {
      kind: "not-at-rest",
      at: clock.now(),
      message: `${((clock.now() - from) / 1000).toFixed(0)} s after the last job was final the tick is not at rest: ${still.length > 0 ? `${still.join(", ")} still run` : "no loop runs"}, the lock is ${look.lockHeld ? "held" : "free"} and the sleep mark ${mark} (last set by ${lastMark()?.runner ?? "nobody"}); at rest no loop runs and the mark is "c"`,
    },
  ];
}

/** What the wake alarm did in a run, and how the tick slept. */
function alarmStats(sc: Scenario, trace: Trace, jobs: JobModel[]): AlarmStats | null {
  if (!trace.alarm) return null;
  const wakes = new Set(trace.invocations.filter((i) => i.by === "alarm").map((i) => i.id));
  const unlooped = jobs.filter(
    (m) => m.mode === "push" && m.enqueuedAt !== undefined && !trace.holds.some((h) => h.from <= m.enqueuedAt! && m.enqueuedAt! < (h.to ?? Infinity)),
  );
  return {
    fault: trace.alarm.fault,
    arms: trace.alarm.arms.length,
    firings: trace.alarm.firings.length,
    wakes: wakes.size,
    claimedByWakes: trace.claims.filter((c) => wakes.has(c.runner.split("/")[0]!)).reduce((n, c) => n + c.jobs.length, 0),
    looksAsleep: trace.invocations.filter((i) => i.report === null).length,
    idleEnds: trace.invocations.filter((i) => i.report?.ended === "idle").length,
    enqueuedUnlooped: unlooped.length,
    dueForAlarm: unlooped.filter((m) => m.dueAt! - m.enqueuedAt! > sc.idlePeekMs).length,
  };
}

/** What a run's shaped topic held. */
function flowStats(sc: Scenario, jobs: JobModel[]): FlowStats | null {
  const mine = jobs.filter((m) => sc.topics[m.spec.topic]!.flow);
  if (mine.length === 0) return null;
  return {
    jobs: mine.length,
    keyed: mine.filter((m) => m.spec.key !== undefined).length,
    keys: new Set(mine.flatMap((m) => (m.spec.key === undefined ? [] : [m.spec.key]))).size,
    prioritized: mine.filter((m) => m.spec.priority !== undefined).length,
    hung: mine.reduce((n, m) => n + m.attempts.filter((a) => m.spec.plan[a.attempt - 1]?.k === "hang").length, 0),
    keyPauses: sc.keyPauses?.length ?? 0,
  };
}

/** A push attempt's lease: the default handler timeout (30 s) and the lease margin (30 s). */
const HUNG_LEASE_MS = 60_000;

/** When a claim reaped the lease of each attempt of `m` that hung, as its attempt history says. */
function noteReaps(m: JobModel): void {
  for (const h of m.final?.history ?? []) {
    if (h.outcome !== "expired" || h.attempt === 0 || h.startedAt === null || h.durationMs === null) continue;
    const rec = m.attempts.filter((a) => a.attempt === h.attempt).pop();
    if (rec) rec.reapedAt = h.startedAt + h.durationMs;
  }
}

/**
 * With every job final, a shaped topic's flow keys hold nothing (model-flow.ts,
 * leftoverViolations) — save a turn left in the calendar for a key with
 * nothing more, which the topic's next claim drops: the index asks the tick
 * for one at once (a pull topic's consumer claims anyway). Runs the clock on
 * until each such topic was claimed once more (at most REST_WITHIN_MS), then reads them.
 */
async function flowLeftovers(clock: SimClock, harness: ModelHarness, sc: Scenario, topics: string[]): Promise<Violation[]> {
  const shaped = topics.filter((_, i) => sc.topics[i]!.flow);
  const states = await Promise.all(shaped.map((t) => harness.flowState(t)));
  const waiting = shaped.filter((_, i) => states[i]!.calendar.length > 0);
  if (waiting.length > 0) {
    const from = harness.trace.claims.length;
    const claimed = () => waiting.every((t) => harness.trace.claims.slice(from).some((c) => c.topic === t));
    await clock.run({ stop: claimed, until: clock.now() + REST_WITHIN_MS });
  }
  const after = await Promise.all(shaped.map((t) => harness.flowState(t)));
  return shaped.flatMap((t, i) => leftoverViolations(t, after[i]!));
}

/** Runs one scenario to its end and checks it. Never throws for a violation: they are in the result. */
export async function runScenario(sc: Scenario): Promise<RunResult> {
  const realStart = Date.now();
  const clock = new SimClock(BASE);
  const originalRandom = Math.random;
  const uninstall = clock.install();
  Math.random = seededRandom(sc.seed);
  // Push attempts that hang: their settle never reaches Redis.
  const hung = new Set<string>();
  const harness = createModelHarness({
    clock,
    loseSettle: (id, attempt) => hung.has(`${id}#${attempt}`),
    env: {
      TICK_POLL_MS: String(sc.pollMs),
      TICK_IDLE_PEEK_MS: String(sc.idlePeekMs),
      TICK_CHUNK: String(sc.chunk),
      TICK_OVERLAP_MS: String(sc.overlapMs),
      TICK_FANOUT: String(fanoutOf(sc)),
      // Ample: the lateness bound is about timing, not about a tight budget stretching the poll.
      TICK_SUBREQUEST_BUDGET: "100000",
    },
    ...(sc.alarm ? { alarm: sc.alarm } : {}),
  });
  const run = crypto.randomUUID().slice(0, 6);
  const topics = sc.topics.map((_, i) => `m${i}-${run}`);
  const jobs: JobModel[] = [];
  const pauses: Array<{ topic: string; paused: boolean; at: number }> = [];
  const keyPauses: KeyPauseEvent[] = [];
  let stopped = false;
  let batchesDone = 0;
  const violations: Violation[] = [];
  let ended = "";
  let endAt = BASE;

  for (const b of sc.batches)
    for (const spec of b.jobs) jobs.push({ j: jobs.length, spec, topic: topics[spec.topic]!, mode: sc.topics[spec.topic]!.mode, attempts: [], pushed: [] });
  const byId = new Map<string, JobModel>();
  const life = sc.lifetime
    ? new LifetimeRun(
        sc.lifetime,
        sc.lifetime.upserts.map((u) => topics[u.topic]!),
      )
    : null;
  const plainJobs = jobs.filter((m) => !sc.topics[m.spec.topic]!.flow);
  const ttlOf = new Map((sc.lifetime?.expiries ?? []).map((e) => [plainJobs[e.job]!, e.ttl]));
  const lateness = sc.lifetime?.lateness;

  try {
    // Topics, and a recording handler for every one (a pull topic's records that it was pushed).
    for (const [i, t] of sc.topics.entries()) {
      const patch: TopicPatch = { mode: t.mode, maxAttempts: t.maxAttempts, backoff: normalized(t.backoff) };
      if (t.rate !== undefined) patch.ratePerSec = t.rate;
      if (t.burst !== undefined) patch.burst = t.burst;
      if (t.concurrency !== undefined) patch.concurrency = t.concurrency;
      if (t.flow) patch.flow = flowSettingsOf(t.flow);
      if (lateness?.topic === i) patch.maxLateness = lateness.ms;
      await harness.configure(topics[i]!, patch);
      for (const k of t.flow?.keys ?? []) await harness.setFlowKey(topics[i]!, keyName(k.key), keySettingsOf(t.flow!, k.key));
      harness.handlers.define(topics[i]!, async (ctx) => {
        if (stopped) return;
        if (life?.deliver(ctx, clock.now(), currentRunner())) return;
        const model = jobs[(ctx.payload as { j: number }).j]!;
        const rec: AttemptRecord = { id: ctx.id, attempt: ctx.attempt, dueAt: ctx.dueAt, start: clock.now(), runner: currentRunner() };
        if (model.mode === "pull") {
          model.pushed.push(rec);
          return;
        }
        model.attempts.push(rec);
        const b = model.spec.plan[ctx.attempt - 1] ?? { k: "ok", ms: 0 };
        if (b.k === "hang") hung.add(`${ctx.id}#${ctx.attempt}`);
        if (b.ms > 0) await clock.sleep(b.ms);
        rec.end = clock.now();
        if (b.k === "retry") throw new RetryableError(`planned retry of attempt ${ctx.attempt}`, b.after);
        if (b.k === "error") throw new Error(`planned error in attempt ${ctx.attempt}`);
        if (b.k === "permanent") throw new PermanentError(`planned permanent failure in attempt ${ctx.attempt}`);
      });
    }

    const keyPauseSpecs = sc.keyPauses ?? [];
    const lifeEvents = [...(sc.lifetime?.cancels ?? []), ...(sc.lifetime?.upserts ?? []).flatMap((u) => u.steps)].map((e) => e.at);
    const lastEvent = Math.max(...sc.batches.map((b) => b.at), ...[...sc.pauses, ...keyPauseSpecs].map((p) => p.at + p.forMs), ...lifeEvents);
    // Long enough for the last job's every retry, and every hung attempt's lease (a key may wait for each in turn); a run normally ends once every job is final.
    const hangs = jobs.reduce((n, m) => n + m.spec.plan.filter((b) => b.k === "hang").length, 0);
    const cap = BASE + lastEvent + 60_000 + 4 * 30_000 + 180_000 + hangs * HUNG_LEASE_MS;
    const windowMs = 60_000 + sc.overlapMs;

    // Cron: minute after minute, each invocation late by its offset.
    void clock.spawn("cron", async () => {
      for (let k = 0; ; k++) {
        const at = BASE + k * 60_000 + sc.crons[k % sc.crons.length]!;
        if (at > cap) return;
        await clock.sleep(at - clock.now());
        if (stopped) return;
        void clock.spawn(`cron minute ${k}`, () => harness.startTick(BASE + k * 60_000, windowMs));
      }
    });
    for (const d of sc.duplicates) {
      void clock.spawn(`duplicate minute ${d.minute}`, async () => {
        await clock.sleep(BASE + d.minute * 60_000 + d.offset - clock.now());
        if (!stopped) await harness.startTick(BASE + d.minute * 60_000, windowMs);
      });
    }
    // Producers.
    let next = 0;
    for (const [bi, b] of sc.batches.entries()) {
      const models = jobs.slice(next, next + b.jobs.length);
      next += b.jobs.length;
      void clock.spawn(`batch ${bi}`, async () => {
        await clock.sleep(BASE + b.at - clock.now());
        for (const m of models) if (ttlOf.has(m)) m.expiresAt = clock.now() + ttlOf.get(m)!;
        const inputs = models.map((m) => ({
          ...(m.expiresAt === undefined ? {} : { expiresAt: m.expiresAt }),
          topic: m.topic,
          payload: { j: m.j },
          delayMs: m.spec.delay,
          ...(m.spec.key !== undefined ? { flowKey: keyName(m.spec.key) } : {}),
          ...(m.spec.priority !== undefined ? { priority: m.spec.priority } : {}),
          ...(m.spec.maxAttempts !== undefined ? { maxAttempts: m.spec.maxAttempts } : {}),
          ...(m.spec.backoff !== undefined ? { backoff: normalized(m.spec.backoff) } : {}),
        }));
        const enqueuedAt = clock.now();
        const results = await harness.enqueue(inputs, b.producer);
        results.forEach((r, i) => {
          const m = models[i]!;
          m.id = r.id;
          m.enqueuedAt = enqueuedAt;
          m.dueAt = r.dueAt ?? undefined;
          byId.set(r.id, m);
        });
        batchesDone++;
      });
    }
    // Pauses and resumes.
    for (const p of sc.pauses) {
      const topic = topics[p.topic]!;
      void clock.spawn(`pause ${topic}`, async () => {
        await clock.sleep(BASE + p.at - clock.now());
        if (stopped) return;
        pauses.push({ topic, paused: true, at: clock.now() });
        await harness.configure(topic, { paused: true });
        await clock.sleep(p.forMs);
        if (stopped) return;
        pauses.push({ topic, paused: false, at: clock.now() });
        await harness.configure(topic, { paused: false });
      });
    }
    // Flow keys paused and resumed: a key's settings with `paused`, then its own settings again.
    for (const p of keyPauseSpecs) {
      const topic = topics[p.topic]!;
      const own = keySettingsOf(sc.topics[p.topic]!.flow!, p.key);
      void clock.spawn(`pause ${topic} key ${keyName(p.key)}`, async () => {
        await clock.sleep(BASE + p.at - clock.now());
        if (stopped) return;
        keyPauses.push({ topic, key: p.key, paused: true, at: clock.now() });
        await harness.setFlowKey(topic, keyName(p.key), { ...own, paused: true });
        await clock.sleep(p.forMs);
        if (stopped) return;
        keyPauses.push({ topic, key: p.key, paused: false, at: clock.now() });
        await harness.setFlowKey(topic, keyName(p.key), own);
      });
    }
    // The pull consumer of each pull topic.
    for (const [i, t] of sc.topics.entries()) {
      if (t.mode !== "pull") continue;
      const topic = topics[i]!;
      void clock.spawn(`consumer ${topic}`, async () => {
        for (;;) {
          await clock.sleep(sc.consumer.everyMs);
          if (stopped) return;
          const claim = await harness.claimPull(topic, sc.consumer.max, 30_000);
          for (const job of claim.jobs) {
            const model = jobs[(job.record.payload as { j: number }).j]!;
            const rec: AttemptRecord = { id: job.id, attempt: job.attempt, dueAt: job.dueAt, start: clock.now(), runner: "pull" };
            model.attempts.push(rec);
            void clock.spawn(`consume ${job.id}#${job.attempt}`, async () => {
              const b = model.spec.plan[job.attempt - 1] ?? { k: "ok", ms: 0 };
              if (b.ms > 0) await clock.sleep(b.ms);
              rec.end = clock.now();
              // A consumer that hangs never settles: its lease expires.
              if (stopped || b.k === "hang") return;
              if (b.k === "ok") await harness.ackPull(job.id, job.attempt);
              else {
                await harness.nackPull(job.id, job.attempt, {
                  error: `planned ${b.k}`,
                  ...(b.k === "permanent" ? { permanent: true } : {}),
                  ...(b.after !== undefined ? { retryAfterMs: b.after } : {}),
                });
              }
            });
          }
        }
      });
    }

    life?.start(
      clock,
      harness,
      () => stopped,
      (job) => {
        const m = plainJobs[job];
        if (!m) return null;
        return { ...(m.id ? { id: m.id } : {}), note: (c) => (m.cancel = m.cancel?.result === "cancelled" ? m.cancel : c) };
      },
    );

    // Run until every job is final (or the cap): settled as such, or dead as its last lease was reaped.
    const finalIds = new Set<string>();
    let scanned = 0;
    const allFinal = () => {
      if (batchesDone < sc.batches.length) return false;
      for (; scanned < harness.trace.settles.length; scanned++) {
        for (const o of harness.trace.settles[scanned]!.outcomes) if (o.applied && o.kind !== "retry") finalIds.add(o.id);
      }
      if (life && !life.done()) return false;
      const cancelled = jobs.filter((m) => m.cancel?.result === "cancelled").length;
      // A job that may expire and never started is taken as ended two minutes past its time (the checks read its state).
      const now = clock.now();
      const expired = jobs.filter(
        (m) =>
          m.attempts.length === 0 &&
          m.cancel?.result !== "cancelled" &&
          ((m.expiresAt !== undefined && now > m.expiresAt + 120_000) ||
            (lateness?.topic === m.spec.topic && m.dueAt !== undefined && now > m.dueAt + lateness.ms + 120_000)),
      ).length;
      const reaped = harness.trace.claims.reduce((n, c) => n + c.reaped.dead, 0);
      return finalIds.size + cancelled + expired + reaped >= jobs.length + (life?.created() ?? 0);
    };
    ended = await clock.run({ stop: allFinal, until: cap });
    for (const m of jobs) if (m.id) m.final = await harness.get(m.id);
    for (const m of jobs) noteReaps(m);
    if (ended === "stopped") violations.push(...(await flowLeftovers(clock, harness, sc, topics)));
    if (endsIdle(sc) && ended === "stopped") violations.push(...(await comeToRest(clock, harness)));
    endAt = clock.now();
  } catch (err) {
    violations.push({ kind: "error", message: `the run threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}` });
  } finally {
    stopped = true;
    harness.stopRecording();
    const stuck = await clock.drainAll(BASE + 365 * 86_400_000).catch((err: unknown) => [`drainAll threw ${String(err)}`]);
    if (stuck.length > 0) violations.push({ kind: "stuck", message: `tasks never ended: ${stuck.join(", ")}` });
    uninstall();
    Math.random = originalRandom;
    await harness.dispose().catch(() => {});
  }

  for (const sp of clock.spins) {
    if (sp.at < BASE + 365 * 86_400_000)
      violations.push({
        kind: "spin",
        at: sp.at,
        facts: { spin: true },
        message: `a task woke more than ${SimClock.SPIN_LIMIT} times in a row at ${rel(sp.at)} without time passing (sleeping 0 ms again and again); ${sp.refused} wake-ups refused`,
      });
  }
  for (const e of clock.errors)
    violations.push({ kind: "error", message: `task ${e.task} threw: ${e.error instanceof Error ? (e.error.stack ?? e.error.message) : String(e.error)}` });
  violations.push(...check(sc, harness, jobs, topics, pauses, keyPauses, endAt));
  if (life) violations.push(...life.check(harness.trace));
  const stats: RunStats = {
    pushJobs: jobs.filter((j) => j.mode === "push").length,
    pullJobs: jobs.filter((j) => j.mode === "pull").length,
    attempts: jobs.reduce((n, j) => n + j.attempts.length, 0),
    invocations: harness.trace.invocations.length,
    drains: harness.trace.drains.length,
    virtualMs: endAt - BASE,
    realMs: Date.now() - realStart,
    requests: clock.requests,
    steps: clock.steps,
    ended,
    alarm: alarmStats(sc, harness.trace, jobs),
    flow: flowStats(sc, jobs),
    lifetime: life
      ? {
          cancels: jobs.filter((m) => m.cancel).length,
          cancelled: jobs.filter((m) => m.cancel?.result === "cancelled").length,
          ...life.stats(),
          expiring: jobs.filter((m) => m.expiresAt !== undefined).length,
          lateBound: jobs.filter((m) => sc.lifetime?.lateness?.topic === m.spec.topic).length,
          expired: jobs.filter((m) => m.final?.state === "expired").length,
        }
      : null,
  };
  const result: RunResult = {
    scenario: sc,
    violations,
    stats,
    jobs,
    trace: harness.trace,
    topics,
    pauses,
    keyPauses,
    explain: () => explain(result, harness.settings.tickPollMs),
  };
  return result;
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/** Why a push topic may not start a ready job, as intervals: not covered by a tick, paused, at its concurrency, out of tokens. */
function blockedIntervals(
  sc: Scenario,
  trace: Trace,
  topicIndex: number,
  topic: string,
  pauses: Array<{ topic: string; paused: boolean; at: number }>,
  releasedAt: Map<string, number>,
): { all: Interval[]; uncovered: Interval[]; paused: Interval[]; full: Interval[]; tokens: Interval[] } {
  const spec = sc.topics[topicIndex]!;
  const covered = merge(trace.invocations.map(coverageOf));
  const uncovered: Interval[] = [];
  let c = -Infinity;
  for (const [a, b] of covered) {
    uncovered.push([c, a]);
    c = b;
  }
  uncovered.push([c, Infinity]);
  const paused: Interval[] = [];
  let since: number | null = null;
  for (const p of pauses.filter((x) => x.topic === topic)) {
    if (p.paused && since === null) since = p.at;
    if (!p.paused && since !== null) {
      paused.push([since, p.at + RESUME_TAKES_EFFECT_WITHIN_MS]);
      since = null;
    }
  }
  if (since !== null) paused.push([since, Infinity]);
  const claims = trace.claims.filter((x) => x.topic === topic && x.jobs.length > 0);
  const full: Interval[] = [];
  if (spec.concurrency !== undefined) {
    const deltas: Array<[number, number]> = [];
    for (const cl of claims) {
      for (const j of cl.jobs) {
        deltas.push([cl.at, 1]);
        deltas.push([releasedAt.get(`${j.id}#${j.attempt}`) ?? Infinity, -1]);
      }
    }
    // At equal times, releases first: a slot freed and taken at one instant was never blocking.
    deltas.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    let n = 0;
    let from: number | null = null;
    for (const [t, d] of deltas) {
      n += d;
      if (n >= spec.concurrency && from === null) from = t;
      if (n < spec.concurrency && from !== null) {
        full.push([from, t]);
        from = null;
      }
    }
  }
  const tokens: Interval[] = [];
  if (spec.rate !== undefined) {
    const rate = spec.rate;
    const burst = spec.burst ?? Math.max(1, rate);
    let level: number | null = null;
    let ts = 0;
    for (const cl of [...claims].sort((x, y) => x.at - y.at)) {
      const before: number = level === null ? burst : Math.min(burst, level + (Math.max(0, cl.at - ts) * rate) / 1000);
      level = before - cl.jobs.length;
      ts = cl.at;
      if (level < 1) tokens.push([cl.at, cl.at + ((1 - level) * 1000) / rate]);
    }
  }
  return { all: merge([...uncovered, ...alarmGaps(trace), ...paused, ...full, ...tokens]), uncovered, paused, full, tokens };
}

/**
 * Whose due jobs an invocation answers for, and until when: a loop for its
 * window (a cron's that waited it out for the lock: the holder's). A loop
 * that ended idle (sleep mark "c") and a cron's look that left the tick
 * asleep answer until the next cron's look (unlookedUntil: that cron may
 * start up to 10 s late), producers covering what falls due meanwhile with a
 * drain or the wake alarm. An alarm's loop that found the lock held answers
 * for nothing: the holder does.
 */
function coverageOf(inv: Trace["invocations"][number]): Interval {
  const r = inv.report;
  if (r === null || r?.ended === "idle") {
    const end = inv.endedAt ?? inv.startedAt;
    return [inv.startedAt, Math.max(end, unlookedUntil(end))];
  }
  if (r?.ended === "not-acquired" && inv.by === "alarm") return [inv.startedAt, inv.startedAt];
  return [inv.startedAt, inv.windowEnd];
}

/**
 * When the wake alarm failed the jobs it was armed for, as intervals: a lost
 * alarm or a failed arm leaves them to the next cron's look (from the time it
 * was armed for to the first cron invocation after the arm that ran a loop, or
 * the first after the time it was armed for: jobs enqueued after a look that
 * left the tick asleep relied on the alarm set sooner), a late alarm to
 * its loop (from the time it was set for to when it ran). With the alarm
 * working (fault none or duplicated) there are none: its loop is there a
 * second before the job is due.
 */
function alarmGaps(trace: Trace): Interval[] {
  const a = trace.alarm;
  if (a?.fault === "late") return a.firings.flatMap((f) => (f.wokeAt.length > 0 ? [[f.at, f.wokeAt[0]!] as Interval] : []));
  if (a?.fault !== "lost" && a?.fault !== "arm-fails") return [];
  // The next cron after the arm that ran a loop, or the first after the alarm's time: a look before then that left the
  // tick asleep saw nothing due before the next look, and jobs enqueued after it relied on the alarm (armed sooner).
  const crons = trace.invocations.filter((i) => i.by === "cron");
  return a.arms.map(
    (arm) =>
      [
        arm.at,
        Math.min(...crons.filter((c) => c.startedAt > arm.requestedAt && (c.report !== null || c.startedAt >= arm.at)).map((c) => c.startedAt)),
      ] as Interval,
  );
}

/**
 * The sleep mark against who held the tick lock. "c" says no loop runs: a
 * loop that takes the lock clears a "c" with its first poll, at once, and a
 * loop that marks "c" itself ends (or changes the mark) once every producer
 * has seen it (SLEEP_MARK_STALENESS_MS and a poll, then its next poll).
 * Either way, the mark is "c" while a loop runs only for that grace. (That it
 * is "c" once no loop runs, at rest, comeToRest checks.)
 */
function sleepMarkViolations(sc: Scenario, trace: Trace, endAt: number): Violation[] {
  const v: Violation[] = [];
  const grace = SLEEP_MARK_STALENESS_MS + 2 * sc.pollMs + LATENESS_SLACK_MS;
  const marks = [...trace.marks].sort((a, b) => a.at - b.at);
  const shown = (c: Trace["marks"][number]["change"]) => (c === "clear" ? "unset" : c === "c" ? '"c"' : '"1"');
  for (const h of trace.holds) {
    const to = Math.min(h.to ?? Infinity, endAt);
    const found = marks.filter((m) => m.runner !== h.runner && m.at <= h.from).pop();
    const own = marks.filter((m) => m.runner === h.runner && m.at >= h.from && m.at <= to);
    const cleared = own[0]?.at ?? to;
    if (found?.change === "c" && cleared > h.from)
      v.push({
        kind: "sleep-mark",
        at: h.from,
        message: `${h.runner} took the lock at ${rel(h.from)} with the mark "c" (set by ${found.runner}) and left it ${own[0] ? `until ${rel(cleared)}, then ${shown(own[0].change)}` : `through its hold, to ${rel(to)}`}: its first poll clears it`,
      });
    for (const [i, m] of own.entries()) {
      if (m.change !== "c") continue;
      const until = own[i + 1]?.at ?? to;
      if (until - m.at > grace)
        v.push({
          kind: "sleep-mark",
          at: m.at,
          message: `${h.runner} marked "c" (no loop runs) at ${rel(m.at)} and held the lock on with it until ${rel(until)}${own[i + 1] ? `, then ${shown(own[i + 1]!.change)}` : ""}: a loop that marks "c" ends or changes it within ${grace} ms`,
        });
    }
  }
  return v;
}

/** A shaped topic's attempts as model-flow.ts checks them, by topic index. */
function flowAttempts(sc: Scenario, jobs: JobModel[], claimOf: Map<string, { at: number }>, releasedAt: Map<string, number>): Map<number, FlowAttempt[]> {
  const out = new Map<number, FlowAttempt[]>();
  for (const m of jobs) {
    if (!sc.topics[m.spec.topic]!.flow || m.enqueuedAt === undefined) continue;
    const list = out.get(m.spec.topic) ?? [];
    out.set(m.spec.topic, list);
    const atts = [...m.attempts].sort((a, b) => a.attempt - b.attempt);
    for (const [i, a] of atts.entries()) {
      const k = `${a.id}#${a.attempt}`;
      const prev = atts[i - 1];
      list.push({
        job: m.j,
        key: m.spec.key,
        priority: m.spec.priority ?? 0,
        id: a.id,
        attempt: a.attempt,
        dueAt: a.dueAt,
        scheduledAt: a.attempt === 1 ? m.enqueuedAt : prev ? (releasedAt.get(`${prev.id}#${prev.attempt}`) ?? Infinity) : Infinity,
        claimedAt: claimOf.get(k)?.at ?? a.start,
        start: a.start,
        end: a.reapedAt ?? a.end ?? Infinity,
        released: releasedAt.get(k) ?? Infinity,
      });
    }
  }
  return out;
}

/**
 * Leases expire only for attempts that hung (never settled): each of those
 * is reaped once, as its attempt history says, and no other is; a topic's
 * claims reaped as many as its attempts that hung.
 */
function leaseExpiryViolations(sc: Scenario, trace: Trace, jobs: JobModel[], topics: string[]): Violation[] {
  const v: Violation[] = [];
  const hung = (m: JobModel, attempt: number) => m.spec.plan[attempt - 1]?.k === "hang";
  for (const m of jobs) {
    const expired = new Set((m.final?.history ?? []).filter((h) => h.outcome === "expired" && h.attempt > 0).map((h) => h.attempt));
    for (const n of expired)
      if (!hung(m, n))
        v.push({ kind: "lease-expired", job: m.j, attempt: n, message: `job ${m.j} (${m.id}): the lease of attempt ${n}, which settled, expired` });
    for (const a of m.attempts)
      if (hung(m, a.attempt) && m.final && !expired.has(a.attempt))
        v.push({
          kind: "not-reaped",
          job: m.j,
          attempt: a.attempt,
          message: `job ${m.j} (${m.id}): attempt ${a.attempt} hung, yet its history shows no expired lease`,
        });
  }
  for (const [i, topic] of topics.entries()) {
    const reaped = trace.claims.filter((c) => c.topic === topic).reduce((n, c) => n + c.reaped.retried + c.reaped.dead, 0);
    const hangs = jobs.filter((m) => m.spec.topic === i).reduce((n, m) => n + m.attempts.filter((a) => hung(m, a.attempt)).length, 0);
    if (reaped !== hangs)
      v.push({ kind: "lease-expired", topic, message: `topic ${i}'s claims reaped ${reaped} expired leases; ${hangs} attempts hung (${sc.topics[i]!.mode})` });
  }
  return v;
}

function check(
  sc: Scenario,
  harness: ModelHarness,
  jobs: JobModel[],
  topics: string[],
  pauses: Array<{ topic: string; paused: boolean; at: number }>,
  keyPauses: KeyPauseEvent[],
  endAt: number,
): Violation[] {
  const v: Violation[] = [];
  const trace = harness.trace;
  const bound = sc.pollMs + LATENESS_SLACK_MS;
  const lateness = sc.lifetime?.lateness;
  const claimOf = new Map<string, { at: number; runner: string }>();
  for (const c of trace.claims) for (const j of c.jobs) claimOf.set(`${j.id}#${j.attempt}`, { at: c.at, runner: c.runner });
  // When each attempt's lease ended: settled, or (one that hung) reaped.
  const releasedAt = new Map<string, number>();
  for (const st of trace.settles) for (const o of st.outcomes) if (o.applied) releasedAt.set(`${o.id}#${o.attempt}`, st.at);
  for (const m of jobs) for (const a of m.attempts) if (a.reapedAt !== undefined) releasedAt.set(`${a.id}#${a.attempt}`, a.reapedAt);
  const blocked = topics.map((t, i) => blockedIntervals(sc, trace, i, t, pauses, releasedAt));
  const flow = flowAttempts(sc, jobs, claimOf, releasedAt);
  // For a keyed job, its key's own stretches too (model-flow.ts).
  const keyedBlocked = new Map<string, Interval[]>();
  const blockedFor = (m: JobModel): Interval[] => {
    const t = sc.topics[m.spec.topic]!;
    if (!t.flow || m.spec.key === undefined) return blocked[m.spec.topic]!.all;
    const k = `${m.spec.topic}/${m.spec.key}`;
    let b = keyedBlocked.get(k);
    if (!b) {
      b = merge([...blocked[m.spec.topic]!.all, ...keyBlocked(t, m.topic, m.spec.key, flow.get(m.spec.topic) ?? [], keyPauses)]);
      keyedBlocked.set(k, b);
    }
    return b;
  };
  const settledBy = new Map<string, string>();
  for (const st of trace.settles) for (const o of st.outcomes) if (o.applied) settledBy.set(`${o.id}#${o.attempt}`, st.runner);
  // When each runner was busy with a chunk: from a claim that took jobs to its settle of that topic.
  const base = (runner: string) => runner.split("/")[0]!;
  const busy = new Map<string, Interval[]>();
  for (const c of trace.claims) {
    if (c.jobs.length === 0) continue;
    const st = trace.settles.find((x) => x.runner === c.runner && x.topic === c.topic && x.at >= c.at && x.outcomes.some((o) => o.id === c.jobs[0]!.id));
    const list = busy.get(base(c.runner)) ?? [];
    list.push([c.at, st?.at ?? c.at]);
    busy.set(base(c.runner), list);
  }
  const tickBusy = [...busy].flatMap(([runner, spans]) => (runner.startsWith("tick#") ? spans : []));
  // When the tick's sleep mark was set.
  const asleep: Interval[] = [];
  let markSince: number | null = null;
  for (const mk of trace.marks) {
    if (mk.change !== "clear" && markSince === null) markSince = mk.at;
    if (mk.change === "clear" && markSince !== null) {
      asleep.push([markSince, mk.at]);
      markSince = null;
    }
  }
  if (markSince !== null) asleep.push([markSince, Infinity]);
  const asleepAt = (t: number) => asleep.some(([a, b]) => a <= t && t < b);
  const pausedRaw = (topic: string, t: number) => {
    let paused = false;
    for (const p of pauses) if (p.topic === topic && p.at <= t) paused = p.paused;
    return paused;
  };

  for (const inv of trace.invocations) {
    const ended = inv.report?.ended;
    if (ended !== undefined && ended !== "window" && ended !== "not-acquired" && !(ended === "idle" && endsIdle(sc))) {
      v.push({
        kind: `tick-${ended}`,
        at: inv.endedAt,
        message: `${inv.id} ended "${ended}" at ${inv.endedAt === undefined ? "?" : rel(inv.endedAt)} (its budget is ample; a lost lock here means its real-time TTL ran out or a bug)`,
      });
    }
  }
  v.push(...sleepMarkViolations(sc, trace, endAt));
  v.push(...leaseExpiryViolations(sc, trace, jobs, topics));
  for (const s of trace.settles) {
    for (const o of s.outcomes)
      if (!o.applied) v.push({ kind: "stale-settle", topic: s.topic, at: s.at, message: `${s.runner} settled ${o.id}#${o.attempt} (${o.kind}) stale` });
  }
  for (const l of trace.logs) {
    if (l.line.level === "error")
      v.push({
        kind: "error",
        at: l.at,
        ...(JSON.stringify(l.line).includes("SpinError") ? { facts: { spin: true } } : {}),
        message: `${l.runner} logged an error: ${JSON.stringify(l.line)}`,
      });
  }

  for (const m of jobs) {
    const ts = sc.topics[m.spec.topic]!;
    const label = `job ${m.j} (${m.mode} topic ${m.spec.topic}${m.id ? `, ${m.id}` : ""})`;
    if (!m.id) {
      v.push({ kind: "lost", job: m.j, message: `${label} was never enqueued` });
      continue;
    }
    for (const p of m.pushed)
      v.push({
        kind: "pull-pushed",
        job: m.j,
        topic: m.topic,
        attempt: p.attempt,
        at: p.start,
        facts: { runner: p.runner, pullPushed: true },
        message: `${label}: pull job pushed to a handler by ${p.runner} (attempt ${p.attempt} at ${rel(p.start)})`,
      });
    const maxAttempts = m.spec.maxAttempts ?? ts.maxAttempts;
    const policy = normalized(m.spec.backoff ?? ts.backoff);
    const expected = expectedOutcome(m.spec.plan, maxAttempts);
    const atts = [...m.attempts].sort((a, b) => a.attempt - b.attempt || a.start - b.start);
    // Every attempt exactly once, numbered 1..n.
    const counts = new Map<number, number>();
    for (const a of atts) counts.set(a.attempt, (counts.get(a.attempt) ?? 0) + 1);
    for (const [k, n] of counts)
      if (n > 1)
        v.push({
          kind: "duplicate",
          job: m.j,
          attempt: k,
          message: `${label}: attempt ${k} ran ${n} times (${atts
            .filter((a) => a.attempt === k)
            .map((a) => `${a.runner} at ${rel(a.start)}`)
            .join(", ")})`,
        });
    const numbers = [...counts.keys()].sort((a, b) => a - b);
    if (numbers.some((k, i) => k !== i + 1)) v.push({ kind: "gap", job: m.j, message: `${label}: attempts ${numbers.join(",")} are not 1..n` });
    // The final state.
    const f = m.final;
    const cancel = m.cancel?.result === "cancelled" ? m.cancel : undefined;
    if (f === null || f === undefined) v.push({ kind: "lost", job: m.j, message: `${label}: queue.get finds nothing at the end` });
    else if (cancel) {
      if (f.state !== "cancelled") v.push({ kind: "final-state", job: m.j, message: `${label}: cancelled at ${rel(cancel.at)}, but ended ${f.state}` });
      for (const a of atts.filter((x) => x.start > cancel.doneAt))
        v.push({
          kind: "ran-after-cancel",
          job: m.j,
          attempt: a.attempt,
          at: a.start,
          message: `${label}: attempt ${a.attempt} started ${rel(a.start)}, after its cancel at ${rel(cancel.at)}`,
        });
    } else if (f.state === "expired") {
      const late = lateness?.topic === m.spec.topic ? lateness.ms : undefined;
      const at = f.finishedAt ?? -Infinity;
      if (atts.length > 0 || m.pushed.length > 0)
        v.push({ kind: "expired-after-start", job: m.j, message: `${label}: ended expired after ${atts.length} attempts` });
      if (!((m.expiresAt !== undefined && at >= m.expiresAt) || (late !== undefined && m.dueAt !== undefined && at > m.dueAt + late)))
        v.push({
          kind: "expired-early",
          job: m.j,
          at,
          message: `${label}: expired at ${rel(at)}, due ${m.dueAt === undefined ? "?" : rel(m.dueAt)}, expiresAt ${m.expiresAt === undefined ? "none" : rel(m.expiresAt)}, maxLateness ${late ?? "none"}`,
        });
    } else if (f.state === "succeeded" || f.state === "dead") {
      // Started, it was claimed before its expiresAt and within its topic's maxLateness.
      const first = claimOf.get(`${m.id}#1`);
      const late = lateness?.topic === m.spec.topic ? lateness.ms : undefined;
      if (first && m.expiresAt !== undefined && first.at >= m.expiresAt)
        v.push({
          kind: "started-after-expiry",
          job: m.j,
          at: first.at,
          message: `${label}: attempt 1 claimed ${rel(first.at)}, at or after its expiresAt ${rel(m.expiresAt)}`,
        });
      if (first && late !== undefined && m.dueAt !== undefined && first.at > m.dueAt + late)
        v.push({
          kind: "started-past-lateness",
          job: m.j,
          at: first.at,
          message: `${label}: attempt 1 claimed ${rel(first.at)}, past due ${rel(m.dueAt)} + maxLateness ${late} ms`,
        });
      if (f.state !== expected.state || f.attempts !== expected.attempts || numbers.length !== expected.attempts) {
        v.push({
          kind: "final-state",
          job: m.j,
          ...(m.pushed.length > 0 ? { facts: { pullPushed: true } } : {}),
          message: `${label}: ended ${f.state} after ${f.attempts} attempts (${numbers.length} seen); its plan says ${expected.state} after ${expected.attempts}`,
        });
      }
    } else {
      v.push({
        kind: "unfinished",
        job: m.j,
        at: f.dueAt ?? undefined,
        message: `${label}: still ${f.state} at the end (due ${f.dueAt === null ? "-" : rel(f.dueAt)}, ${f.attempts} attempts); its plan says ${expected.state} after ${expected.attempts}`,
      });
    }
    // Each attempt's due time, never early, and (push topics) on time. The tick
    // may claim a job of a push topic without limits up to its lead early (it starts it at its due time).
    const leadOf = (j: JobModel) => {
      const t = sc.topics[j.spec.topic]!;
      return j.mode === "push" && t.rate === undefined && t.concurrency === undefined && !t.flow ? Math.min(sc.pollMs, 1_000) : 0;
    };
    for (const [i, a] of atts.entries()) {
      const claim = claimOf.get(`${a.id}#${a.attempt}`);
      if (a.attempt === 1 && a.dueAt !== m.dueAt)
        v.push({ kind: "due", job: m.j, attempt: 1, message: `${label}: attempt 1 ran with due ${rel(a.dueAt)}, enqueue said ${rel(m.dueAt!)}` });
      const prev = atts[i - 1];
      // A retry counts from its attempt's end: its settle, or for one that hung, the reap of its lease.
      const prevEnd = prev?.reapedAt ?? prev?.end;
      if (a.attempt > 1 && prev && prev.attempt === a.attempt - 1 && prevEnd !== undefined) {
        const b = m.spec.plan[prev.attempt - 1] ?? { k: "ok", ms: 0 };
        const [lo, hi] = retryDelay(b, policy, prev.attempt);
        if (a.dueAt < prevEnd + lo || a.dueAt > prevEnd + hi) {
          v.push({
            kind: "retry-time",
            job: m.j,
            attempt: a.attempt,
            message: `${label}: attempt ${a.attempt} due ${rel(a.dueAt)}, but attempt ${prev.attempt} ended at ${rel(prevEnd)}${prev.reapedAt === undefined ? "" : " (reaped)"} and its retry should be ${lo === hi ? `${lo} ms` : `${lo}–${hi} ms`} later`,
          });
        }
      }
      if (a.start < a.dueAt || (claim && claim.at < a.dueAt - leadOf(m)))
        v.push({
          kind: "early",
          job: m.j,
          attempt: a.attempt,
          at: a.start,
          message: `${label}: attempt ${a.attempt} started ${rel(a.start)}, before its due time ${rel(a.dueAt)}`,
        });
      if (m.mode === "push") {
        const free = longestFree(blockedFor(m), a.dueAt, a.start);
        if (free.length > bound) {
          const prevSettle = prev ? settledBy.get(`${prev.id}#${prev.attempt}`) : undefined;
          // Head-of-line: the runner that claimed it, or the tick, was busy with a chunk's handlers for all but `bound` of the wait.
          const busyFree = longestFree(merge([...blockedFor(m), ...(busy.get(base(a.runner)) ?? []), ...tickBusy]), a.dueAt, a.start);
          const served = trace.claims.filter((c) => c.topic === m.topic && c.jobs.length > 0 && c.at >= free.at![0] && c.at < free.at![1]);
          const facts: ViolationFacts = {
            runner: a.runner,
            tickAsleepAtDue: asleepAt(a.dueAt),
            headOfLine: busyFree.length <= bound,
            throttledByConcurrency: ts.concurrency !== undefined && served.length > 0,
            afterResume: pauses.some((p) => p.topic === m.topic && !p.paused && p.at + RESUME_TAKES_EFFECT_WITHIN_MS === free.at![0]),
            tickAsleepAtFreeStart: asleepAt(free.at![0]),
            fellAsleepWhilePaused: asleep.some(([s0, e0]) => s0 <= free.at![0] && free.at![0] < e0 && pausedRaw(m.topic, s0)),
            enqueuedDuringDrain:
              a.attempt === 1 &&
              m.enqueuedAt !== undefined &&
              trace.drains.some((d) => d.topic === m.topic && d.requestedAt < m.enqueuedAt! && (d.endedAt ?? Infinity) >= m.enqueuedAt! && d.until >= a.dueAt),
            drainSpun: trace.drains.some(
              (d) =>
                d.topic === m.topic && d.error?.includes("SpinError") && (d.startedAt ?? Infinity) <= free.at![1] && (d.endedAt ?? Infinity) >= a.dueAt - bound,
            ),
          };
          if (prevSettle) facts.retryScheduledBy = prevSettle;
          v.push({
            kind: "late",
            job: m.j,
            topic: m.topic,
            attempt: a.attempt,
            at: a.dueAt,
            facts,
            message: `${label}: attempt ${a.attempt} due ${rel(a.dueAt)} started ${rel(a.start)} by ${a.runner} (claimed ${claim ? rel(claim.at) : "?"}${prevSettle ? `; retry scheduled by ${prevSettle}` : ""}): ${free.length} ms of it (${rel(free.at![0])}–${rel(free.at![1])}) the topic was covered, not paused and had capacity; bound ${bound} ms; facts ${JSON.stringify(facts)}`,
          });
        }
      }
    }
  }

  // Rate and concurrency limits, as the handlers saw them.
  for (const [i, t] of sc.topics.entries()) {
    if (t.mode !== "push") continue;
    const topic = topics[i]!;
    const runs = jobs.filter((m) => m.spec.topic === i).flatMap((m) => m.attempts);
    if (t.rate !== undefined) {
      const burst = t.burst ?? Math.max(1, t.rate);
      const starts = runs.map((r) => r.start).sort((a, b) => a - b);
      outer: for (let a = 0; a < starts.length; a++) {
        for (let b = a; b < starts.length; b++) {
          const n = b - a + 1;
          if (n > burst + (t.rate * (starts[b]! - starts[a]!)) / 1000 + 1e-6) {
            v.push({
              kind: "rate-exceeded",
              topic,
              at: starts[a],
              message: `topic ${i} (${t.rate}/s, burst ${burst}): ${n} starts within ${rel(starts[a]!)}–${rel(starts[b]!)}`,
            });
            break outer;
          }
        }
      }
    }
    if (t.concurrency !== undefined) {
      // An attempt that hung holds its slot until its lease is reaped.
      const edges = runs.flatMap((r) => [[r.start, 1] as const, [r.reapedAt ?? r.end ?? Infinity, -1] as const]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
      let n = 0;
      for (const [at, d] of edges) {
        n += d;
        if (n > t.concurrency) {
          v.push({ kind: "concurrency-exceeded", topic, at, message: `topic ${i} (concurrency ${t.concurrency}): ${n} handlers running at ${rel(at)}` });
          break;
        }
      }
    }
    // Nothing is claimed while the topic is paused (a claim at the very instant of a pause or resume may go either way).
    const ps = pauses.filter((p) => p.topic === topic);
    for (const c of trace.claims) {
      if (c.topic === topic && c.jobs.length > 0 && pausedRaw(topic, c.at) && !ps.some((p) => p.at === c.at)) {
        v.push({ kind: "claimed-while-paused", topic, at: c.at, message: `${c.runner} claimed ${c.jobs.length} jobs of paused topic ${i} at ${rel(c.at)}` });
      }
    }
  }
  // Flow keys: each key's limits, pauses, priority order and turns (model-flow.ts).
  const keyOf = new Map(jobs.map((m) => [m.id, m.spec.key]));
  for (const [i, list] of flow) {
    const claims = trace.claims.filter((c) => c.topic === topics[i] && c.jobs.length > 0).map((c) => ({ at: c.at, keys: c.jobs.map((j) => keyOf.get(j.id)) }));
    v.push(...keyLimitViolations(sc.topics[i]!, topics[i]!, list, keyPauses));
    v.push(...priorityViolations(sc.topics[i]!, topics[i]!, list));
    v.push(...fairnessViolations(sc.topics[i]!, topics[i]!, list, claims, keyPauses));
  }
  return v;
}

// ---------------------------------------------------------------------------
// Explaining a run
// ---------------------------------------------------------------------------

function explain(r: RunResult, pollMs: number): string {
  const lines: string[] = [];
  const sc = r.scenario;
  lines.push(
    `settings: TICK_POLL_MS ${sc.pollMs}, TICK_IDLE_PEEK_MS ${sc.idlePeekMs}, TICK_CHUNK ${sc.chunk}, TICK_FANOUT ${fanoutOf(sc)}, TICK_OVERLAP_MS ${sc.overlapMs}; lateness bound ${pollMs + LATENESS_SLACK_MS} ms`,
  );
  for (const [i, t] of sc.topics.entries()) lines.push(`topic ${i} ${r.topics[i]}: ${JSON.stringify(t)}`);
  lines.push(
    `invocations: ${r.trace.invocations
      .map((i) =>
        i.report === null
          ? `${i.id} (cron) ${rel(i.startedAt)} looked: asleep`
          : `${i.id} (${i.by}) ${rel(i.startedAt)}–${rel(i.windowEnd)} ${i.report?.ended ?? "?"}${i.endedAt === undefined ? "" : ` at ${rel(i.endedAt)}`} (claimed ${i.report?.claimed ?? "?"}, idle sleeps ${i.report?.idleSleeps ?? "?"})`,
      )
      .join("; ")}`,
  );
  lines.push(`lock held: ${r.trace.holds.map((h) => `${h.runner} ${rel(h.from)}–${h.to === undefined ? "" : rel(h.to)}`).join(", ") || "never"}`);
  lines.push(
    `sleep mark: ${r.trace.marks.map((m) => `${rel(m.at)} ${m.change === "clear" ? "clear" : m.change === "c" ? "c" : "1"} (${m.runner})`).join(", ") || "never set"}`,
  );
  const alarm = r.trace.alarm;
  if (alarm) {
    lines.push(
      `wake alarm (fault ${alarm.fault}${sc.alarm ? `, delays ${sc.alarm.delays.join("/")} ms` : ""}): arms ${alarm.arms.map((a) => `${rel(a.requestedAt)} for ${rel(a.at)} ${a.outcome}`).join(", ") || "none"}; came due ${alarm.firings.map((f) => `${rel(f.at)} ${f.lost ? "lost" : `ran ${f.wokeAt.map(rel).join(" and ")}`}`).join(", ") || "never"}`,
    );
  }
  if (r.pauses.length > 0) lines.push(`pauses: ${r.pauses.map((p) => `${rel(p.at)} ${p.paused ? "pause" : "resume"} ${p.topic}`).join(", ")}`);
  if (r.keyPauses.length > 0)
    lines.push(`key pauses: ${r.keyPauses.map((p) => `${rel(p.at)} ${p.paused ? "pause" : "resume"} ${p.topic} key ${keyName(p.key)}`).join(", ")}`);
  if (r.trace.drains.length > 0)
    lines.push(
      `drains: ${r.trace.drains.map((d) => `${d.id} ${d.topic} asked ${rel(d.requestedAt)} for ${rel(d.dueAt)} until ${rel(d.until)}, ran ${d.startedAt ? rel(d.startedAt) : "-"}–${d.endedAt ? rel(d.endedAt) : "-"}, claimed ${d.claimed}`).join("; ")}`,
    );
  lines.push(`violations (${r.violations.length}):`);
  for (const x of r.violations.slice(0, 20)) lines.push(`  [${x.kind}] ${x.message}`);
  if (r.violations.length > 20) lines.push(`  … ${r.violations.length - 20} more`);
  const involved = [...new Set(r.violations.flatMap((x) => (x.job === undefined ? [] : [x.job])))].slice(0, 5);
  for (const j of involved) {
    const m = r.jobs[j]!;
    lines.push(
      `job ${j} timeline (${m.id}, topic ${m.spec.topic}${m.spec.key === undefined ? "" : `, key ${keyName(m.spec.key)}`}${m.spec.priority ? `, priority ${m.spec.priority}` : ""}, plan ${JSON.stringify(m.spec.plan)}${m.spec.maxAttempts ? `, maxAttempts ${m.spec.maxAttempts}` : ""}${m.spec.backoff ? `, backoff ${JSON.stringify(m.spec.backoff)}` : ""}):`,
    );
    const ev: Array<[number, string]> = [];
    if (m.enqueuedAt !== undefined) ev.push([m.enqueuedAt, `enqueued, due ${m.dueAt === undefined ? "?" : rel(m.dueAt)}`]);
    for (const c of r.trace.claims)
      for (const x of c.jobs) if (x.id === m.id) ev.push([c.at, `claimed attempt ${x.attempt} (due ${rel(x.dueAt)}) by ${c.runner}`]);
    for (const a of [...m.attempts, ...m.pushed]) {
      ev.push([a.start, `attempt ${a.attempt} started by ${a.runner}`]);
      if (a.end !== undefined) ev.push([a.end, `attempt ${a.attempt} ended`]);
    }
    for (const s of r.trace.settles)
      for (const o of s.outcomes)
        if (o.id === m.id)
          ev.push([s.at, `settled attempt ${o.attempt} ${o.kind}${o.retryAt ? ` → ${rel(o.retryAt)}` : ""}${o.applied ? "" : " (stale)"} by ${s.runner}`]);
    for (const l of r.trace.lostSettles) if (l.id === m.id) ev.push([l.at, `settle of attempt ${l.attempt} lost (hung) by ${l.runner}`]);
    for (const a of m.attempts) if (a.reapedAt !== undefined) ev.push([a.reapedAt, `lease of attempt ${a.attempt} reaped`]);
    ev.sort((a, b) => a[0] - b[0]);
    for (const [t, what] of ev) lines.push(`  ${rel(t)} ${what}`);
    lines.push(`  final: ${m.final ? `${m.final.state}, ${m.final.attempts} attempts` : String(m.final)}`);
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------
// Known bugs: how a violation caused by one of them looks
// ---------------------------------------------------------------------------

export interface KnownBug {
  id: string;
  title: string;
  matches(v: Violation): boolean;
}

/** Failures the model finds in the code of 2026-05 (branch main at 3e7b10f); model.test.ts lists which still count as known. */
export const KNOWN_BUGS: KnownBug[] = [
  {
    id: "pull-drained",
    title: "producer drains push pull-mode topics while the tick sleeps (wake.ts drains any topic; TickChunk.run never checks the mode)",
    matches: (v) => v.facts?.pullPushed === true,
  },
  {
    id: "drain-retry-waits",
    title:
      "a retry scheduled by a drain waits for the sleeping tick's next look (the drain's next due time comes from its claim, before the settle added the retry)",
    matches: (v) => v.kind === "late" && (v.facts?.retryScheduledBy ?? "").startsWith("drain#") && v.facts?.tickAsleepAtDue === true,
  },
  {
    id: "drain-misses-enqueue",
    title:
      "a job enqueued while its topic's drain runs a chunk is left to the sleeping tick: the producer counts on the running drain, which then ends (or sleeps) by the next due time it read before the enqueue",
    matches: (v) => v.kind === "late" && v.facts?.enqueuedDuringDrain === true && v.facts?.tickAsleepAtDue === true && v.facts?.drainSpun !== true,
  },
  {
    id: "paused-topic-sleeps",
    title:
      "due jobs of a paused topic let the tick fall asleep (a peek gives each topic's earliest due time only, already past, so the topic is left out of wakeAt): after the resume its jobs — and later ones of the topic — wait up to TICK_IDLE_PEEK_MS for the tick's next look",
    matches: (v) => v.kind === "late" && v.facts?.tickAsleepAtFreeStart === true && v.facts?.fellAsleepWhilePaused === true,
  },
  {
    id: "concurrency-throughput",
    title:
      "a concurrency-limited topic is served one claim per TICK_POLL_MS: after a claim held back by concurrency the loop sleeps a whole poll (rateLimitedForMs is 0), e.g. ratePerSec 2, burst 2, concurrency 1 delivers 1 job/s",
    matches: (v) => v.kind === "late" && v.facts?.throttledByConcurrency === true && v.facts?.headOfLine !== true,
  },
  {
    id: "drain-spins",
    title:
      "a drain spins (0 ms sleeps, 3 requests each) while its topic has due jobs it may not claim (paused, rate-limited, at its concurrency) until its subrequest budget is gone",
    matches: (v) => v.facts?.spin === true || (v.kind === "late" && v.facts?.drainSpun === true),
  },
  {
    id: "head-of-line",
    title:
      "a slow handler holds back every other due job of the runner: the loop claims again only after a round's slowest handler settled, a drain only after its chunk did",
    matches: (v) => v.kind === "late" && v.facts?.headOfLine === true,
  },
];

/** Splits violations into those explained by the given known bugs (first match) and the rest. */
export function classify(violations: Violation[], known: ReadonlySet<string>): { known: Map<string, Violation[]>; unexplained: Violation[] } {
  const out = new Map<string, Violation[]>();
  const unexplained: Violation[] = [];
  for (const v of violations) {
    const bug = KNOWN_BUGS.find((b) => known.has(b.id) && b.matches(v));
    if (bug) out.set(bug.id, [...(out.get(bug.id) ?? []), v]);
    else unexplained.push(v);
  }
  return { known: out, unexplained };
}
