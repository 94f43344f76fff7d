/**
 * The model test's direct half: the tick's decisions (src/tick/decisions.ts)
 * driven with no Redis and no clock. A loop's window or a drain's horizon is
 * played out over abstract topics whose jobs fall due at random times, with
 * chunks that take time, ask for retries, lose their jobs to an outage or
 * fail with a bug, under a budget that is ample or tight. Each step is the
 * core's (with planRound for a loop's round); the play only carries it out.
 * Checked: with an ample budget every job (and retry) is claimed within a
 * poll interval of falling due; the budget keeps what a release and a
 * handover need; no sleep passes the window; a bug is rethrown at the next
 * step; every play ends.
 */
import fc from "fast-check";
import { noOutcomes } from "../../../src/env.js";
import { RedisUnavailableError } from "../../../src/queue/errors.js";
import * as core from "../../../src/tick/decisions.js";
import type { TickState } from "../../../src/tick/decisions.js";
import type { EndedChunk } from "../../../src/tick/in-flight.js";
import { planRound } from "../../../src/tick/round-plan.js";

/** What one chunk does once started: how long it runs, and how it ends. */
interface ChunkFate {
  ms: number;
  /** ok; outage: its jobs come back as it ends; bug: it throws. */
  end: "ok" | "outage" | "bug";
  /** One of its jobs asks to be retried this long after the chunk ends. */
  retryMs?: number;
}

export interface CoreScenario {
  kind: "loop" | "drain";
  tickPollMs: number;
  /** A loop's window, or a drain's horizon. */
  spanMs: number;
  budget: number;
  tickChunk: number;
  tickFanout: number;
  canHandOver: boolean;
  topics: number;
  /** Due times, ms from the start, by topic (a drain's topic is 0). */
  jobs: Array<{ topic: number; at: number }>;
  /** Taken in turn by the chunks started. */
  fates: ChunkFate[];
  /** What a drain past its horizon hears when it asks whether the tick sleeps. */
  tickAsleep: boolean;
}

/** A budget no play can spend (a loop's 75 s at 100 ms polls and all its chunks need far less). */
const AMPLE = 10_000;
/** How long an outage holds a chunk's jobs: they come back as its lease ends. */
const LEASE_MS = 10_000;
/** A play that takes more steps than this spins. */
const STEP_LIMIT = 50_000;

export function coreScenarioArb(): fc.Arbitrary<CoreScenario> {
  const fate: fc.Arbitrary<ChunkFate> = fc.record(
    {
      ms: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })),
      end: fc.oneof({ weight: 20, arbitrary: fc.constant("ok" as const) }, fc.constant("outage" as const), fc.constant("bug" as const)),
      retryMs: fc.integer({ min: 0, max: 5_000 }),
    },
    { requiredKeys: ["ms", "end"] },
  );
  return fc
    .record({
      kind: fc.constantFrom("loop" as const, "drain" as const),
      tickPollMs: fc.constantFrom(100, 1_000),
      spanMs: fc.integer({ min: 1_000, max: 75_000 }),
      budget: fc.oneof(fc.constant(AMPLE), fc.integer({ min: 3, max: 300 })),
      tickChunk: fc.oneof(fc.constant(100), fc.integer({ min: 1, max: 4 })),
      tickFanout: fc.constantFrom(0, 4),
      canHandOver: fc.boolean(),
      topics: fc.integer({ min: 1, max: 4 }),
      jobs: fc.array(fc.record({ topic: fc.nat(3), at: fc.integer({ min: 0, max: 80_000 }) }), { maxLength: 60 }),
      fates: fc.array(fate, { minLength: 1, maxLength: 8 }),
      tickAsleep: fc.boolean(),
    })
    .map((sc) => {
      const topics = sc.kind === "drain" ? 1 : sc.topics;
      return { ...sc, topics, jobs: sc.jobs.map((j) => ({ topic: j.topic % topics, at: j.at })) };
    });
}

