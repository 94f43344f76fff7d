import { addOutcomes, noOutcomes, type Outcomes, type Settings } from "../env.js";
import type { TickLock } from "../queue/lock.js";
import type { Queue, TickStatus } from "../queue/queue.js";
import { fireDueSchedules } from "../schedules/fire.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { realClock, type Clock } from "./clock.js";
import { afterRound, claimLead, dueOfPeek, foldEnded, idleLookAt, newTickState, nextLoopStep, pollInterval, roundStep, type TickState } from "./decisions.js";
import { ChunksInFlight } from "./in-flight.js";
import { awaitLateChunks, type Wake } from "./late-chunks.js";
import { acquireLock } from "./lock-wait.js";
import { OutageBackoff } from "./outage.js";
import { PollRiders } from "./poll-riders.js";
import { CHUNK_OVERHEAD, planRound, type RoundPlan } from "./round-plan.js";
import type { ChunkOptions, ChunkReport } from "./run-chunk.js";
import { jsonLog, logLostChunk, type Log } from "./settle.js";
import { SleepMark } from "./sleep-mark.js";

/** Options of one tick invocation: its deployment's queue, settings and code handlers, and: */
export interface TickOptions extends Pick<ChunkOptions, "queue" | "settings" | "handlers"> {
  lock: TickLock;
  /** When Cloudflare scheduled this invocation (its minute), epoch ms. */
  scheduledTime: number;
  clock?: Clock;
  /** How long past `scheduledTime` the loop runs. Default 60,000 ms + `settings.tickOverlapMs`. */
  windowMs?: number;
  /** Outbound fetch for the http handler (counted). Default the global fetch. */
  fetch?: typeof fetch;
  /** One structured line per round that did work and per failed attempt. Default console.log of JSON. */
  log?: Log;
  /**
   * Runs one chunk of a topic in an invocation of its own (the TickChunk
   * entrypoint through the TICK_RUNNER service binding), with a subrequest
   * budget of its own; it costs this invocation one subrequest. With it, a
   * round hands a topic's chunk out whenever delivering it here would spend
   * more than the loop can afford per round for the rest of its window, and
   * a topic with a backlog gets up to `TICK_FANOUT` chunks per round.
   */
  fanOut?: (topic: string, max: number) => Promise<ChunkReport>;
  /**
   * Goes on with this loop's window in an invocation of its own (TickChunk's
   * continueTick) when this one's subrequest budget runs out, so a load the
   * budget cannot carry is not left until the next cron. Without it, polls
   * stretch as the budget shrinks instead.
   */
  handOver?: (windowEnd: number) => Promise<unknown>;
  /**
   * The deployment has its wake alarm (TICK_ALARM): a loop that finds nothing
   * due before the next cron's look ends instead of sleeping (src/tick/sleep-mark.ts). Default false.
   */
  endWhenIdle?: boolean;
  /** Wait for a running loop to end its window (default), or end at once when one holds the lock (a wake alarm's loop). */
  waitForLock?: boolean;
  /** The producers' wake path, for what chunks ending after the loop let go of the lock ask for (src/tick/late-chunks.ts). Default none. */
  wake?: Wake;
}

export interface TickReport {
  /** Why the loop ended: its window passed, the budget ran out, the lock was lost, it never got the lock, or idle (nothing due before the next cron). */
  ended: "window" | "budget" | "lock-lost" | "not-acquired" | "idle";
  rounds: number;
  claimed: number;
  outcomes: Outcomes;
  subrequests: number;
  /** Chunks run in invocations of their own. */
  fannedOut: number;
  /** Sleeps of TICK_IDLE_PEEK_MS taken while idle. */
  idleSleeps: number;
  /** Whether the loop handed the rest of its window to an invocation of its own. */
  handedOver: boolean;
}

/** Most due topics one poll returns. */
const MAX_DUE_TOPICS = 500;
/** The schedules' key in TopicMemory's quiet list (no topic name holds "~"). */
const SCHEDULES = "~schedules";

type Peek = Awaited<ReturnType<Queue["peek"]>>;

/**
 * One tick invocation: takes the lock (waiting for a running loop to end its
 * window rather than starting a second one), then runs rounds until its window
 * or its subrequest budget ends. A round polls the topic index — one command
 * that names every topic with work due now, whatever the number of topics —
 * runs a chunk of each (each at most `tickChunk`, so a hot topic cannot starve
 * the others), here or fanned out, and then sleeps until the index's next due
 * time, the time any chunk asked to be back (a retry, a freed slot, the rate's
 * next token), or `TICK_POLL_MS`, whichever is soonest.
 */
export function runTick(options: TickOptions): Promise<TickReport> {
  return new TickLoop(options).run();
}

