/**
 * A job's lifetime in the model-based tick test (issue 37): cancels, upserts
 * by job key and expiries, drawn into half the scenarios besides everything
 * else.
 *
 * Cancels: a plain topic's job, cancelled at a time of its own (before it is
 * due, while it waits for a retry, in flight or after it ended). A cancel
 * answered "cancelled" leaves the job cancelled with no attempt started
 * after it; one answered "inflight" found it leased; model.ts's own checks
 * hold for the rest.
 *
 * Upserts: series of upserts under one job key of a push topic, close
 * together as a debounce sends them (replace, keepDue or ignore, delays
 * 0–20 s, sometimes a maxWait). Each job the series created is delivered
 * exactly once, with the payload and the due time of the last upsert that
 * changed it (an upsert after its claim makes a new job instead, never
 * rewriting a leased record), never before that due time; an ignored
 * upsert's payload is never delivered; keepDue keeps the due time; a
 * replace stays within its maxWait of the job's first enqueue; a created
 * job's predecessor in the series had been claimed by then (one pending
 * job per key).
 *
 * Expiries: plain jobs with an expiresAt past their due time, and a topic
 * with a maxLateness (model.ts checks them): a job that ended expired never
 * started, and ended at or after its expiresAt or past its due time plus the
 * maxLateness; a job that started was claimed before its expiresAt and
 * within its maxLateness.
 */
import fc from "fast-check";
import type { UpsertResult } from "../../../src/queue/queue.js";
import type { ModelHarness, Trace } from "./model-harness.js";
import type { SimClock } from "./sim-clock.js";
import { BASE, rel } from "./model-time.js";

type OnConflict = "replace" | "keepDue" | "ignore";

interface UpsertStep {
  /** When, ms after BASE. */
  at: number;
  delay: number;
  onConflict: OnConflict;
  maxWait?: number;
}
/** Upserts under one job key of a push topic (by index, taken modulo the plain topics). */
interface UpsertSeries {
  topic: number;
  steps: UpsertStep[];
}
export interface LifetimePart {
  /** A plain topic's job (by index among them) cancelled at `at` ms after BASE. */
  cancels: Array<{ job: number; at: number }>;
  upserts: UpsertSeries[];
  /** A plain topic's job (by index among them) enqueued with an expiresAt `ttl` ms after its enqueue (past its delay). */
  expiries?: Array<{ job: number; ttl: number }>;
  /** A plain topic (by index) with a maxLateness of `ms`. */
  lateness?: { topic: number; ms: number };
}
/** The part as drawn: each cancel `after` ms after its job's batch, each expiry `extra` ms past its job's delay (model.ts places them). */
export interface LifetimeDraw {
  cancels: Array<{ job: number; after: number }>;
  upserts: UpsertSeries[];
  expiries: Array<{ job: number; extra: number }>;
  lateness: { topic: number; ms: number } | undefined;
}

/** What model.ts's checks need to know of a cancelled job. */
export interface CancelRecord {
  at: number;
  doneAt: number;
  result: "cancelled" | "not-found" | "inflight";
}

const stepArb = fc
  .record({
    gap: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 3_000 })),
    delay: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 20_000 })),
    onConflict: fc.oneof(
      { weight: 4, arbitrary: fc.constant<OnConflict>("replace") },
      { weight: 1, arbitrary: fc.constant<OnConflict>("keepDue") },
      { weight: 1, arbitrary: fc.constant<OnConflict>("ignore") },
    ),
    maxWait: fc.option(fc.constantFrom(2_000, 5_000, 30_000), { nil: undefined }),
  })
  // A delay past maxWait is refused (422 at the edge): the model draws the ones a producer may send.
  .map((s) => ({ ...s, delay: s.maxWait === undefined ? s.delay : Math.min(s.delay, s.maxWait) }));

export function lifetimePartArb(span: number): fc.Arbitrary<LifetimeDraw> {
  return fc.record({
    // Mostly while the job is scheduled (delays run to 60 s), some while it runs or retries, or after it ended.
    cancels: fc.array(fc.record({ job: fc.nat(40), after: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 60_000 })) }), {
      maxLength: 4,
    }),
    upserts: fc.array(
      fc
        .record({ topic: fc.nat(3), start: fc.integer({ min: 0, max: span }), steps: fc.array(stepArb, { minLength: 1, maxLength: 8 }) })
        .map(({ topic, start, steps }) => {
          let at = start;
          return {
            topic,
            steps: steps.map(({ gap, ...s }) => {
              at += gap;
              return s.maxWait === undefined ? { at, delay: s.delay, onConflict: s.onConflict } : { at, ...s };
            }),
          };
        }),
      { maxLength: 2 },
    ),
    // Some expire before the tick could start them (a paused or limited topic, a sleeping tick), most do not.
    expiries: fc.array(
      fc.record({
        job: fc.nat(40),
        extra: fc.oneof(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 120_000 })),
      }),
      { maxLength: 8 },
    ),
    lateness: fc.option(fc.record({ topic: fc.nat(3), ms: fc.constantFrom(100, 500, 2_000, 10_000) }), { nil: undefined }),
  });
}

