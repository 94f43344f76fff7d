/**
 * BullMQ as the benchmarks run it: default options, a Worker with
 * concurrency 50, and `removeOnComplete`, over TCP to the bench's Redis.
 */
import { Queue, Worker, type Job, type Processor } from "bullmq";

const BULL_QUEUE = "bench";

export interface BullSystem {
  queue: Queue;
  /** Due time (`timestamp + delay` at add) of every job added through {@link addDue}, by id. */
  due: Map<string, number>;
  /** Adds one job due at `due` (delay computed now). */
  add(due: number, payload: unknown, opts?: { attempts?: number; backoffMs?: number }): Promise<void>;
  /** Adds jobs in one addBulk, each due at its `due`. */
  addBulk(jobs: Array<{ due: number; payload: unknown }>, opts?: { attempts?: number; backoffMs?: number }): Promise<void>;
  /** Starts a Worker; `completed` and `failed` count its events. */
  work(processor: Processor): BullWorker;
  close(): Promise<void>;
}

interface BullWorker {
  worker: Worker;
  readonly completed: number;
  /** Every failed attempt (BullMQ emits `failed` for retried attempts too). */
  readonly failed: number;
  close(): Promise<void>;
}

/** BullMQ over TCP to `port`; `name` is the BullMQ queue (default {@link BULL_QUEUE}). */
export async function bull(port: number, name = BULL_QUEUE): Promise<BullSystem> {
  const connection = { host: "127.0.0.1", port };
  const queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } });
  await queue.waitUntilReady();
  const due = new Map<string, number>();
  const note = (job: Job) => due.set(job.id!, job.timestamp + (job.opts.delay ?? 0));
  const jobOpts = (at: number, opts?: { attempts?: number; backoffMs?: number }) => ({
    delay: Math.max(1, at - Date.now()),
    ...(opts?.attempts !== undefined ? { attempts: opts.attempts } : {}),
    ...(opts?.backoffMs !== undefined ? { backoff: { type: "fixed", delay: opts.backoffMs } } : {}),
  });
  const workers = new Set<BullWorker>();
  return {
    queue,
    due,
    async add(at, data, opts) {
      note(await queue.add("job", data, jobOpts(at, opts)));
    },
    async addBulk(jobs, opts) {
      for (const job of await queue.addBulk(jobs.map((j) => ({ name: "job", data: j.payload, opts: jobOpts(j.due, opts) })))) note(job);
    },
    work(processor) {
      const worker = new Worker(name, processor, { connection, concurrency: 50 });
      let completed = 0;
      let failed = 0;
      worker.on("completed", () => completed++);
      worker.on("failed", () => failed++);
      // A worker's connection errors are retried by BullMQ; without a listener they would crash the bench.
      worker.on("error", () => {});
      const w: BullWorker = {
        worker,
        get completed() {
          return completed;
        },
        get failed() {
          return failed;
        },
        async close() {
          workers.delete(w);
          await worker.close();
        },
      };
      workers.add(w);
      return w;
    },
    async close() {
      for (const w of [...workers]) await w.close();
      await queue.close();
    },
  };
}
