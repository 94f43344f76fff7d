import { Semaphore, type SubrequestBudget } from "./budget.js";
import type { Clock } from "./clock.js";
import { RoomCount } from "./room-count.js";
import { RootSigning } from "./root-signing.js";
import { startChunk, type ChunkOptions, type ChunkReport, type StartedChunk } from "./run-chunk.js";
import type { Log } from "./settle.js";

/** A chunk that ended: its report, or the error it ended with (null report). */
export interface EndedChunk {
  topic: string;
  where: "here" | "fanned";
  /** When it was started. */
  startedAt: number;
  report: ChunkReport | null;
  error?: unknown;
}

/** Options of {@link ChunksInFlight}: its invocation's deployment (queue, settings, code handlers), and: */
export interface InFlightOptions extends Pick<ChunkOptions, "queue" | "settings" | "handlers"> {
  clock: Clock;
  /** The invocation's budget: chunks run here take reservations of it. */
  budget: SubrequestBudget;
  /** Outbound fetch for the http handler (uncounted: each chunk counts its own). */
  fetch: typeof fetch;
  /** TICK_CONCURRENCY, shared by every chunk of the invocation. */
  overall: Semaphore;
  log: Log;
  /** Runs a chunk in an invocation of its own; its one subrequest is counted by the caller. */
  fanOut?: (topic: string, max: number) => Promise<ChunkReport>;
}

/**
 * The chunks one invocation (a tick loop or a drain) has running. A chunk
 * here is awaited only until its claim is back; its handlers and settle go
 * on while the caller polls and claims again, so a slow handler holds back
 * no job but its own. What may start beside running chunks is bounded so a
 * claimed job waits for a handler slot at most until the handlers running
 * when it was claimed end: a topic with chunks running here gets only as
 * many jobs as it has free slots, and the invocation as many as
 * TICK_CONCURRENCY leaves free, where a chunk in its tail (src/tick/chunk-tail.ts)
 * no longer counts when chunks are not fanned out. So a backlog's next chunk is claimed while the
 * last one's final handlers run, not after them. A topic gets no second
 * fanned-out chunk while one is out.
 */
export class ChunksInFlight {
  private readonly byTopic = new Map<string, { here: number; fanned: number; jobs: number; slots: number; sem?: Semaphore }>();
  private readonly running = new Set<Promise<void>>();
  private ended: EndedChunk[] = [];
  private looks: number[] = [];
  private readonly topicLooks = new Map<string, number>();
  /** Derived topics' chunks sign as their roots: each root read once while this runs. */
  private readonly rootSigning = new RootSigning();
  private waiters: Array<() => void> = [];
  private jobsHere = 0;

  constructor(private readonly o: InFlightOptions) {}

  /** Chunks can be fanned out (TICK_FANOUT > 0 and a way to). */
  private get fanning(): boolean {
    return this.o.fanOut !== undefined && this.o.settings.tickFanout > 0;
  }

  /** Nothing is running. */
  get idle(): boolean {
    return this.running.size === 0;
  }

  /** Whether `topic` has a chunk running here or fanned out. */
  busy(topic: string): { here: boolean; fanned: boolean } {
    const t = this.byTopic.get(topic);
    return { here: (t?.here ?? 0) > 0, fanned: (t?.fanned ?? 0) > 0 };
  }

  /** Handler slots TICK_CONCURRENCY leaves beside the jobs running here (unbounded while none run). */
  get freeSlots(): number {
    return this.jobsHere > 0 ? Math.max(0, this.o.overall.size - this.jobsHere) : Infinity;
  }

  /**
   * Most jobs a new chunk of `topic` may claim here beside what runs: `max`
   * while nothing of it runs here but chunks in their tail, else bounded by
   * the topic's free slots and the handler slots TICK_CONCURRENCY leaves.
   */
  room(topic: string, max: number): number {
    const t = this.byTopic.get(topic);
    let room = max;
    // Chunks in their tail count for nothing: the topic's shared slots make the next chunk's jobs wait for theirs.
    if (t && t.here > 0 && t.jobs > 0) room = Math.min(room, t.slots - t.jobs);
    return Math.max(0, Math.min(room, this.freeSlots));
  }

  /**
   * Claims a chunk of `topic` here with a reservation of `reserve`
   * subrequests (its claim, settle and deliveries), and resolves once the
   * claim is back; delivery and settle run on and end up in {@link takeEnded}.
   */
  async startHere(topic: string, max: number, reserve: number, leadMs?: number): Promise<StartedChunk> {
    const startedAt = this.o.clock.now();
    // One more settle, at the chunk's tail, where the next chunk is claimed beside it (no fan-out).
    const tailSettle = this.fanning ? 0 : 1;
    const budget = this.o.budget.reserve(reserve + tailSettle);
    const count = new RoomCount();
    let started: StartedChunk;
    try {
      started = await startChunk({
        queue: this.o.queue,
        settings: this.o.settings,
        handlers: this.o.handlers,
        topic,
        max,
        ...(leadMs !== undefined ? { leadMs } : {}),
        clock: this.o.clock,
        budget,
        fetch: this.o.fetch,
        overall: this.o.overall,
        log: this.o.log,
        rootSigning: this.rootSigning,
        ...this.hooksOf(topic, count),
      });
    } catch (err) {
      budget.release();
      throw err;
    }
    if (started.claimed === 0) {
      budget.release();
      return started;
    }
    // A delivery a job and a settle (and the tail's): the rest of the reservation goes back.
    budget.keep(started.claimed + 1 + tailSettle);
    const entry = this.entry(topic);
    entry.here++;
    entry.slots = started.slots;
    count.claimed(started.claimed, (jobs) => {
      entry.jobs += jobs;
      this.jobsHere += jobs;
    });
    this.track(
      started.done.finally(() => {
        budget.release();
        entry.here--;
        count.ended();
      }),
      topic,
      "here",
      startedAt,
    );
    return started;
  }