interface StepReply {
  step: UpsertStep;
  callAt: number;
  doneAt: number;
  reply?: UpsertResult;
  error?: string;
}
interface Delivery {
  id: string;
  attempt: number;
  dueAt: number;
  start: number;
  n: number;
  runner: string;
}
interface Violation {
  kind: string;
  message: string;
  at?: number;
}

/** An upsert job's payload: its series and step. */
const isUpsertPayload = (p: unknown): p is { u: number; n: number } => typeof p === "object" && p !== null && "u" in p;

/** One run's cancels and upserts: started with the run, fed the upsert jobs' deliveries, checked afterwards. */
export class LifetimeRun {
  private readonly replies: StepReply[][];
  private readonly deliveries = new Map<string, Delivery[]>();
  private stepsLeft: number;

  constructor(
    private readonly part: LifetimePart,
    /** Each series' topic name. */
    private readonly topicOf: string[],
  ) {
    this.replies = part.upserts.map(() => []);
    this.stepsLeft = part.upserts.reduce((n, s) => n + s.steps.length, 0) + part.cancels.length;
  }

  /** Spawns the upserts and cancels; `cancelTarget` names the job a cancel takes, and records what it got. */
  start(
    clock: SimClock,
    harness: ModelHarness,
    stopped: () => boolean,
    cancelTarget: (job: number) => { id?: string; note: (c: CancelRecord) => void } | null,
  ): void {
    for (const [si, series] of this.part.upserts.entries()) {
      void clock.spawn(`upserts ${si}`, async () => {
        for (const [n, step] of series.steps.entries()) {
          await clock.sleep(Math.max(0, BASE + step.at - clock.now()));
          if (stopped()) return;
          const r: StepReply = { step, callAt: clock.now(), doneAt: 0 };
          try {
            r.reply = await harness.upsert({
              topic: this.topicOf[si]!,
              jobKey: `key-${si}`,
              payload: { u: si, n },
              delayMs: step.delay,
              onConflict: step.onConflict,
              ...(step.maxWait === undefined ? {} : { maxWaitMs: step.maxWait }),
            });
          } catch (err) {
            r.error = err instanceof Error ? err.message : String(err);
          }
          r.doneAt = clock.now();
          this.replies[si]!.push(r);
          this.stepsLeft--;
        }
      });
    }
    for (const [ci, c] of this.part.cancels.entries()) {
      void clock.spawn(`cancel ${ci}`, async () => {
        await clock.sleep(Math.max(0, BASE + c.at - clock.now()));
        const target = stopped() ? null : cancelTarget(c.job);
        if (target?.id) {
          const at = clock.now();
          const result = await harness.cancel(target.id);
          target.note({ at, doneAt: clock.now(), result });
        }
        this.stepsLeft--;
      });
    }
  }

  /** Records an upsert job's delivery; false for any other job's. */
  deliver(ctx: { id: string; attempt: number; dueAt: number; payload: unknown }, start: number, runner: string): boolean {
    if (!isUpsertPayload(ctx.payload)) return false;
    const list = this.deliveries.get(ctx.id) ?? [];
    list.push({ id: ctx.id, attempt: ctx.attempt, dueAt: ctx.dueAt, start, n: ctx.payload.n, runner });
    this.deliveries.set(ctx.id, list);
    return true;
  }

  /** Every upsert and cancel was sent. */
  done(): boolean {
    return this.stepsLeft === 0;
  }

  /** The jobs the upserts created: each must end delivered. */
  created(): number {
    return this.replies.reduce((n, rs) => n + rs.filter((r) => r.reply?.result === "created").length, 0);
  }

  /** How many jobs there were, for the run's summary. */
  stats(): { series: number; upserts: number; created: number } {
    return { series: this.part.upserts.length, upserts: this.replies.reduce((n, rs) => n + rs.length, 0), created: this.created() };
  }

