import { MAIN_SHARD, shardOfJobId } from "./ids.js";
import { placeTopic } from "./placement.js";
import type { EnqueueInput, EnqueueResult, Queue, UpsertInput, UpsertResult } from "./queue.js";
import { RedisTimeoutError, RedisUnavailableError } from "./errors.js";

/**
 * What a batch split over shards did: each job's result where its shard
 * stored it (by index in the batch), and each shard whose part failed, with
 * the indexes of its jobs and why. A part is one atomic call: all its jobs
 * or none (or, for an outcome unknown, the caller cannot tell which).
 */
export interface SplitBatch {
  results: Array<EnqueueResult | undefined>;
  failures: Array<{ shard: string; indexes: number[]; error: unknown }>;
}

/**
 * What a read across shards got: each answering shard's value (in the
 * order the settings list the shards), and the shards that did not answer
 * by the deadline or were down (also in that order).
 */
export interface ShardReads<T> {
  answers: Array<{ shard: string; value: T }>;
  missing: string[];
}

/**
 * A deployment's shards: a {@link Queue} per shard, where each topic lives
 * (placement, src/queue/placement.ts) and which shard a job id names
 * (src/queue/ids.ts). Every call about one topic or one job goes to one
 * shard; only {@link Shards.readEach} reads them all.
 */
export class Shards {
  private readonly byName: Map<string, Queue>;
  /** The shards' names, in the order the settings list them. */
  readonly names: string[];

  constructor(
    queues: ReadonlyArray<{ name: string; queue: Queue }>,
    private readonly pins: Readonly<Record<string, string>> = {},
  ) {
    this.byName = new Map(queues.map((q) => [q.name, q.queue]));
    this.names = queues.map((q) => q.name);
  }

  /** The shard `topic` lives on: its pin, else rendezvous hashing over the shards' names. */
  shardOf(topic: string): string {
    return placeTopic(topic, this.names, this.pins);
  }

  /** The queue of the shard `topic` lives on. */
  forTopic(topic: string): Queue {
    return this.byName.get(this.shardOf(topic))!;
  }

  /**
   * The queue of the shard a job id names, or null when it names a shard
   * these do not have. A malformed id gets `main`'s, which knows no such job
   * (as before there were shards).
   */
  forJobId(id: string): Queue | null {
    return this.byName.get(shardOfJobId(id) ?? MAIN_SHARD) ?? null;
  }

  /** The queue of a shard by name (`main` by default), or undefined for one these do not have. */
  queue(name: string = MAIN_SHARD): Queue | undefined {
    return this.byName.get(name);
  }

  /** Enqueues one job on its topic's shard. */
  enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    const name = this.shardOf(input.topic);
    return this.on(name, () => this.byName.get(name)!.enqueue(input));
  }

  /** Upserts one job on its topic's shard. */
  upsert(input: UpsertInput): Promise<UpsertResult> {
    const name = this.shardOf(input.topic);
    return this.on(name, () => this.byName.get(name)!.upsert(input));
  }

  /**
   * Enqueues a batch as one atomic call per shard its topics live on, the
   * calls at once. A part that fails fails alone: the others' jobs are
   * stored all the same, and the reply says which (see {@link SplitBatch}).
   */
  async enqueueBatch(inputs: EnqueueInput[]): Promise<SplitBatch> {
    const parts = new Map<string, number[]>();
    for (const [i, input] of inputs.entries()) {
      const name = this.shardOf(input.topic);
      const part = parts.get(name);
      if (part) part.push(i);
      else parts.set(name, [i]);
    }
    const split: SplitBatch = { results: new Array(inputs.length), failures: [] };
    await Promise.all(
      [...parts].map(async ([shard, indexes]) => {
        try {
          const stored = await this.on(shard, () => this.byName.get(shard)!.enqueueBatch(indexes.map((i) => inputs[i]!)));
          for (const [k, r] of stored.entries()) split.results[indexes[k]!] = r;
        } catch (error) {
          split.failures.push({ shard, indexes, error });
        }
      }),
    );
    split.failures.sort((a, b) => a.indexes[0]! - b.indexes[0]!);
    return split;
  }

  /**
   * Runs `read` on every shard at once and waits for each at most
   * `deadlineMs` (null: as long as its requests' own deadline): a shard that
   * is down (or at one of its limits) or slower than that is reported
   * missing, and the others' answers are used, so one shard cannot hold up
   * or fail a read of the deployment. An error that is not an outage (a
   * refused command) is thrown as it is. When no shard answers, the first
   * shard's error is thrown (the edge answers 503). `on` limits the read to
   * some shards (default all).
   */
  async readEach<T>(read: (queue: Queue, shard: string) => Promise<T>, deadlineMs: number | null, on: readonly string[] = this.names): Promise<ShardReads<T>> {
    const settled = await Promise.all(
      on.map(async (shard) => {
        const work = this.on(shard, () => read(this.byName.get(shard)!, shard));
        try {
          return { shard, value: deadlineMs === null ? await work : await withDeadline(work, deadlineMs, shard) };
        } catch (error) {
          if (!(error instanceof RedisUnavailableError)) throw error;
          return { shard, error };
        }
      }),
    );
    const answers = settled.flatMap((s) => ("value" in s ? [{ shard: s.shard, value: s.value as T }] : []));
    const failed = settled.flatMap((s) => ("error" in s ? [s] : []));
    if (answers.length === 0 && failed.length > 0) throw failed[0]!.error;
    return { answers, missing: failed.map((f) => f.shard) };
  }

  /**
   * Runs `work` on shard `name`; when there are several shards, an outage it
   * meets says which shard was down, so a 503 names it.
   */
  private async on<T>(name: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (e) {
      if (e instanceof RedisUnavailableError && this.names.length > 1) e.message = `shard "${name}": ${e.message}`;
      throw e;
    }
  }
}

/** `work`, or a {@link RedisTimeoutError} naming `shard` once `ms` pass first. */
async function withDeadline<T>(work: Promise<T>, ms: number, shard: string): Promise<T> {
  // A read given up on at the deadline may still fail later, with nobody left to hear it.
  work.catch(() => {});
  let timer!: ReturnType<typeof setTimeout>;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError(`shard "${shard}" did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
