/**
 * Of one chunk's jobs run here, those that count against the room a new
 * chunk gets beside it (src/tick/in-flight.ts): not settled early, and not in
 * the chunk's tail (src/tick/chunk-tail.ts). Both can happen before the claim
 * is back, so they are remembered until it is, and only then do the jobs
 * count. Pure: `add` carries every change to whoever sums them.
 */
export class RoomCount {
  private settledEarly = 0;
  private inTail = false;
  private counted = 0;
  private add: ((jobs: number) => void) | undefined;

  /** `jobs` of the chunk were settled before it ended: their slots are free. */
  settled(jobs: number): void {
    this.settledEarly += jobs;
    this.uncount(jobs);
  }

  /** The chunk reached its tail: none of it counts any more. */
  tail(): void {
    this.inTail = true;
    this.uncount(this.counted);
  }

  /** The claim is back with `claimed` jobs; those neither settled nor in the tail count from now, summed through `add`. */
  claimed(claimed: number, add: (jobs: number) => void): void {
    this.add = add;
    this.counted = this.inTail ? 0 : claimed - this.settledEarly;
    add(this.counted);
  }

  /** The chunk ended: what still counts stops. */
  ended(): void {
    this.uncount(this.counted);
  }

  private uncount(jobs: number): void {
    if (!this.add) return;
    const n = Math.min(jobs, this.counted);
    this.counted -= n;
    this.add(-n);
  }
}
