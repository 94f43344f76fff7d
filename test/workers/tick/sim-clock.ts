import type { Clock } from "../../../src/tick/clock.js";

/**
 * A discrete-event clock that several concurrent tasks share: overlapping
 * tick invocations, producer drains, handlers that take virtual time, a
 * pull consumer.
 *
 * Virtual time moves only when the whole system is quiescent — every task
 * is blocked on a virtual {@link sleep}, no Redis request is in flight, no
 * microtask is pending — and then it jumps to the earliest wake-up and
 * releases that one sleeper (ties in the order the sleeps were asked for).
 * The released task runs until it blocks again, then the next is released.
 *
 * Quiescence is detected without looking at real time:
 *
 * - every `fetch` the code under test makes (the Upstash client calls the
 *   global `fetch` at call time, see src/queue/redis.ts and
 *   @upstash/redis' HttpClient.request) goes through {@link trackedFetch},
 *   installed as `globalThis.fetch` by {@link install}. It counts the
 *   request from the call until its body has been read in full (the body is
 *   buffered, so nothing reads the network after the count drops), and sends
 *   requests one at a time in call order, so the order in which Redis sees
 *   them follows the virtual schedule, not network timing;
 * - every call to `sleep` or `fetch` bumps an activity counter;
 * - {@link settle} yields real macrotask turns (`setTimeout(0)`; each runs
 *   only after the microtask queue is empty) until no request is in flight
 *   and {@link QUIET_TURNS} consecutive turns saw no activity. While a
 *   request is in flight it waits for the request itself, not for time.
 *
 * The clock never advances on its own: the driver ({@link run}) does, so a
 * test decides how far a scenario goes.
 */
export class SimClock implements Clock {
  /** Consecutive quiet macrotask turns that count as quiescent. */
  static readonly QUIET_TURNS = 2;
  /**
   * Wake-ups in a row at one virtual instant that mean a task spins (sleeps
   * 0 ms again and again, e.g. waiting for something only time can bring):
   * from then on, wake-ups at that instant reject with a {@link SpinError}
   * instead, so the spinning task ends instead of running forever.
   */
  static readonly SPIN_LIMIT = 200;

  private time: number;
  private seq = 0;
  private readonly sleepers: Sleeper[] = [];
  private inflight = 0;
  private activity = 0;
  private idleWaiters: Array<() => void> = [];
  private fetchChain: Promise<void> = Promise.resolve();
  private readonly tasks = new Map<number, { name: string; promise: Promise<unknown> }>();
  private taskSeq = 0;
  /** Errors thrown by spawned tasks, in order. */
  readonly errors: Array<{ task: string; error: unknown }> = [];
  /** How many times virtual time was advanced (sleepers released). */
  steps = 0;
  /** Real requests sent through {@link trackedFetch}. */
  requests = 0;
  /** Virtual instants at which a task spun (see {@link SPIN_LIMIT}), with the wake-ups refused. */
  readonly spins: Array<{ at: number; refused: number }> = [];
  private sameInstant = 0;

  constructor(start: number) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  /** Blocks the caller until virtual time reaches now + ms (0 and negative: the next step at the current time). */
  /**
   * Blocks the caller until virtual time reaches now + ms (0 and negative: the next step at the current time).
   * When `signal` aborts first, the sleep resolves at once and leaves the schedule: it never wakes, and moves no time.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (Number.isNaN(ms)) throw new RangeError("SimClock.sleep(NaN)");
    const at = this.time + Math.max(0, ms);
    this.activity++;
    if (signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = { at, seq: this.seq++, resolve, reject };
      heapPush(this.sleepers, sleeper);
      signal?.addEventListener("abort", () => {
        sleeper.cancelled = true;
        this.activity++;
        resolve();
      });
    });
  }

  /** Drops cancelled sleepers from the top of the schedule. */
  private dropCancelled(): void {
    while (this.sleepers[0]?.cancelled) heapPop(this.sleepers);
  }

  /** Sets virtual time (for subclasses that let a test move it by hand). */
  protected jump(t: number): void {
    this.time = t;
  }

  /** Virtual time of the earliest pending wake-up, or null when nothing sleeps. */
  nextWakeAt(): number | null {
    this.dropCancelled();
    return this.sleepers[0]?.at ?? null;
  }

  /** Sleepers waiting, and requests in flight (for diagnostics). */
  get pending(): { sleepers: number; inflight: number; tasks: string[] } {
    return { sleepers: this.sleepers.length, inflight: this.inflight, tasks: [...this.tasks.values()].map((t) => t.name) };
  }

  /** A fetch that counts the request until its body is read, and sends requests one at a time. */
  trackedFetch(inner: typeof fetch): typeof fetch {
    return (async (input: RequestInfo | URL, init?: RequestInit) => {
      this.inflight++;
      this.activity++;
      const previous = this.fetchChain;
      let done!: () => void;
      this.fetchChain = new Promise<void>((r) => (done = r));
      try {
        await previous;
        this.requests++;
        const res = await inner(input, init);
        const body = await res.arrayBuffer();
        return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
      } finally {
        done();
        this.inflight--;
        this.activity++;
        if (this.inflight === 0) for (const w of this.idleWaiters.splice(0)) w();
      }
    }) as typeof fetch;
  }

  /** Routes `globalThis.fetch` through {@link trackedFetch}; returns the function that restores it. */
  install(): () => void {
    const original = globalThis.fetch;
    globalThis.fetch = this.trackedFetch(original);
    return () => {
      globalThis.fetch = original;
    };
  }