  /** What a chunk of `topic` run here shares with this tracker: its topic's handler slots, and what it settled early or its tail freed. */
  private hooksOf(topic: string, count: RoomCount): Required<Pick<ChunkOptions, "topicSlots" | "onEarlySettle" | "onTail">> {
    return {
      // One semaphore for the topic's chunks here, so a chunk claimed at another's tail shares its slots.
      topicSlots: (size) => {
        const e = this.entry(topic);
        if (!e.sem || (e.sem.size !== size && e.sem.idle)) e.sem = new Semaphore(size);
        return e.sem;
      },
      onEarlySettle: (jobs, retryTimes) => {
        count.settled(jobs);
        // Be back now (a freed slot) and at each retry.
        this.looks.push(this.o.clock.now(), ...retryTimes);
        this.noteLook(topic, this.o.clock.now());
        this.wakeWaiters();
      },
      onTail: (backlog) => {
        // With chunks fanned out, a backlog goes to invocations of their own once this chunk is back, not beside it here.
        if (this.fanning) return false;
        count.tail();
        // A topic with more ready claims it now, to start as these handlers end. Otherwise the next poll will do.
        if (backlog) {
          this.looks.push(this.o.clock.now());
          this.wakeWaiters();
        }
        return backlog;
      },
    };
  }

  /** Runs a chunk of `topic` in an invocation of its own; it ends up in {@link takeEnded}. */
  startFanned(topic: string, max: number): void {
    const fanOut = this.o.fanOut;
    if (!fanOut) throw new Error("no fan-out configured");
    const t = this.entry(topic);
    t.fanned++;
    this.track(
      fanOut(topic, max).finally(() => {
        t.fanned--;
      }),
      topic,
      "fanned",
      this.o.clock.now(),
    );
  }

  /** The chunks that ended since the last call. */
  takeEnded(): EndedChunk[] {
    const out = this.ended;
    this.ended = [];
    return out;
  }

  /** When each topic's chunks asked to be back as they ended or settled early, since the last call (see src/tick/late-chunks.ts). */
  takeTopicLooks(): Map<string, number> {
    const out = new Map(this.topicLooks);
    this.topicLooks.clear();
    return out;
  }

  private noteLook(topic: string, at: number | null): void {
    if (at !== null) this.topicLooks.set(topic, Math.min(this.topicLooks.get(topic) ?? Infinity, at));
  }

  /** When to be back for what running chunks settled early (freed slots, retries), since the last call. */
  takeLooks(): number[] {
    return this.looks.splice(0);
  }

  /** Resolves when a chunk has ended, or settled part of itself early, that the take* calls have not returned yet (at once if one has). */
  whenOneEnds(): Promise<void> {
    if (this.ended.length > 0 || this.looks.length > 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Sleeps `ms` (rounded up to whole ms, as Date.now() counts), or less if a chunk ends first. */
  async sleep(ms: number): Promise<void> {
    // Paces and stretched polls are fractions of a ms; a clock that took them as they are would
    // move to instants Date.now() never shows, and a retry time computed there would be rounded.
    ms = Math.ceil(ms);
    if (this.running.size === 0) return this.o.clock.sleep(ms);
    const stop = new AbortController();
    await Promise.race([this.o.clock.sleep(ms, stop.signal), this.whenOneEnds()]);
    stop.abort();
  }

  /** Waits for every running chunk to end. */
  async allEnded(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private wakeWaiters(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private entry(topic: string) {
    let t = this.byTopic.get(topic);
    if (!t) {
      t = { here: 0, fanned: 0, jobs: 0, slots: 1 };
      this.byTopic.set(topic, t);
    }
    return t;
  }

  private track(work: Promise<ChunkReport>, topic: string, where: EndedChunk["where"], startedAt: number): void {
    const p: Promise<void> = work.then(
      (report) => {
        this.ended.push({ topic, where, startedAt, report });
        this.noteLook(topic, report.nextLookAt ?? null);
      },
      (error: unknown) => {
        this.ended.push({ topic, where, startedAt, report: null, error });
      },
    );
    const tracked = p.finally(() => {
      this.running.delete(tracked);
      this.wakeWaiters();
    });
    this.running.add(tracked);
  }
}