interface Job {
  topic: number;
  at: number;
  /** When a chunk claimed it (the last time, if an outage gave it back). */
  claimedAt?: number;
  /** An outage gave it back once: it may be late. */
  lost?: boolean;
  /** A retry of a job (which is not retried again, as a play must end). */
  retry?: boolean;
}

interface Running {
  topic: number;
  where: EndedChunk["where"];
  startedAt: number;
  endsAt: number;
  jobs: Job[];
  more: boolean;
  nextLookAt: number | null;
  fate: ChunkFate;
}

/** A play: the jobs, the chunks running, the time and the budget spent. */
class Play {
  now = 0;
  spent = 0;
  readonly jobs: Job[];
  readonly running: Running[] = [];
  readonly violations: string[] = [];
  private fates = 0;
  /** Set when a chunk ended with a bug: the next step must rethrow it. */
  bugPending = false;

  constructor(readonly sc: CoreScenario) {
    this.jobs = sc.jobs.map((j) => ({ ...j }));
  }

  get left(): number {
    return this.sc.budget - this.spent;
  }

  pending(topic: number): Job[] {
    return this.jobs.filter((j) => j.topic === topic && j.claimedAt === undefined).sort((a, b) => a.at - b.at);
  }

  /** A chunk of `topic` claims up to `max` jobs due now; it runs on for its fate's time. */
  claim(topic: number, max: number, where: EndedChunk["where"]): Running {
    const due = this.pending(topic).filter((j) => j.at <= this.now);
    const taken = due.slice(0, max);
    for (const j of taken) j.claimedAt = this.now;
    const rest = this.pending(topic);
    const fate = this.sc.fates[this.fates++ % this.sc.fates.length]!;
    const more = due.length > taken.length;
    const c: Running = {
      topic,
      where,
      startedAt: this.now,
      endsAt: this.now + fate.ms,
      jobs: taken,
      more,
      nextLookAt: more ? this.now : (rest[0]?.at ?? null),
      fate,
    };
    this.running.push(c);
    return c;
  }

  busy(topic: number): { here: boolean; fanned: boolean } {
    return {
      here: this.running.some((c) => c.topic === topic && c.where === "here"),
      fanned: this.running.some((c) => c.topic === topic && c.where === "fanned"),
    };
  }

  /** Sleeps `ms` (whole ms, as the real sleep), or less if a chunk ends first. */
  sleep(ms: number): void {
    this.now = Math.min(this.now + Math.ceil(ms), ...this.running.map((c) => c.endsAt));
  }

  /** The chunks that ended by now, as ChunksInFlight hands them over, and the looks their retries ask for. */
  takeEnded(): { looks: number[]; ended: EndedChunk[] } {
    const looks: number[] = [];
    const ended: EndedChunk[] = [];
    for (const c of this.running.filter((r) => r.endsAt <= this.now)) {
      this.running.splice(this.running.indexOf(c), 1);
      ended.push(this.endOf(c, looks));
    }
    return { looks, ended };
  }

  private endOf(c: Running, looks: number[]): EndedChunk {
    const base = { topic: String(c.topic), where: c.where, startedAt: c.startedAt };
    if (c.fate.end !== "ok") {
      // Its jobs come back as the lease ends, and may be late.
      for (const j of c.jobs) Object.assign(j, { claimedAt: undefined, lost: true, at: this.now + LEASE_MS });
      // A fanned-out chunk that throws is a failed fan-out; one run here, a bug.
      if (c.fate.end === "bug" && c.where === "here") this.bugPending = true;
      return { ...base, report: null, error: c.fate.end === "bug" ? new TypeError("a bug") : new RedisUnavailableError("down") };
    }
    let nextLookAt = c.nextLookAt;
    if (c.fate.retryMs !== undefined && c.jobs.some((j) => !j.retry)) {
      const at = this.now + c.fate.retryMs;
      this.jobs.push({ topic: c.topic, at, retry: true });
      looks.push(at);
      nextLookAt = Math.min(nextLookAt ?? Infinity, at);
    }
    return { ...base, report: { claimed: c.jobs.length, outcomes: noOutcomes(), subrequests: 0, more: c.more, nextLookAt } };
  }