  /**
   * Runs `work` as a task of the simulation: its error is recorded (not
   * thrown into the void), and {@link run} reports it if it never ends.
   */
  spawn<T>(name: string, work: () => Promise<T>): Promise<T | undefined> {
    const id = this.taskSeq++;
    this.activity++;
    const promise = (async () => {
      try {
        return await work();
      } catch (error) {
        this.errors.push({ task: name, error });
        return undefined;
      } finally {
        this.tasks.delete(id);
        this.activity++;
      }
    })();
    this.tasks.set(id, { name, promise });
    return promise;
  }

  /** Waits until the system is quiescent (see the class comment). */
  async settle(): Promise<void> {
    let quiet = 0;
    while (quiet < SimClock.QUIET_TURNS) {
      if (this.inflight > 0) {
        await new Promise<void>((r) => this.idleWaiters.push(r));
        quiet = 0;
        continue;
      }
      const before = this.activity;
      await macrotask();
      if (this.inflight === 0 && this.activity === before) quiet++;
      else quiet = 0;
    }
  }

  /**
   * Settles, then releases the earliest sleeper (moving time to its wake-up)
   * and settles again. Returns false when nothing sleeps (nothing can ever
   * happen again).
   */
  async step(): Promise<boolean> {
    await this.settle();
    this.dropCancelled();
    if (this.sleepers.length === 0) return false;
    this.release();
    await this.settle();
    return true;
  }

  /** Releases the earliest sleeper (the caller has settled and checked there is one). */
  private release(): void {
    const next = heapPop(this.sleepers)!;
    if (next.at > this.time) {
      this.time = next.at;
      this.sameInstant = 0;
    }
    this.steps++;
    this.activity++;
    if (++this.sameInstant > SimClock.SPIN_LIMIT) {
      const last = this.spins[this.spins.length - 1];
      if (last?.at === this.time) last.refused++;
      else this.spins.push({ at: this.time, refused: 1 });
      next.reject(new SpinError(this.time));
    } else next.resolve();
  }

  /**
   * Steps until `stop()` says so (checked while quiescent, before each step),
   * virtual time would pass `until`, or nothing sleeps. Returns why it ended.
   */
  async run(options: { until?: number; stop?: () => boolean } = {}): Promise<"stopped" | "until" | "idle"> {
    for (;;) {
      await this.settle();
      if (options.stop?.()) return "stopped";
      const next = this.nextWakeAt();
      if (next === null) return "idle";
      if (options.until !== undefined && next > options.until) {
        if (this.time < options.until) this.time = options.until;
        return "until";
      }
      this.release();
    }
  }

  /**
   * Lets every task end: moves time to `far` and releases every sleeper
   * (and every sleep asked for meanwhile) until none is left. Loops whose
   * windows passed return; what they do on the way is for the caller to
   * ignore. Returns the names of tasks still pending after that (a task that
   * waits for something other than the clock or a request: a bug).
   */
  async drainAll(far: number, maxSteps = 100_000): Promise<string[]> {
    if (far > this.time) {
      this.time = far;
      this.sameInstant = 0;
    }
    for (let i = 0; i < maxSteps; i++) {
      if (!(await this.step())) break;
    }
    await this.settle();
    return [...this.tasks.values()].map((t) => t.name);
  }
}

/**
 * A SimClock that drives itself: whenever a task sleeps, time moves on as
 * the system quiesces, so a test simply awaits the code under test (one
 * tick, one drain) as with a plain virtual clock, and chunks, handlers and
 * the loop that run side by side still see one consistent time. Install
 * its fetch tracking for the test ({@link SimClock.install}) and restore it after.
 */
export class DrivenClock extends SimClock {
  private driving = false;

  /** Moves time by hand (between runs of the code under test): forward or back. */
  set(t: number): void {
    this.jump(t);
  }

  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const p = super.sleep(ms, signal);
    this.drive();
    return p;
  }

  private drive(): void {
    if (this.driving) return;
    this.driving = true;
    void this.run().finally(() => {
      this.driving = false;
      if (this.nextWakeAt() !== null) this.drive();
    });
  }
}

interface Sleeper {
  cancelled?: boolean;
  at: number;
  seq: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** What a sleep rejects with once a task spins at one virtual instant (see SimClock.SPIN_LIMIT). */
class SpinError extends Error {
  override name = "SpinError";
  constructor(readonly at: number) {
    super(`SimClock: more than ${SimClock.SPIN_LIMIT} wake-ups in a row at one virtual instant (${at}): a task spins with 0 ms sleeps`);
  }
}

const macrotask = () => new Promise<void>((r) => setTimeout(r, 0));

const before = (a: Sleeper, b: Sleeper) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

function heapPush(h: Sleeper[], x: Sleeper): void {
  h.push(x);
  let i = h.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (!before(h[i]!, h[p]!)) break;
    [h[i], h[p]] = [h[p]!, h[i]!];
    i = p;
  }
}

function heapPop(h: Sleeper[]): Sleeper | undefined {
  if (h.length === 0) return undefined;
  const top = h[0]!;
  const last = h.pop()!;
  if (h.length > 0) {
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && before(h[l]!, h[m]!)) m = l;
      if (r < h.length && before(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
  return top;
}

/** A small deterministic PRNG (mulberry32), for Math.random during a run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
