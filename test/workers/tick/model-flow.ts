/**
 * Flow keys in the model-based tick test (issue 36). A scenario may hold a
 * shaped topic: flow settings (per-key parallelism, rate with burst, weight,
 * priority step; mostly parallelism 2 and 5/s burst 5), up to 50 keys — a
 * few hot, the rest cold — some with settings of their own, jobs with a key,
 * a priority or neither (the default lane), handlers that fail, retry or hang
 * (their settle lost, so their lease expires and a claim reaps it), keys
 * paused and resumed, the topic paused, all under a topic limit.
 *
 * Here: that part of a scenario (model.ts appends it), the keys' effective
 * limits as claim.lua works them out, and the checks model.ts runs on the
 * attempts of a shaped topic — per key, jobs in flight never above its
 * parallelism and starts within any window within its rate's bound; no job
 * of a paused key claimed; within a key, jobs started in priority order; the
 * stretches in which a key could not start a job, for the lateness check;
 * and after the run, nothing left in the topic's flow keys.
 */
import fc from "fast-check";
import type { BackoffInput } from "../../../src/queue/policy/backoff.js";
import type { FlowSettings } from "../../../src/queue/topics.js";
import type { FlowKeySettings } from "../../../src/queue/flow-keys.js";
import type { FlowState } from "./model-harness.js";
import type { JobSpec, TopicSpec, Violation } from "./model.js";
import { behaviourArb } from "./model-behaviour.js";
import { type Interval, merge, rel } from "./model-time.js";

/** A shaped topic's flow settings in a scenario, and its keys (by index) with settings of their own. */
export interface FlowSpec {
  parallelism?: number;
  rate?: number;
  burst?: number;
  weight?: number;
  priorityStepMs?: number;
  keys: KeyOverride[];
}
interface KeyOverride {
  key: number;
  parallelism?: number;
  rate?: number;
  burst?: number;
  weight?: number;
}
/** A flow key paused at `at` for `forMs`. */
export interface KeyPause {
  topic: number;
  key: number;
  at: number;
  forMs: number;
}
/** What the model logs as it pauses and resumes a key. */
export interface KeyPauseEvent {
  topic: string;
  key: number;
  paused: boolean;
  at: number;
}

/** A flow key's name: keys are drawn by index. */
export const keyName = (key: number): string => `k${key}`;

/** The most keys a shaped topic's jobs use; the first HOT_KEYS of them get most of the jobs. */
const MAX_KEYS = 50;
const HOT_KEYS = 5;

// ---------------------------------------------------------------------------
// The scenario's part
// ---------------------------------------------------------------------------

/** What a scenario gets for a shaped topic; model.ts gives it the topic's index. */
export interface FlowPart {
  topic: TopicSpec;
  /** Its jobs' enqueue calls (`topic` in each job is filled in by model.ts). */
  batches: Array<{ at: number; producer: number; jobs: JobSpec[] }>;
  keyPauses: Array<Omit<KeyPause, "topic">>;
  /** Pauses of the whole topic. */
  pauses: Array<{ at: number; forMs: number }>;
}

/** A handler's attempt of a keyed job: mostly ok, sometimes a failure, now and then one that hangs and is never settled. */
const flowPlanArb = behaviourArb([
  ["ok", 12],
  ["retry", 2],
  ["error", 2],
  ["permanent", 1],
  ["hang", 1],
]);

/** A key drawn among the hot ones twice as often as among all. */
const keyArb = fc.oneof({ weight: 2, arbitrary: fc.nat(HOT_KEYS - 1) }, { weight: 1, arbitrary: fc.nat(MAX_KEYS - 1) });

/** Drops the fields left undefined (a printed counterexample stays a plain literal). */
const defined = <T extends object>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