class TickLoop {
  private readonly s: Settings;
  private readonly clock: Clock;
  private readonly log: Log;
  private readonly budget: SubrequestBudget;
  private readonly windowEnd: number;
  private readonly lockTtl: number;
  private readonly outage: OutageBackoff;
  private readonly mark: SleepMark;
  private readonly riders = new PollRiders();
  // When the loop polls next and what it remembers between rounds (src/tick/decisions.ts decides).
  private readonly st: TickState = newTickState(-Infinity);
  private readonly inFlight: ChunksInFlight;
  private readonly report: TickReport = {
    ended: "window",
    rounds: 0,
    claimed: 0,
    outcomes: noOutcomes(),
    subrequests: 0,
    fannedOut: 0,
    idleSleeps: 0,
    handedOver: false,
  };
  private ended: TickReport["ended"] = "window";
  private lastExtend = -Infinity;
  private rotation = 0;
  /** How long the last round that claimed jobs took from its poll to its claims' return. */
  private roundTripMs = 0;

  constructor(private readonly o: TickOptions) {
    this.s = o.settings;
    this.clock = o.clock ?? realClock;
    this.log = o.log ?? jsonLog;
    this.budget = new SubrequestBudget(this.s.tickSubrequestBudget);
    this.windowEnd = o.scheduledTime + (o.windowMs ?? 60_000 + this.s.tickOverlapMs);
    // Renewed every third of its life; it outlasts an idle sleep: a crashed loop is replaced within 15 s (30 s idle).
    this.lockTtl = Math.max(15_000, 3 * this.s.tickPollMs, this.s.tickIdlePeekMs + 10_000);
    this.outage = new OutageBackoff(this.clock, this.log, this.windowEnd);
    this.mark = new SleepMark({ ...this.s, endWhenIdle: o.endWhenIdle ?? false });
    // Chunks run side by side: a round waits for its claims, not for their
    // handlers, so a job that falls due while a slow handler runs is claimed
    // at the next poll. Chunks that end may bring the next poll forward.
    this.inFlight = new ChunksInFlight({
      queue: o.queue,
      settings: this.s,
      handlers: o.handlers,
      clock: this.clock,
      budget: this.budget,
      fetch: o.fetch ?? fetch,
      overall: new Semaphore(this.s.tickConcurrency),
      log: this.log,
      ...(o.fanOut ? { fanOut: o.fanOut } : {}),
    });
  }

  async run(): Promise<TickReport> {
    const { clock } = this;
    const args = {
      lock: this.o.lock,
      clock,
      budget: this.budget,
      outage: this.outage,
      windowEnd: this.windowEnd,
      ttlMs: this.lockTtl,
      tickPollMs: this.s.tickPollMs,
      once: this.o.waitForLock === false,
    };
    if (!(await acquireLock(args))) return this.finish("not-acquired");
    this.lastExtend = clock.now();
    try {
      for (;;) {
        this.foldEnded();
        const step = nextLoopStep(this.st, { now: clock.now(), windowEnd: this.windowEnd, budgetLeft: this.budget.left });
        // A bug in a chunk is rethrown, as it would have been in the round.
        if (step.kind === "fail") throw step.error;
        if (step.kind === "end") {
          this.ended = step.ended;
          break;
        }
        if (step.kind === "sleep") {
          await this.inFlight.sleep(step.ms);
          continue;
        }
        try {
          const stop = await this.round();
          if (stop) {
            this.ended = stop;
            break;
          }
        } catch (err) {
          await this.outage.wait(err);
        }
      }
    } finally {
      await this.letGo();
    }
    // letGo folds in the last chunks: a failure among them is rethrown too.
    if (this.st.failure) throw this.st.failure.error;
    return this.finish(this.ended);
  }

  /** One round: a poll, due schedules fired, a plan, and its chunks started (or an idle wait). Says why the loop stops, if it does. */
  private async round(): Promise<"budget" | "lock-lost" | "idle" | undefined> {
    const polledAt = this.clock.now();
    const peek = await this.poll();
    if (!peek) return "lock-lost";
    let now = this.clock.now();
    const { due, wakeAt: peekWake } = dueOfPeek(this.st, peek, now);
    const wakeAt = Math.min(peekWake, await this.fireSchedules(peek.schedulesDue, due, now));
    now = this.clock.now();

    const plan = this.plan(due, now);
    const step = roundStep(this.st, plan, { now, wakeAt, running: !this.inFlight.idle });
    if (step.kind === "end") return "budget";
    this.report.rounds++;
    if (step.kind === "idle") return this.waitIdle(step.wakeAt);
    await this.start(plan, now, step.wakeAt, peek.more, polledAt);
    return undefined;
  }