  check(trace: Trace): Violation[] {
    const v: Violation[] = [];
    const claimedAt = new Map<string, number>();
    for (const c of trace.claims) for (const j of c.jobs) if (!claimedAt.has(j.id)) claimedAt.set(j.id, c.at);
    for (const [si, replies] of this.replies.entries()) {
      const label = `upsert series ${si} (${this.topicOf[si]})`;
      const applied = new Map<string, StepReply[]>();
      let previous: string | undefined;
      for (const [n, r] of replies.entries()) {
        if (!r.reply) {
          v.push({ kind: "upsert-error", at: r.callAt, message: `${label}: step ${n} at ${rel(r.callAt)} threw: ${r.error}` });
          continue;
        }
        const { id, result, dueAt } = r.reply;
        const mine = applied.get(id);
        if (result === "created") {
          if (mine) v.push({ kind: "upsert-reused", at: r.callAt, message: `${label}: step ${n} created ${id}, an id the series had before` });
          const before = previous === undefined ? undefined : claimedAt.get(previous);
          if (previous !== undefined && (before === undefined || before > r.doneAt))
            v.push({
              kind: "upsert-two-pending",
              at: r.callAt,
              message: `${label}: step ${n} at ${rel(r.callAt)} created ${id} while ${previous} was not yet claimed (${before === undefined ? "never" : `claimed ${rel(before)}`})`,
            });
          if (dueAt < r.callAt + r.step.delay || dueAt > r.doneAt + r.step.delay)
            v.push({
              kind: "upsert-due",
              at: r.callAt,
              message: `${label}: step ${n} created ${id} due ${rel(dueAt)}, its delay says ${r.step.delay} ms from ${rel(r.callAt)}`,
            });
          applied.set(id, [r]);
          previous = id;
          continue;
        }
        if (!mine || id !== previous) {
          v.push({
            kind: "upsert-unknown",
            at: r.callAt,
            message: `${label}: step ${n} ${result} ${id}, which is not the series' latest job (${previous ?? "none"})`,
          });
          continue;
        }
        const last = mine[mine.length - 1]!.reply!;
        if (result === "ignored" || r.step.onConflict === "keepDue") {
          if (dueAt !== last.dueAt)
            v.push({
              kind: "upsert-due",
              at: r.callAt,
              message: `${label}: step ${n} (${result}, ${r.step.onConflict}) moved ${id} from ${rel(last.dueAt)} to ${rel(dueAt)}`,
            });
        } else {
          // min(now + delay, first enqueue + maxWait), but never before now: "now" and the first enqueue each within their call.
          const first = mine[0]!;
          const wait = r.step.maxWait ?? Infinity;
          const lo = Math.max(r.callAt, Math.min(r.callAt + r.step.delay, first.callAt + wait));
          const hi = Math.max(r.doneAt, Math.min(r.doneAt + r.step.delay, first.doneAt + wait));
          if (dueAt < lo || dueAt > hi)
            v.push({
              kind: "upsert-due",
              at: r.callAt,
              message: `${label}: step ${n} replaced ${id} due ${rel(dueAt)}; delay ${r.step.delay} ms at ${rel(r.callAt)}, maxWait ${r.step.maxWait ?? "none"} from ${rel(first.callAt)}`,
            });
        }
        if (result !== "ignored") mine.push(r);
        if (result === "ignored" && r.step.onConflict !== "ignore")
          v.push({ kind: "upsert-result", at: r.callAt, message: `${label}: step ${n} (${r.step.onConflict}) was ignored` });
        if (result !== "ignored" && r.step.onConflict === "ignore")
          v.push({ kind: "upsert-result", at: r.callAt, message: `${label}: step ${n} (ignore) ${result} ${id}` });
      }
      for (const [id, steps] of applied) {
        const got = this.deliveries.get(id) ?? [];
        const firsts = got.filter((d) => d.attempt === 1);
        if (firsts.length !== 1) {
          v.push({
            kind: firsts.length === 0 ? "lost" : "duplicate",
            message: `${label}: ${id} was delivered with attempt 1 ${firsts.length} times${got.length > 0 ? ` (${got.map((d) => `#${d.attempt} by ${d.runner} at ${rel(d.start)}`).join(", ")})` : ""}`,
          });
          continue;
        }
        const d = firsts[0]!;
        const last = steps[steps.length - 1]!;
        const n = replies.indexOf(last);
        if (d.n !== n || d.dueAt !== last.reply!.dueAt)
          v.push({
            kind: "upsert-stale",
            at: d.start,
            message: `${label}: ${id} delivered step ${d.n}'s payload due ${rel(d.dueAt)}; the last upsert that changed it was step ${n}, due ${rel(last.reply!.dueAt)}`,
          });
        if (d.start < d.dueAt) v.push({ kind: "early", at: d.start, message: `${label}: ${id} started ${rel(d.start)}, before its due time ${rel(d.dueAt)}` });
      }
    }
    return v;
  }
}