const flowSpecArb: fc.Arbitrary<FlowSpec> = fc.record({
  parallelism: fc.oneof({ weight: 3, arbitrary: fc.constant(2) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) }, fc.constant(undefined)),
  rate: fc.oneof({ weight: 3, arbitrary: fc.constant(5) }, { weight: 1, arbitrary: fc.constantFrom(1, 2, 10) }, fc.constant(undefined)),
  burst: fc.oneof({ weight: 3, arbitrary: fc.constant(5) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }, fc.constant(undefined)),
  weight: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 4 }),
  priorityStepMs: fc.option(fc.constantFrom(100, 1_000, 5_000), { nil: undefined, freq: 3 }),
  keys: fc.array(
    fc.record({
      key: keyArb,
      parallelism: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      rate: fc.option(fc.constantFrom(1, 2, 5, 10), { nil: undefined }),
      burst: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
      weight: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    }),
    { maxLength: 4 },
  ),
});

/**
 * A shaped topic under a topic limit, and its jobs. A push topic always has
 * a concurrency of 10 at most: a chunk runs at most 10 of a topic's handlers
 * at once (dispatch.ts, handlerSlots), so with more in flight a job claimed
 * on time could wait in its chunk for a handler slot, which neither its key
 * nor the topic counts. Sometimes a topic rate as well.
 */
export function flowPartArb(o: { span: number; backoff: fc.Arbitrary<BackoffInput>; delay: fc.Arbitrary<number> }): fc.Arbitrary<FlowPart> {
  const job = fc.record({
    key: fc.option(keyArb, { nil: undefined, freq: 6 }),
    jitter: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000 })),
    priority: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined, freq: 3 }),
    plan: fc.array(flowPlanArb, { minLength: 4, maxLength: 4 }),
    maxAttempts: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 4 }),
    backoff: fc.option(o.backoff, { nil: undefined, freq: 4 }),
  });
  return fc
    .record({
      mode: fc.oneof({ weight: 4, arbitrary: fc.constant("push" as const) }, { weight: 1, arbitrary: fc.constant("pull" as const) }),
      concurrency: fc.oneof(fc.constantFrom(8, 10), fc.integer({ min: 2, max: 10 })),
      rate: fc.option(fc.constantFrom(5, 10, 20), { nil: undefined, freq: 2 }),
      burst: fc.option(fc.constantFrom(1, 5, 10), { nil: undefined }),
      maxAttempts: fc.integer({ min: 1, max: 3 }),
      backoff: o.backoff,
      flow: flowSpecArb,
      keyCount: fc.oneof({ weight: 3, arbitrary: fc.constant(MAX_KEYS) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 20 }) }),
      batches: fc.array(
        fc.record({
          at: fc.integer({ min: 0, max: o.span }),
          producer: fc.nat(1),
          delay: o.delay,
          jobs: fc.array(job, { minLength: 1, maxLength: 40, size: "medium" }),
        }),
        { minLength: 1, maxLength: 5 },
      ),
      keyPauses: fc.array(fc.record({ key: keyArb, at: fc.integer({ min: 0, max: o.span }), forMs: fc.integer({ min: 500, max: 40_000 }) }), {
        maxLength: 2,
      }),
      pauses: fc.array(fc.record({ at: fc.integer({ min: 0, max: o.span }), forMs: fc.integer({ min: 500, max: 40_000 }) }), { maxLength: 1 }),
    })
    .map((f): FlowPart => {
      const key = (k: number) => k % f.keyCount;
      // One override per key: the last drawn.
      const overrides = new Map(f.flow.keys.map((k) => [key(k.key), defined({ ...k, key: key(k.key) })]));
      const topic: TopicSpec = defined({
        mode: f.mode,
        concurrency: f.mode === "push" || f.rate === undefined ? f.concurrency : undefined,
        rate: f.rate,
        burst: f.rate === undefined ? undefined : f.burst,
        maxAttempts: f.maxAttempts,
        backoff: f.backoff,
        flow: defined({ ...f.flow, keys: [...overrides.values()] }),
      });
      return {
        topic,
        batches: f.batches.map((b) => ({
          at: b.at,
          producer: b.producer,
          jobs: b.jobs.map((j) =>
            defined({
              topic: -1,
              delay: b.delay + j.jitter,
              plan: j.plan,
              key: j.key === undefined ? undefined : key(j.key),
              priority: j.priority,
              maxAttempts: j.maxAttempts,
              backoff: j.backoff,
            }),
          ),
        })),
        keyPauses: f.keyPauses.map((p) => ({ ...p, key: key(p.key) })),
        pauses: f.pauses,
      };
    });
}

