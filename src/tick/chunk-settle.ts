import type { Outcomes } from "../env.js";
import type { Outcome } from "../queue/queue.js";
import type { Clock } from "./clock.js";

/** Options of {@link ChunkSettles}. */
export interface ChunkSettlesOptions {
  clock: Clock;
  /** Settles `batch` in one call (and counts it against the budget); one result per outcome. */
  settle: (batch: Outcome[]) => Promise<ReadonlyArray<{ applied: boolean }>>;
  /** Where each settled outcome is counted (stale when it did not apply). */
  outcomes: Outcomes;
  /** Told of every settle before the chunk's last: how many jobs it settled (their slots are free) and the retries among them that applied. */
  onEarlySettle?: (jobs: number, retryTimes: number[]) => void;
}

/**
 * When and what one chunk settles. One settle for the whole chunk, unless a
 * retry falls due while other handlers of the chunk still run: then what has
 * ended is settled at the retry's time, so the retry is not held back by the
 * slowest handler. The chunk may also settle what has ended at its tail
 * ({@link settlesAtTail}). Settles run one after another, in the order they
 * were asked for.
 */
export class ChunkSettles {
  private readonly ended: Outcome[] = [];
  private settling: Promise<void> = Promise.resolve();
  private last = false;
  private readonly stop = new AbortController();
  // One timer at a time, for the earliest retry not yet settled.
  private timerAt = Infinity;
  private earliestRetry = Infinity;

  constructor(private readonly o: ChunkSettlesOptions) {}

  /** Outcomes that ended and wait for a settle. */
  get waiting(): number {
    return this.ended.length;
  }

  /** A handler ended: its outcome waits for the next settle. */
  add(outcome: Outcome): void {
    this.ended.push(outcome);
  }

  /** A retry earlier than the one a timer waits for gets the timer: at its time, what has ended by then is settled. */
  settleAtRetry(outcome: Outcome): void {
    if (outcome.kind !== "retry" || outcome.at >= this.timerAt) return;
    this.timerAt = outcome.at;
    const { clock } = this.o;
    void clock.sleep(Math.max(0, Math.ceil(outcome.at - clock.now())), this.stop.signal).then(() => {
      if (this.last || this.timerAt !== outcome.at) return;
      this.timerAt = Infinity;
      this.settleEnded();
    });
  }

  /** Settles what has ended so far, after the settles already asked for. */
  settleEnded(): void {
    const batch = this.ended.splice(0);
    if (batch.length === 0) return;
    this.settling = this.settling.then(async () => {
      const retries = tallySettled(batch, await this.o.settle(batch), this.o.outcomes);
      for (const at of retries) this.earliestRetry = Math.min(this.earliestRetry, at);
      if (!this.last) this.o.onEarlySettle?.(batch.length, retries);
    });
  }

  /** Every handler has ended: settles the rest, and resolves with the earliest retry that applied (Infinity for none). */
  async finish(): Promise<number> {
    this.last = true;
    this.stop.abort();
    this.settleEnded();
    await this.settling;
    return this.earliestRetry;
  }
}

/** Counts one settle's outcomes into `into` (stale: it did not apply) and returns the times of the retries that applied, in order. */
export function tallySettled(batch: readonly Outcome[], results: ReadonlyArray<{ applied: boolean }>, into: Outcomes): number[] {
  const retries: number[] = [];
  batch.forEach((outcome, i) => {
    if (!results[i]!.applied) into.stale++;
    else {
      into[outcome.kind]++;
      if (outcome.kind === "retry") retries.push(outcome.at);
    }
  });
  return retries;
}

/**
 * At a chunk's tail (src/tick/chunk-tail.ts), whether what has ended is
 * settled at once: when the caller claims the next chunk now and more is
 * ready (the claim was full, or the topic's concurrency left the rest), if the
 * chunk is bigger than its lanes, so a capped topic's concurrency lets that
 * claim through. The budget must hold the deliveries still queued, this
 * settle and the final one: one more than the claim's reservation's settle.
 */
export function settlesAtTail(a: {
  /** The caller claims the topic's next chunk beside this one now. */
  claimsNext: boolean;
  backlog: boolean;
  jobs: number;
  lanes: number;
  /** Outcomes that ended and wait for a settle. */
  waiting: number;
  /** Jobs not started yet. */
  queued: number;
  budgetLeft: number;
}): boolean {
  return a.claimsNext && a.backlog && a.jobs > a.lanes && a.waiting > 0 && a.budgetLeft >= a.queued + 2;
}
