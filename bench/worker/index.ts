/**
 * The Worker the benchmarks run: the library as app/worker.ts uses it, plus
 * bench-only code handlers and a route that reads what they saw. Kept out of
 * src/ and app/worker.ts so this repository's deployment never carries a bench topic.
 *
 * - `bench-noop`: does nothing (the backlog drain measures the pipeline, not a handler).
 * - `bench-lateness` and the shards benchmark's topics (`bench-shard-NN`,
 *   ./shard-topics.ts): note when they ran, by the Worker's clock, and the attempt.
 *
 * `GET /__bench/samples` (with the API token) returns how many jobs were
 * handled and when the latest one was, the Durable Object requests the wake
 * alarm received so far per key prefix (each arm and each alarm is one), and
 * returns and forgets the samples noted since the last call.
 */
import { delayline, type Env, type JobContext } from "../../src/index.js";
import { SHARD_BENCH_TOPICS } from "./shard-topics.js";

let handled = 0;
// When the latest job was handled, by the Worker's clock: a drain's end without
// polling the Worker while it is busy.
let lastAt = 0;
// [job id, due ms, ran at ms, attempt]
let samples: Array<[string, number, number, number]> = [];
// Durable Object requests the wake alarm received, by the prefix it wakes: nothing outside the Worker sees them.
const durableObjectRequests: Record<string, number> = {};

const noteLateness = async (job: JobContext) => {
  // workerd's clock moves only at I/O; a zero timer lets it catch up, so the
  // time noted is when the handler ran, not when the claim's reply arrived.
  await new Promise((r) => setTimeout(r, 0));
  samples.push([job.id, job.dueAt, Date.now(), job.attempt]);
  handled++;
};

const worker = delayline({
  handlers: {
    "bench-noop": () => {
      handled++;
      lastAt = Date.now();
    },
    "bench-lateness": noteLateness,
    ...Object.fromEntries(SHARD_BENCH_TOPICS.map((topic) => [topic, noteLateness])),
  },
});

const countRequest = (prefix: string | undefined) => {
  const key = prefix ?? "?";
  durableObjectRequests[key] = (durableObjectRequests[key] ?? 0) + 1;
};

/** The library's wake alarm, counting the requests it receives (its Durable Object runs in this isolate locally). */
export class TickAlarm extends worker.TickAlarm {
  override async arm(at: number, prefix: string): Promise<void> {
    countRequest(prefix);
    return super.arm(at, prefix);
  }

  override async alarm(): Promise<void> {
    countRequest(await this.ctx.storage.get<string>("prefix"));
    return super.alarm();
  }
}

export const TickChunk = worker.TickChunk;

export default {
  ...worker,
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/samples") {
      const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
      if (!token || !(env.DELAYLINE_TOKEN ?? "").split(",").includes(token)) return new Response("unauthorized", { status: 401 });
      const body = JSON.stringify({ handled, lastAt, durableObjectRequests, samples });
      samples = [];
      return new Response(body, { headers: { "content-type": "application/json" } });
    }
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