// ---------------------------------------------------------------------------
// A shaped topic's settings, as the queue takes them
// ---------------------------------------------------------------------------

/** The topic's flow settings as configureTopic takes them. */
export function flowSettingsOf(f: FlowSpec): FlowSettings {
  return defined({ parallelism: f.parallelism, ratePerSec: f.rate, burst: f.burst, weight: f.weight, priorityStepMs: f.priorityStepMs });
}

/** A key's own settings as setFlowKey takes them, or null when it has none. */
export function keySettingsOf(f: FlowSpec, key: number): FlowKeySettings | null {
  const o = f.keys.find((k) => k.key === key);
  return o ? defined({ parallelism: o.parallelism, ratePerSec: o.rate, burst: o.burst, weight: o.weight }) : null;
}

/** A key's limits as claim.lua works them out: its own settings, else the topic's; the default lane (no key) has none. */
function keyLimits(t: TopicSpec, key: number | undefined): { parallelism?: number; rate?: number; burst?: number } {
  if (key === undefined || !t.flow) return {};
  const o = t.flow.keys.find((k) => k.key === key);
  const parallelism = o?.parallelism ?? t.flow.parallelism;
  const rate = o?.rate ?? t.flow.rate;
  const out: { parallelism?: number; rate?: number; burst?: number } = {};
  if (parallelism !== undefined) out.parallelism = parallelism;
  if (rate !== undefined) {
    out.rate = rate;
    out.burst = o?.burst ?? t.flow.burst ?? Math.max(1, Math.floor(rate));
  }
  return out;
}

/** When a job may start relative to its key's other jobs: its due time less its priority's head start (lib/flow.lua). */
const startOrder = (t: TopicSpec, dueAt: number, priority: number): number => Math.max(0, dueAt - priority * (t.flow?.priorityStepMs ?? 10_000));

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/** One attempt of a shaped topic's job, as the checks see it. */
export interface FlowAttempt {
  job: number;
  /** Its key; undefined: the default lane. */
  key: number | undefined;
  priority: number;
  id: string;
  attempt: number;
  dueAt: number;
  /** When it became due to the queue: enqueued (attempt 1), or its previous attempt settled or reaped. */
  scheduledAt: number;
  /** When a claim took it (the queue's start), and when its handler (or the pull consumer) started. */
  claimedAt: number;
  start: number;
  /** When its handler ended; for one never settled, when its lease was reaped (it held its slot till then). */
  end: number;
  /** When its lease ended: settled, or reaped; Infinity if neither was seen. */
  released: number;
}

