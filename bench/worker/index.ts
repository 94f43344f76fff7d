/**
 * The Worker the benchmarks run: the library as app/worker.ts uses it, plus two
 * bench-only code handlers and a route that reads what they saw. Kept out of
 * src/ and app/worker.ts so this repository's deployment never carries a bench topic.
 *
 * - `bench-noop`: does nothing (the backlog drain measures the pipeline, not a handler).
 * - `bench-lateness`: notes when it ran, by the Worker's clock, for lateness.
 *
 * `GET /__bench/samples` (with the API token) returns how many jobs were
 * handled and when the latest one was, and returns and forgets the lateness
 * samples noted since the last call.
 */
import { delayline, type Env } from "../../src/index.js";

let handled = 0;
// When the latest job was handled, by the Worker's clock: a drain's end without
// polling the Worker while it is busy.
let lastAt = 0;
// [job id, due ms, ran at ms]
let samples: Array<[string, number, number]> = [];

const worker = delayline({
  handlers: {
    "bench-noop": () => {
      handled++;
      lastAt = Date.now();
    },
    "bench-lateness": async (job) => {
      // workerd's clock moves only at I/O; a zero timer lets it catch up, so the
      // time noted is when the handler ran, not when the claim's reply arrived.
      await new Promise((r) => setTimeout(r, 0));
      samples.push([job.id, job.dueAt, Date.now()]);
      handled++;
    },
  },
});

export const TickChunk = worker.TickChunk;
export const TickAlarm = worker.TickAlarm;

export default {
  ...worker,
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/samples") {
      const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
      if (!token || !(env.DELAYLINE_TOKEN ?? "").split(",").includes(token)) return new Response("unauthorized", { status: 401 });
      const body = JSON.stringify({ handled, lastAt, samples });
      samples = [];
      return new Response(body, { headers: { "content-type": "application/json" } });
    }
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
