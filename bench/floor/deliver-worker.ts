/**
 * The floor of http delivery from a Worker: nothing but the outbound calls.
 * `POST /deliver` with `{ url, n, concurrency, body, request? }` makes `n`
 * POSTs of `body` (JSON) to `url` with at most `concurrency` in flight, reads
 * each response's body (so workerd keeps the connection for the next one) and
 * answers how many came back 2xx. No Redis and no bookkeeping: what a
 * delivery costs any Worker, against which the tick's is measured.
 *
 * `request`:
 * - `plain` (the default): one Content-Type header, the same body every time.
 * - `delayline`: the request a delayline delivery must send, made as cheaply
 *   as a Worker can: the body serialized from its object, delayline's five
 *   headers and a Delayline-Signature (delayline's own signer, its key
 *   imported once), and an AbortSignal for its timeout. What is left between
 *   this and the tick is the pipeline's own work (claim, dispatch, settle).
 * - `dispatch`: delayline's own dispatch (src/tick/dispatch.ts: lanes, handler
 *   slots, the job's timeout, the bounded body read, an outcome per job) on
 *   jobs made in memory, in chunks of 1,000 as a claim returns them, the next
 *   chunk started once the last one's jobs have all started (as the tick
 *   claims at a chunk's tail). What is left between this and the tick is
 *   Redis: claim, settle and the scheduling round between them.
 */
import { deliverySigner } from "../../src/protocol/sign.js";
import type { ClaimedJob } from "../../src/queue/queue.js";
import { decodeTopicConf, DEFAULT_TOPIC_DEFAULTS } from "../../src/queue/topics.js";
import { Semaphore } from "../../src/tick/budget.js";
import { dispatchChunk } from "../../src/tick/dispatch.js";

interface DeliverRequest {
  url: string;
  n: number;
  concurrency: number;
  body: string;
  request?: "plain" | "delayline" | "dispatch";
}

/** The bench's deployment secret (bench/lib/deliver.ts), which the tick signs with. */
const SIGNING_SECRET = "bench-signing-secret-0123456789";

/** The i-th job of a run, with an id shaped as delayline's are. */
const jobId = (i: number) => `floor:01KBA0000000000000${String(i).padStart(8, "0")}`;

/** A request as a delayline delivery makes it: the i-th of the run. */
async function delaylineRequest(i: number, payload: unknown, sign: ReturnType<typeof deliverySigner>): Promise<RequestInit> {
  const id = jobId(i);
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = {
    "user-agent": "delayline",
    "delayline-job-id": id,
    "delayline-topic": "floor",
    "delayline-attempt": "1",
    ...(await sign({ id, body })),
    "content-type": "application/json",
  };
  return { method: "POST", headers, body, redirect: "manual", signal: new AbortController().signal };
}

/** Jobs a claim returns at most (TICK_CHUNK in the bench's tick). */
const CHUNK = 1_000;

/** `n` deliveries of `payload` to `url` through delayline's dispatch, `concurrency` at once; how many were acked. */
async function dispatchRun(url: string, n: number, concurrency: number, payload: unknown): Promise<number> {
  // The topic as the tick reads it: its url, a concurrency above a chunk (as the bench's topic), the rest default.
  const { settings } = decodeTopicConf({ url, concurrency: String(CHUNK) }, DEFAULT_TOPIC_DEFAULTS);
  const overall = new Semaphore(concurrency);
  const running: Array<Promise<unknown>> = [];
  let acked = 0;
  const chunk = (from: number) => {
    const now = Date.now();
    const jobs: ClaimedJob[] = [];
    for (let i = from; i < Math.min(n, from + CHUNK); i++) {
      jobs.push({ id: jobId(i), topic: "floor", attempt: 1, dueAt: now, leaseExpiresAt: now + 60_000, record: { payload, createdAt: now } });
    }
    let started = 0;
    running.push(
      dispatchChunk(jobs, {
        // No code handler: the http handler delivers, as for a topic with a url.
        handler: undefined,
        settings,
        secrets: {},
        deploymentSigningSecret: SIGNING_SECRET,
        allowPrivateTargets: true,
        // Called as the tick's counting fetch calls it, through a function of its own.
        fetch: (input, init) => fetch(input, init),
        overall,
        now: Date.now,
        onStart: () => {
          if (++started === jobs.length && from + CHUNK < n) chunk(from + CHUNK);
        },
        onOutcome: (o) => {
          if (o.kind === "ack") acked++;
        },
      }),
    );
  };
  chunk(0);
  for (let i = 0; i < running.length; i++) await running[i];
  return acked;
}

export default {
  async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname !== "/deliver") return new Response("not found", { status: 404 });
    const { url, n, concurrency, body, request: shape = "plain" } = (await request.json()) as DeliverRequest;
    const payload: unknown = JSON.parse(body);
    if (shape === "dispatch") {
      const acked = await dispatchRun(url, n, concurrency, payload);
      return Response.json({ ok: acked, failed: n - acked });
    }
    const sign = deliverySigner("delayline", [SIGNING_SECRET]);
    let next = 0;
    let ok = 0;
    let failed = 0;
    const lane = async () => {
      while (next < n) {
        const i = next++;
        try {
          const init = shape === "plain" ? { method: "POST", headers: { "content-type": "application/json" }, body } : await delaylineRequest(i, payload, sign);
          const res = await fetch(url, init);
          await res.arrayBuffer();
          if (res.ok) ok++;
          else failed++;
        } catch {
          failed++;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(n, concurrency) }, lane));
    return Response.json({ ok, failed });
  },
} satisfies ExportedHandler;