  fold(st: TickState, quietEmptyFanOuts: boolean): void {
    const { looks, ended } = this.takeEnded();
    core.foldEnded(st, looks, ended, { now: this.now, tickPollMs: this.sc.tickPollMs, quietEmptyFanOuts });
  }

  /** A step's kind, checked against a bug that ended a chunk since the last step. */
  stepped(kind: string): void {
    if (this.bugPending && kind !== "fail") this.violations.push(`a chunk's bug was not rethrown at the next step (${kind} at ${this.now})`);
    if (kind === "fail" && !this.bugPending) this.violations.push(`failed at ${this.now} with no bug`);
  }

  spend(n: number): void {
    this.spent += n;
    // A loop keeps two for the lock's release and a handover, a drain one for a handover.
    const keep = this.sc.kind === "loop" ? 2 : 0;
    if (this.left < keep) this.violations.push(`spent ${this.spent} of ${this.sc.budget} at ${this.now}: nothing left for what must follow`);
  }
}

/** Plays a loop's window with the core's steps. */
function playLoop(p: Play): string {
  const { sc } = p;
  const st = core.newTickState(-Infinity);
  let rotation = 0;
  for (let steps = 0; steps < STEP_LIMIT; steps++) {
    p.fold(st, true);
    const step = core.nextLoopStep(st, { now: p.now, windowEnd: sc.spanMs, budgetLeft: p.left });
    p.stepped(step.kind);
    if (step.kind === "fail" || step.kind === "end") return step.kind === "end" ? step.ended : "fail";
    if (step.kind === "sleep") {
      if (st.nextLookAt > sc.spanMs) p.violations.push(`sleeps to ${st.nextLookAt}, past the window's end ${sc.spanMs}`);
      p.sleep(step.ms);
      continue;
    }
    p.spend(1);
    const topics = Array.from({ length: sc.topics }, (_, t) => t);
    const due = topics.filter((t) => p.pending(t).some((j) => j.at <= p.now)).map((t) => ({ topic: String(t) }));
    const nextAt = Math.min(...p.jobs.filter((j) => j.claimedAt === undefined && j.at > p.now).map((j) => j.at));
    const peek = core.dueOfPeek(st, { more: false, nextAt: Number.isFinite(nextAt) ? nextAt : null, due }, p.now);
    const views = peek.due.map((t) => st.memory.view(t, p.busy(Number(t)), Infinity));
    const limits = { tickChunk: sc.tickChunk, tickFanout: sc.tickFanout, tickPollMs: sc.tickPollMs, budgetLeft: p.left, fanning: sc.tickFanout > 0 };
    const plan = planRound(views, peek.due.length > 0 ? rotation++ % peek.due.length : 0, { ...limits, windowLeftMs: sc.spanMs - p.now, freeSlots: Infinity });
    const round = core.roundStep(st, plan, { now: p.now, wakeAt: peek.wakeAt, running: p.running.length > 0 });
    if (round.kind === "end") return "budget";
    const interval = core.pollInterval({ canHandOver: sc.canHandOver, tickPollMs: sc.tickPollMs, now: p.now, windowEnd: sc.spanMs, budgetLeft: p.left });
    if (round.kind === "idle") {
      st.nextLookAt = core.idleLookAt({
        now: p.now,
        wakeAt: round.wakeAt,
        running: p.running.length > 0,
        sleep: null,
        pollInterval: interval,
        windowEnd: sc.spanMs,
      });
      continue;
    }
    p.spend(plan.remote.length);
    for (const r of plan.remote) p.claim(Number(r.topic), r.max, "fanned");
    const claims = plan.local
      .map((l) => ({ ...l, ...p.claim(Number(l.topic), l.max, "here") }))
      .map((c) => ({ ...c, topic: String(c.topic), claimed: c.jobs.length }));
    p.spend(claims.reduce((n, c) => n + core.chunkPrice(c.claimed), 0));
    const facts = { roundAt: p.now, now: p.now, wakeAt: round.wakeAt, more: false, budgetLeft: p.left, windowEnd: sc.spanMs, tickPollMs: sc.tickPollMs };
    core.afterRound(st, plan, claims, { ...facts, pollInterval: core.pollInterval({ ...facts, canHandOver: sc.canHandOver }) });
  }
  p.violations.push(`no end after ${STEP_LIMIT} steps`);
  return "spin";
}