  /** The poll, with the lock's renewal, the sleep mark, the status and the backlog samples riding on it; null when the lock was lost. */
  private async poll(): Promise<Peek | null> {
    const { clock, budget } = this;
    const renew = clock.now() - this.lastExtend >= this.lockTtl / 3;
    const ride = this.riders.next(clock.now(), { markChanges: this.mark.pending !== undefined, status: () => this.status(null, this.mark.asleep) });
    budget.spend();
    const peek = await this.o.queue.peek({
      now: clock.now(),
      limit: Math.min(MAX_DUE_TOPICS, Math.max(1, budget.left - 2)),
      ...(renew ? { renewLock: { token: this.o.lock.token, ttlMs: this.lockTtl } } : {}),
      ...(this.mark.pending !== undefined ? { sleepMark: this.mark.pending } : {}),
      ...ride.riders,
    });
    ride.done(peek.toSample);
    this.mark.polled(clock.now());
    if (!peek.lockHeld) return null;
    this.outage.reset();
    // Redis answers again: the limit errors counted meanwhile are stored (rare, so no command on a normal poll).
    if (await this.o.queue.flushLimitErrors()) budget.spend();
    if (renew) this.lastExtend = clock.now();
    return peek;
  }

  /**
   * Schedules whose occurrence has come store their jobs now, and those
   * topics join `due` to be claimed in this same round. Returns when the
   * schedules want the loop back.
   */
  private async fireSchedules(schedulesDue: boolean, due: string[], now: number): Promise<number> {
    if (!schedulesDue) return Infinity;
    if (this.st.memory.isQuiet(SCHEDULES, now) || this.budget.left < 6) return this.st.memory.quietUntilOf(SCHEDULES) ?? now + this.s.tickPollMs;
    const f = await fireDueSchedules(this.o.queue.schedules, now, Math.min(6, this.budget.left - 4));
    this.budget.spend(f.calls);
    for (const j of f.jobs) if (!due.includes(j.topic)) due.push(j.topic);
    if (f.jobs.length > 0) this.log({ level: "info", msg: "schedules fired", jobs: f.jobs.length, fenced: f.fenced });
    // Fenced off: someone else (a producer while this loop slept) fired it, and its job is due now.
    let wakeAt = f.fenced > 0 ? now : Infinity;
    if (f.nextAt !== null) {
      // Nothing fired yet still due: leave the schedules for a poll rather than spin.
      if (f.jobs.length === 0 && f.nextAt <= now) this.st.memory.quiet(SCHEDULES, now + this.s.tickPollMs);
      else wakeAt = Math.min(wakeAt, f.nextAt);
    }
    return wakeAt;
  }

  private plan(due: string[], now: number): RoundPlan {
    const { s, inFlight } = this;
    const turn = due.length > 0 ? this.rotation++ : 0;
    this.st.memory.dueNow(due);
    return planRound(
      // The room before a chunk's size: the plan sizes each topic's chunk by its weight.
      due.map((t) => this.st.memory.view(t, inFlight.busy(t), inFlight.room(t, Infinity))),
      turn,
      {
        tickChunk: s.tickChunk,
        tickFanout: s.tickFanout,
        tickPollMs: s.tickPollMs,
        budgetLeft: this.budget.left,
        fanning: this.o.fanOut !== undefined && s.tickFanout > 0,
        windowLeftMs: this.windowEnd - now,
        freeSlots: inFlight.freeSlots,
        tickConcurrency: s.tickConcurrency,
      },
    );
  }

  /** A round with nothing to start: wait for a running chunk, the next known work, a poll, or (asleep) the next idle look; or end idle. */
  private waitIdle(wakeAt: number): "idle" | undefined {
    const now = this.clock.now();
    const running = !this.inFlight.idle;
    // Asleep, the loop looks only every TICK_IDLE_PEEK_MS, or ends (src/tick/sleep-mark.ts).
    const sleep = running ? null : this.mark.idle(now, wakeAt);
    if (sleep === "end") return "idle";
    if (sleep !== null) this.report.idleSleeps++;
    this.st.nextLookAt = idleLookAt({ now, wakeAt, running, sleep, pollInterval: this.pollInterval(), windowEnd: this.windowEnd });
    return undefined;
  }

