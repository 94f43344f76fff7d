import { addOutcomes, noOutcomes, type Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";
import { RedisUnavailableError } from "../queue/redis.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { ChunksInFlight } from "./in-flight.js";
import { realClock, type Clock } from "./clock.js";
import { nextAfterClaim, nextDrainStep } from "./drain-step.js";
import type { ChunkReport } from "./run-chunk.js";
import { CHUNK_OVERHEAD } from "./round-plan.js";
import { jsonLog, type Log } from "./settle.js";

/** Options of {@link runDrain}. */
export interface DrainOptions {
  queue: Queue;
  settings: Settings;
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
 * within a peek from then, and only while the tick still sleeps.
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
  // Dropped when a fan-out fails: the drain goes on here.
  private fanOut: DrainOptions["fanOut"];
  private full = false;
  private lastTaken = 1;
  // When the next step runs; null while only the chunks still running can tell.
  private next: number | null;
  // A chunk that ends may not bring the next step before the pace of the claim that started it.
  private pacedUntil = -Infinity;
  // A bug (not an outage) in a chunk: rethrown by the drain.
  private failure: { error: unknown } | undefined;

  constructor(private readonly o: DrainOptions) {
    const s = o.settings;
    this.s = s;
    this.clock = o.clock ?? realClock;
    this.budget = new SubrequestBudget(s.tickSubrequestBudget);
    this.end = this.clock.now() + o.horizonMs;
    this.fanOut = s.tickFanout > 0 ? o.fanOut : undefined;
    this.inFlight = new ChunksInFlight({
      queue: o.queue,
      settings: s,
      clock: this.clock,
      budget: this.budget,
      fetch: o.fetch ?? fetch,
      overall: new Semaphore(s.tickConcurrency),
      log: o.log ?? jsonLog,
      ...(this.fanOut ? { fanOut: this.fanOut } : {}),
    });
    this.next = this.clock.now();
  }

  async run(): Promise<ChunkReport> {
    try {
      while (await this.step());
    } finally {
      await this.inFlight.allEnded();
      this.foldEnded();
    }
    if (this.failure) throw this.failure.error;
    this.total.nextLookAt = this.next;
    this.total.subrequests = this.budget.spent;
    return this.total;
  }

  /** One step (src/tick/drain-step.ts): folds in what ended, then does what the facts call for. False once the drain ends. */
  private async step(): Promise<boolean> {
    this.foldEnded();
    if (this.failure) throw this.failure.error;
    const { inFlight, budget, s } = this;
    const now = this.clock.now();
    const step = nextDrainStep({
      now,
      next: this.next,
      end: this.end,
      running: !inFlight.idle,
      busy: inFlight.busy(this.o.topic),
      budgetLeft: budget.left,
      fanning: this.fanOut !== undefined,
      full: this.full,
      lastTaken: this.lastTaken,
      room: inFlight.room(this.o.topic, Infinity),
      canHandOver: this.o.handOver !== undefined,
      tickChunk: s.tickChunk,
      tickFanout: s.tickFanout,
      tickPollMs: s.tickPollMs,
      tickIdlePeekMs: s.tickIdlePeekMs,
    });
    switch (step.kind) {
      case "wait":
        await inFlight.whenOneEnds();
        return true;
      case "ask-tick":
        budget.spend();
        if (!(await this.o.queue.tickAsleep().catch(() => false))) return false;
        this.end = step.until;
        return true;
      case "sleep":
        await inFlight.sleep(step.ms);
        return true;
      case "fan-out":
        budget.spend(step.chunks);
        for (let k = 0; k < step.chunks; k++) inFlight.startFanned(this.o.topic, s.tickChunk);
        this.next = null;
        return true;
      case "hold":
        this.next = null;
        return true;
      case "claim":
        await this.claimHere(now, step.max);
        return true;
      case "wait-all":
        await inFlight.allEnded();
        return true;
      case "hand-over":
        budget.spend();
        this.add(await this.o.handOver!(step.horizonMs));
        return false;
      case "end":
        return false;
    }
  }

  /** Claims a chunk here (a claim, a settle and at least one delivery) and sets when the drain is back. */
  private async claimHere(stepAt: number, max: number): Promise<void> {
    const c = await this.inFlight.startHere(this.o.topic, max, CHUNK_OVERHEAD + max);
    this.lastTaken = Math.max(1, c.claimed);
    this.full = c.more;
    const after = nextAfterClaim({
      claimed: c.claimed,
      more: c.more,
      nextLookAt: c.nextLookAt,
      stepAt,
      now: this.clock.now(),
      end: this.end,
      budgetLeft: this.budget.left,
      tickPollMs: this.s.tickPollMs,
      pacedUntil: this.pacedUntil,
    });
    this.next = after.next;
    this.pacedUntil = after.pacedUntil;
  }

  /** Folds in what running chunks ended or settled early since the last step, and when they want the drain back. */
  private foldEnded(): void {
    const { inFlight } = this;
    // What a running chunk settled early (a freed slot, a retry): be back for it.
    for (const at of inFlight.takeLooks()) this.backAt(at);
    for (const e of inFlight.takeEnded()) {
      const r = e.report;
      if (!r) {
        // A fan-out that failed: go on here. Anything else: the chunk's jobs come back after their lease.
        if (e.where === "fanned") this.fanOut = undefined;
        else if (!(e.error instanceof RedisUnavailableError)) this.failure ??= { error: e.error };
        this.backAt(this.clock.now() + this.s.tickPollMs);
        continue;
      }
      this.add(r);
      if (e.where === "fanned") {
        this.lastTaken = Math.max(1, r.claimed);
        this.full = r.more;
      }
      // A step waiting for a running chunk (next null) goes on as it ends.
      if (r.nextLookAt != null) this.backAt(r.more ? r.nextLookAt : Math.max(r.nextLookAt, this.pacedUntil));
    }
  }

  private backAt(at: number): void {
    this.next = Math.min(this.next ?? Infinity, at);
  }

  private add(r: ChunkReport): void {
    this.total.claimed += r.claimed;
    addOutcomes(this.total.outcomes, r.outcomes);
  }
}