/** Stretches where at least `limit` of `spans` overlap (at one instant, ends before starts). */
function atLimit(spans: Interval[], limit: number): Interval[] {
  const edges = spans.flatMap(([a, b]) => [[a, 1] as const, [b, -1] as const]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const out: Interval[] = [];
  let n = 0;
  let from: number | null = null;
  for (const [t, d] of edges) {
    n += d;
    if (n >= limit && from === null) from = t;
    if (n < limit && from !== null) {
      out.push([from, t]);
      from = null;
    }
  }
  return out;
}

/** The first instant more than `limit` of `spans` overlap, with how many; null if never. */
function overLimit(spans: Interval[], limit: number): { at: number; n: number } | null {
  const edges = spans.flatMap(([a, b]) => [[a, 1] as const, [b, -1] as const]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let n = 0;
  for (const [at, d] of edges) {
    n += d;
    if (n > limit) return { at, n };
  }
  return null;
}

/**
 * The first window of `starts` holding more than a GCRA with `rate` and
 * `burst` allows: claim.lua starts a job while the key's theoretical arrival
 * time is at most burst − 1 intervals ahead, so over any window of length T
 * at most burst + T·rate/1000 start.
 */
function overRate(starts: number[], rate: number, burst: number): { from: number; to: number; n: number } | null {
  const s = [...starts].sort((a, b) => a - b);
  for (let a = 0; a < s.length; a++) {
    for (let b = a + burst; b < s.length; b++) {
      const n = b - a + 1;
      if (n > burst + (rate * (s[b]! - s[a]!)) / 1000 + 1e-6) return { from: s[a]!, to: s[b]!, n };
    }
  }
  return null;
}

/** Attempts by key (limited keys only: the default lane has no limits). */
function byKey(attempts: FlowAttempt[]): Map<number, FlowAttempt[]> {
  const out = new Map<number, FlowAttempt[]>();
  for (const a of attempts) if (a.key !== undefined) out.set(a.key, [...(out.get(a.key) ?? []), a]);
  return out;
}

/** Whether `key` of `topic` was paused at `t` (by the last change at or before it). */
function pausedAt(events: KeyPauseEvent[], topic: string, key: number, t: number): boolean {
  let paused = false;
  for (const e of events) if (e.topic === topic && e.key === key && e.at <= t) paused = e.paused;
  return paused;
}

/**
 * Each key's limits, as the handlers and the claims saw them: jobs in flight
 * (from handler start to end, and from claim to settle or reap) never above
 * its parallelism; starts (handler starts, and claims) within any window
 * within its rate's GCRA bound; no job claimed while its key was paused
 * (save at the very instant of a pause or resume).
 */
export function keyLimitViolations(t: TopicSpec, topic: string, attempts: FlowAttempt[], pauses: KeyPauseEvent[]): Violation[] {
  const v: Violation[] = [];
  for (const [key, list] of byKey(attempts)) {
    const lim = keyLimits(t, key);
    const name = `key ${keyName(key)} of ${topic}`;
    if (lim.parallelism !== undefined) {
      const ran = overLimit(
        list.map((a) => [a.start, a.end]),
        lim.parallelism,
      );
      const leased = overLimit(
        list.map((a) => [a.claimedAt, a.released]),
        lim.parallelism,
      );
      for (const [what, over] of [
        ["handlers running", ran],
        ["jobs leased", leased],
      ] as const) {
        if (over)
          v.push({ kind: "key-parallelism", topic, at: over.at, message: `${name} (parallelism ${lim.parallelism}): ${over.n} ${what} at ${rel(over.at)}` });
      }
    }
    if (lim.rate !== undefined) {
      for (const [what, times] of [
        ["handler starts", list.map((a) => a.start)],
        ["claims", list.map((a) => a.claimedAt)],
      ] as const) {
        const over = overRate(times, lim.rate, lim.burst!);
        if (over)
          v.push({
            kind: "key-rate",
            topic,
            at: over.from,
            message: `${name} (${lim.rate}/s, burst ${lim.burst}): ${over.n} ${what} within ${rel(over.from)}–${rel(over.to)}`,
          });
      }
    }
    const switches = pauses.filter((p) => p.topic === topic && p.key === key).map((p) => p.at);
    for (const a of list) {
      if (pausedAt(pauses, topic, key, a.claimedAt) && !switches.includes(a.claimedAt))
        v.push({
          kind: "claimed-while-key-paused",
          topic,
          job: a.job,
          at: a.claimedAt,
          message: `job ${a.job} (${a.id}) attempt ${a.attempt} of paused ${name} claimed at ${rel(a.claimedAt)}`,
        });
    }
  }
  return v;
}

/**
 * Within a key (and within the default lane), jobs start in their start
 * order (due time less the priority's head start): no claim takes a job
 * while one of the same key that starts earlier had long been waiting (due,
 * and scheduled before the claim) and is taken later. Jobs of equal start
 * order go either way.
 */
export function priorityViolations(t: TopicSpec, topic: string, attempts: FlowAttempt[]): Violation[] {
  const v: Violation[] = [];
  const lanes = new Map<string, FlowAttempt[]>();
  for (const a of attempts) lanes.set(String(a.key ?? ""), [...(lanes.get(String(a.key ?? "")) ?? []), a]);
  for (const list of lanes.values()) {
    const eff = (a: FlowAttempt) => startOrder(t, a.dueAt, a.priority);
    for (const x of list) {
      const passed = list.find(
        (y) => eff(y) < eff(x) && y.dueAt <= x.claimedAt && y.scheduledAt < x.claimedAt && y.claimedAt > x.claimedAt && Number.isFinite(y.claimedAt),
      );
      if (passed) {
        v.push({
          kind: "priority-order",
          topic,
          job: x.job,
          at: x.claimedAt,
          message: `${x.key === undefined ? "the default lane" : `key ${keyName(x.key)}`} of ${topic}: job ${x.job} attempt ${x.attempt} (due ${rel(x.dueAt)}, priority ${x.priority}) claimed at ${rel(x.claimedAt)} before job ${passed.job} attempt ${passed.attempt} (due ${rel(passed.dueAt)}, priority ${passed.priority}), which starts earlier and was waiting; it was claimed at ${rel(passed.claimedAt)}`,
        });
        break;
      }
    }
  }
  return v;
}

/**
 * When `key` could not start a job, by its own settings: paused, at its
 * parallelism (jobs leased from claim to settle or reap), or its rate's
 * theoretical arrival time more than burst − 1 intervals ahead. Together
 * with the topic's own stretches this is what the lateness check forgives.
 */
export function keyBlocked(t: TopicSpec, topic: string, key: number, attempts: FlowAttempt[], pauses: KeyPauseEvent[]): Interval[] {
  const lim = keyLimits(t, key);
  const mine = attempts.filter((a) => a.key === key);
  const out: Interval[] = [];
  let since: number | null = null;
  for (const p of pauses.filter((x) => x.topic === topic && x.key === key)) {
    if (p.paused && since === null) since = p.at;
    if (!p.paused && since !== null) {
      out.push([since, p.at]);
      since = null;
    }
  }
  if (since !== null) out.push([since, Infinity]);
  if (lim.parallelism !== undefined)
    out.push(
      ...atLimit(
        mine.map((a) => [a.claimedAt, a.released]),
        lim.parallelism,
      ),
    );
  if (lim.rate !== undefined) {
    const interval = 1000 / lim.rate;
    const claims = new Map<number, number>();
    for (const a of mine) claims.set(a.claimedAt, (claims.get(a.claimedAt) ?? 0) + 1);
    let tat = -Infinity;
    for (const [at, n] of [...claims].sort((x, y) => x[0] - y[0])) {
      tat = Math.max(tat, at) + n * interval;
      const free = tat - (lim.burst! - 1) * interval;
      if (free > at) out.push([at, free]);
    }
  }
  return merge(out);
}

/** What one claim of a shaped topic took, by key (undefined: the default lane). */
export interface FlowClaim {
  at: number;
  keys: Array<number | undefined>;
}

/** A key's weight (the default lane's is the topic's). */
const weightOf = (t: TopicSpec, key: number | undefined): number =>
  (key === undefined ? undefined : t.flow?.keys.find((k) => k.key === key)?.weight) ?? t.flow?.weight ?? 1;

/**
 * Keys take turns: a key served goes behind every key waiting. So while a
 * job waits with its key free to start it (due, and neither paused, at its
 * parallelism nor held by its rate), each other key is served at most at
 * its weight's instants (a turn of weight × rounds jobs may run over several
 * claims when each can take but a few) and one more (a claim at the very
 * instant the key became free may go either way) before the waiting key is
 * served again. Instants, not claims: keys put back in the calendar at one
 * instant (a settle unparks a key at `now`) are ordered by name, and only
 * the sim clock, which stands still during Redis requests, runs several
 * claims and settles at one instant. The default lane takes its turn like a key.
 */
export function fairnessViolations(t: TopicSpec, topic: string, attempts: FlowAttempt[], claims: FlowClaim[], pauses: KeyPauseEvent[]): Violation[] {
  const v: Violation[] = [];
  const blockedOf = new Map<number, Interval[]>();
  const name = (key: number | undefined) => (key === undefined ? "the default lane" : `key ${keyName(key)}`);
  for (const j of attempts) {
    const from = Math.max(j.dueAt, j.scheduledAt);
    if (!(j.claimedAt > from) || !Number.isFinite(j.claimedAt)) continue;
    let blocked: Interval[] = [];
    if (j.key !== undefined) {
      const key = j.key;
      blocked = blockedOf.get(key) ?? keyBlocked(t, topic, key, attempts, pauses);
      blockedOf.set(key, blocked);
    }
    // Walk the claims while the job waited, counting each other key's instants since this key was last served or free.
    const counts = new Map<number | undefined, Set<number>>();
    let freeSince = from;
    for (const c of claims) {
      if (c.at <= from || c.at >= j.claimedAt) continue;
      const held = blocked.find(([a, b]) => a <= c.at && c.at < b);
      if (held) {
        counts.clear();
        freeSince = held[1];
        continue;
      }
      if (c.at <= freeSince) continue;
      if (c.keys.includes(j.key)) {
        counts.clear();
        continue;
      }
      for (const other of new Set(c.keys)) {
        const at = counts.get(other) ?? new Set<number>();
        counts.set(other, at.add(c.at));
        const n = at.size;
        if (n > weightOf(t, other) + 1) {
          v.push({
            kind: "unfair",
            topic,
            job: j.job,
            at: c.at,
            message: `${name(j.key)} of ${topic}: job ${j.job} attempt ${j.attempt} (due ${rel(j.dueAt)}, claimed ${rel(j.claimedAt)}) waited free to start since ${rel(Math.max(from, freeSince))} while ${name(other)} (weight ${weightOf(t, other)}) was served at ${n} instants, the last at ${rel(c.at)}`,
          });
          return v;
        }
      }
    }
  }
  return v;
}

/**
 * After the run (every job final, and a claim of the topic since, which
 * drops a turn left for a key with nothing more), the topic's flow keys
 * hold nothing: no keyed job scheduled or waiting (nor in the keys' index), no key in the calendar,
 * none parked (at its parallelism or paused), none with jobs in flight.
 */
export function leftoverViolations(topic: string, s: FlowState): Violation[] {
  const left: string[] = [];
  if (s.scheduled + s.notDue + s.waiting + s.indexed > 0) {
    left.push(`${s.scheduled} keyed jobs in fdue, ${s.notDue} in fsched, ${s.waiting} in fready, ${s.indexed} in fkidx`);
  }
  if (s.calendar.length > 0) left.push(`keys in the calendar ${JSON.stringify(s.calendar.slice(0, 10))}`);
  if (s.parked.length > 0) left.push(`keys parked ${JSON.stringify(s.parked.slice(0, 10))}`);
  if (Object.keys(s.inFlight).length > 0) left.push(`keys in flight ${JSON.stringify(s.inFlight)}`);
  return left.length === 0 ? [] : [{ kind: "flow-leftover", topic, message: `after the run ${topic}'s flow keys still hold: ${left.join("; ")}` }];
}
