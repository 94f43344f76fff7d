import { addOutcomes, noOutcomes, type Settings } from "../env.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { ChunksInFlight } from "./in-flight.js";
import { realClock, type Clock } from "./clock.js";
import { afterClaim, foldEnded, newTickState, nextDrainStep, type TickState } from "./decisions.js";
import type { ChunkOptions, ChunkReport } from "./run-chunk.js";
import { CHUNK_OVERHEAD } from "./round-plan.js";
import { jsonLog, type Log } from "./settle.js";

/** Options of {@link runDrain}: its deployment's queue, settings and code handlers, and: */
export interface DrainOptions extends Pick<ChunkOptions, "queue" | "settings" | "handlers"> {
  topic: string;
  /** Follow the topic this long from now. */
  horizonMs: number;
  /** Default the real clock. */
  clock?: Clock;
  /** Outbound fetch for the http handler (counted). Default the global fetch. */
  fetch?: typeof fetch;
  /** Default JSON lines on the console. */
  log?: Log;
  /**
   * Runs one chunk in an invocation of its own (TickChunk.run), for one
   * subrequest of this one. With it, a topic whose chunk came back full gets
   * up to TICK_FANOUT chunks at a time, as the tick does.
   */
  fanOut?: (topic: string, max: number) => Promise<ChunkReport>;
  /** Goes on with the rest of the horizon in an invocation of its own when this one's budget runs out. */
  handOver?: (horizonMs: number) => Promise<ChunkReport>;
}

const emptyReport = (): ChunkReport => ({ claimed: 0, outcomes: noOutcomes(), subrequests: 0, more: false, nextLookAt: null });

/**
 * Runs one topic's jobs as they fall due over the next `horizonMs`, in the
 * producer's invocation while the tick sleeps (see src/tick/wake.ts). It
 * waits for exactly what each chunk reports — the next due job, a retry the
 * chunk scheduled, the rate limit's next token, a freed slot — so a retry
 * within the horizon runs on time and a topic held back by its concurrency
 * goes on as soon as a slot frees. Chunks run side by side as the tick's do
 * (src/tick/in-flight.ts): a slow handler holds back no job but its own. A
 * backlog is fanned out like the tick's, and when the budget runs out the rest
 * of the horizon is handed to a drain with a budget of its own. It ends when
 * its chunks have ended and the topic has nothing more within the horizon or
 * refuses (pull or paused); past the horizon it follows only what is due
 * within a peek from then, and only while the tick still sleeps — asking
 * again as each of its chunks still running ends, since what they free the
 * tick may by then be asleep to see.
 */
export async function runDrain(o: DrainOptions): Promise<ChunkReport> {
  return new Drain(o).run();
}

class Drain {
  private readonly s: Settings;
  private readonly clock: Clock;
  private readonly budget: SubrequestBudget;
  private readonly inFlight: ChunksInFlight;
  private readonly total = emptyReport();
  private end: number;
  // When the drain steps next and what it remembers of its topic (src/tick/decisions.ts decides).
  private readonly st: TickState;

  constructor(private readonly o: DrainOptions) {
    const s = o.settings;
    this.s = s;
    this.clock = o.clock ?? realClock;
    this.budget = new SubrequestBudget(s.tickSubrequestBudget);
    this.end = this.clock.now() + o.horizonMs;
    this.inFlight = new ChunksInFlight({
      queue: o.queue,
      settings: s,
      handlers: o.handlers,
      clock: this.clock,
      budget: this.budget,
      fetch: o.fetch ?? fetch,
      overall: new Semaphore(s.tickConcurrency),
      log: o.log ?? jsonLog,
      ...(this.canFanOut && o.fanOut ? { fanOut: o.fanOut } : {}),
    });
    this.st = newTickState(this.clock.now());
  }

  /** A runner and TICK_FANOUT > 0 (a fan-out that fails stops them for the drain's topic: see TopicMemory). */
  private get canFanOut(): boolean {
    return this.s.tickFanout > 0 && this.o.fanOut !== undefined;
  }

  async run(): Promise<ChunkReport> {
    try {
      while (await this.step());
    } finally {
      await this.inFlight.allEnded();
      this.foldEnded();
    }
    if (this.st.failure) throw this.st.failure.error;
    const next = this.st.nextLookAt;
    this.total.nextLookAt = Number.isFinite(next) ? next : null;
    this.total.subrequests = this.budget.spent;
    return this.total;
  }

  /** One step (src/tick/decisions.ts): folds in what ended, then does what the facts call for. False once the drain ends. */
  private async step(): Promise<boolean> {
    this.foldEnded();
    const { inFlight, budget, s, o } = this;
    const now = this.clock.now();
    const step = nextDrainStep(this.st, {
      topic: o.topic,
      now,
      end: this.end,
      running: !inFlight.idle,
      busy: inFlight.busy(o.topic),
      budgetLeft: budget.left,
      canFanOut: this.canFanOut,
      room: inFlight.room(o.topic, s.tickChunk),
      canHandOver: o.handOver !== undefined,
      tickChunk: s.tickChunk,
      tickFanout: s.tickFanout,
      tickPollMs: s.tickPollMs,
      tickIdlePeekMs: s.tickIdlePeekMs,
    });
    switch (step.kind) {
      case "fail":
        throw step.error;
      case "wait":
        await inFlight.whenOneEnds();
        return true;
      case "ask-tick":
        budget.spend();
        if (!(await o.queue.tickAsleep().catch(() => false))) {
          // The awake tick takes the topic; but what a chunk still running frees as it ends, the tick may be asleep by then to see.
          if (inFlight.idle) return false;
          await inFlight.whenOneEnds();
          return true;
        }
        this.end = step.until;
        return true;
      case "sleep":
        await inFlight.sleep(step.ms);
        return true;
      case "fan-out":
        budget.spend(step.chunks);
        for (let k = 0; k < step.chunks; k++) inFlight.startFanned(o.topic, s.tickChunk);
        return true;
      case "hold":
        return true;
      case "claim":
        await this.claimHere(now, step.max);
        return true;
      case "wait-all":
        await inFlight.allEnded();
        return true;
      case "hand-over":
        budget.spend();
        this.add(await o.handOver!(step.horizonMs));
        return false;
      case "end":
        return false;
    }
  }

  /** Claims a chunk here (a claim, a settle and at least one delivery); the core says when the drain is back. */
  private async claimHere(stepAt: number, max: number): Promise<void> {
    const c = await this.inFlight.startHere(this.o.topic, max, CHUNK_OVERHEAD + max);
    const facts = { stepAt, now: this.clock.now(), end: this.end, budgetLeft: this.budget.left, tickPollMs: this.s.tickPollMs };
    afterClaim(this.st, { topic: this.o.topic, claimed: c.claimed, more: c.more, nextLookAt: c.nextLookAt }, facts);
  }

  /** Folds in what running chunks ended or settled early since the last step (a failed fan-out: the drain goes on here). */
  private foldEnded(): void {
    const { inFlight } = this;
    const folded = foldEnded(this.st, inFlight.takeLooks(), inFlight.takeEnded(), {
      now: this.clock.now(),
      tickPollMs: this.s.tickPollMs,
      quietEmptyFanOuts: false,
    });
    this.total.claimed += folded.claimed.here + folded.claimed.fanned;
    addOutcomes(this.total.outcomes, folded.outcomes);
  }

  private add(r: ChunkReport): void {
    this.total.claimed += r.claimed;
    addOutcomes(this.total.outcomes, r.outcomes);
  }
}