  /** Starts the plan's chunks and waits for their claims (not their handlers), then sets the next poll. */
  private async start(plan: RoundPlan, now: number, wakeAt: number, more: boolean, polledAt: number): Promise<void> {
    const { clock, budget, inFlight, report, s } = this;
    const lead = claimLead(s.tickLeadMs, this.roundTripMs);
    budget.spend(plan.remote.length);
    report.fannedOut += plan.remote.length;
    for (const r of plan.remote) inFlight.startFanned(r.topic, r.max);
    const started = await Promise.all(plan.local.map((p) => inFlight.startHere(p.topic, p.max, CHUNK_OVERHEAD + p.max, lead)));
    const claimedAny = started.some((c) => c.claimed > 0);
    if (claimedAny) this.roundTripMs = clock.now() - polledAt;
    // Only jobs started wake the loop from its sleep: a claim that found nothing (a topic looked at for a lease's end
    // or a sweep, every job long settled) leaves the idle count and the mark as they were, so the loop ends as soon.
    if (claimedAny || plan.remote.length > 0) {
      this.mark.worked();
      this.riders.worked(clock.now());
    }
    const claims = started.map((c, i) => ({
      topic: plan.local[i]!.topic,
      max: plan.local[i]!.max,
      claimed: c.claimed,
      more: c.more,
      nextLookAt: c.nextLookAt,
      ...(c.weight !== undefined ? { seen: { weight: c.weight, slots: c.slots } } : {}),
    }));
    const facts = { roundAt: now, now: clock.now(), wakeAt, more, budgetLeft: budget.left, windowEnd: this.windowEnd, tickPollMs: s.tickPollMs };
    const after = afterRound(this.st, plan, claims, { ...facts, pollInterval: this.pollInterval() });
    for (const topic of after.quieted)
      this.log({ level: "warn", msg: "a chunk got nothing yet asked to be back at once; leaving the topic for a poll", topic });
    report.claimed += after.claimed;
    this.log({
      level: "info",
      msg: "tick round",
      round: report.rounds,
      topics: plan.local.map((p) => p.topic),
      claimed: after.claimed,
      fannedOut: plan.remote.length,
      subrequests: budget.spent,
      budget: s.tickSubrequestBudget,
      // When the loop looks next (a due job, the rate's next token, a lease deadline); chunks that end may bring it forward.
      nextLookInMs: Number.isFinite(after.wakeAt) ? Math.max(0, after.wakeAt - clock.now()) : null,
    });
  }

  /** Folds in what running chunks settled early and the chunks that ended (src/tick/decisions.ts), and logs the lost ones. */
  private foldEnded(): void {
    const { inFlight, report } = this;
    const folded = foldEnded(this.st, inFlight.takeLooks(), inFlight.takeEnded(), {
      now: this.clock.now(),
      tickPollMs: this.s.tickPollMs,
      quietEmptyFanOuts: true,
      running: (topic) => Object.values(inFlight.busy(topic)).includes(true),
    });
    addOutcomes(report.outcomes, folded.outcomes);
    report.claimed += folded.claimed.fanned;
    for (const e of folded.lost) logLostChunk(this.log, e);
  }

  /**
   * The lock goes first: a successor polls and claims while this loop's last chunks settle (their jobs stay leased to
   * them), so a slow handler at the end of a window delays no job due meanwhile. In an outage the lock lapses instead.
   */
  private async letGo(): Promise<void> {
    this.budget.spend();
    await this.o.lock.release(this.status(this.ended, this.ended === "idle")).catch(() => false);
    // Out of budget, the successor starts at once, beside this loop's last chunks.
    const successor = this.handOverIfOutOfBudget();
    await awaitLateChunks(this.inFlight, { wake: this.o.wake, budget: this.budget, fold: () => this.foldEnded(), log: this.log });
    await successor;
  }

  /** Out of budget with window left: the successor takes the lock this loop just released and goes on with the window. */
  private async handOverIfOutOfBudget(): Promise<void> {
    if (this.ended !== "budget" || this.st.failure || !this.o.handOver || this.windowEnd - this.clock.now() <= this.s.tickPollMs) return;
    try {
      this.report.handedOver = true;
      await this.o.handOver(this.windowEnd);
    } catch (err) {
      this.log({ level: "error", msg: "handing the tick over failed; the next cron goes on", error: String(err) });
    }
  }

  /** The blind poll interval (see pollInterval in src/tick/decisions.ts). */
  private pollInterval(): number {
    const { budget, clock, o, s } = this;
    return pollInterval({
      canHandOver: o.handOver !== undefined,
      tickPollMs: s.tickPollMs,
      now: clock.now(),
      windowEnd: this.windowEnd,
      budgetLeft: budget.left,
    });
  }

  private status(ended: string | null, asleep: boolean): TickStatus {
    return {
      startedAt: this.o.scheduledTime,
      updatedAt: this.clock.now(),
      rounds: this.report.rounds,
      claimed: this.report.claimed,
      subrequests: this.budget.spent,
      budget: this.s.tickSubrequestBudget,
      asleep,
      ended,
    };
  }

  private finish(ended: TickReport["ended"]): TickReport {
    return { ...this.report, ended, subrequests: this.budget.spent };
  }
}