/** Plays a drain's horizon with the core's steps. */
function playDrain(p: Play): string {
  const { sc } = p;
  const st = core.newTickState(0);
  let end = sc.spanMs;
  const tick = { tickChunk: sc.tickChunk, tickFanout: sc.tickFanout, tickPollMs: sc.tickPollMs, tickIdlePeekMs: 20_000 };
  for (let steps = 0; steps < STEP_LIMIT; steps++) {
    p.fold(st, false);
    const running = p.running.length > 0;
    const base = { topic: "0", now: p.now, end, running, busy: p.busy(0), budgetLeft: p.left, canFanOut: sc.tickFanout > 0, room: Infinity };
    const step = core.nextDrainStep(st, { ...base, canHandOver: sc.canHandOver, ...tick });
    p.stepped(step.kind);
    switch (step.kind) {
      case "fail":
      case "end":
      case "hand-over":
        if (step.kind === "hand-over") p.spend(1);
        return step.kind;
      case "wait":
      case "wait-all":
        if (!running) p.violations.push(`${step.kind} at ${p.now} with nothing running`);
        p.now = step.kind === "wait" ? Math.min(...p.running.map((c) => c.endsAt)) : Math.max(p.now, ...p.running.map((c) => c.endsAt));
        break;
      case "ask-tick":
        p.spend(1);
        if (!sc.tickAsleep) return "tick-awake";
        end = step.until;
        break;
      case "sleep":
        p.sleep(step.ms);
        break;
      case "fan-out":
        p.spend(step.chunks);
        for (let k = 0; k < step.chunks; k++) p.claim(0, sc.tickChunk, "fanned");
        break;
      case "hold":
        break;
      case "claim": {
        const c = p.claim(0, step.max, "here");
        p.spend(core.chunkPrice(c.jobs.length));
        const facts = { stepAt: p.now, now: p.now, end, budgetLeft: p.left, tickPollMs: sc.tickPollMs };
        core.afterClaim(st, { topic: "0", claimed: c.jobs.length, more: c.more, nextLookAt: c.nextLookAt }, facts);
      }
    }
  }
  p.violations.push(`no end after ${STEP_LIMIT} steps`);
  return "spin";
}

/** Plays `sc` with the core and returns what it broke (empty: every property held). */
export function checkCore(sc: CoreScenario): { violations: string[]; ended: string } {
  const p = new Play(sc);
  const ended = sc.kind === "loop" ? playLoop(p) : playDrain(p);
  // On time needs the budget to carry the play; a drain that fans out waits for its chunks (the tick's own polls cover them).
  const onTime = sc.budget === AMPLE && ended !== "fail" && !(sc.kind === "drain" && sc.tickFanout > 0);
  if (onTime) {
    for (const j of p.jobs) {
      if (j.lost || j.at >= sc.spanMs - sc.tickPollMs) continue;
      const late = (j.claimedAt ?? Infinity) - j.at;
      if (late > sc.tickPollMs) p.violations.push(`a job of topic ${j.topic} due at ${j.at} claimed ${late} ms late (poll ${sc.tickPollMs} ms)`);
    }
  }
  return { violations: p.violations, ended };
}
