/**
 * Traffic for the shards benchmark through the bench Worker's API: producers
 * that enqueue one job per call (`POST /v1/jobs`, no idempotency key, as a
 * plain producer does: the steady-traffic enqueue), every answer noted; and a
 * collector of what the Worker's handlers noted (bench/worker/index.ts), so
 * a run can tell every job acknowledged from every delivery, with its attempt.
 */
import { shardOfJobId } from "../../src/queue/ids.js";
import { sleep } from "../../harness/util.js";
import type { Stack } from "./delayline.js";
import { payload } from "./infra.js";

/** One answer to an enqueue: when it was sent and came, the topic, the status (0: no answer), and the job's id and due time when stored. */
export interface EnqueueAnswer {
  sentAt: number;
  at: number;
  topic: string;
  status: number;
  id?: string;
  dueAt?: number;
}

/** One delivery a handler noted. */
export interface Delivery {
  id: string;
  shard: string;
  dueAt: number;
  at: number;
  attempt: number;
}

/** How long a producer waits after an answer that stored nothing before its next call (a shard that is down answers at once). */
const BACKOFF_MS = 200;

/** A POST /v1/jobs, noted whatever comes back. */
export async function enqueueOne(stack: Stack, token: string, topic: string, delayMs: number, i: number): Promise<EnqueueAnswer> {
  const sentAt = Date.now();
  try {
    const res = await fetch(`${stack.url}/v1/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ topic, payload: payload(i), delay: delayMs }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json().catch(() => ({}))) as { id?: string; dueAt?: string };
    const stored = res.status === 201 && typeof body.id === "string";
    return { sentAt, at: Date.now(), topic, status: res.status, ...(stored ? { id: body.id!, dueAt: Date.parse(body.dueAt!) } : {}) };
  } catch {
    return { sentAt, at: Date.now(), topic, status: 0 };
  }
}

/**
 * `perTopic` producers on each of `topics`, each one job per call, the next
 * as soon as the answer came (after one that stored nothing, {@link BACKOFF_MS} later):
 * a closed loop, so a shard whose database holds the calls back gets as
 * many as it admits and no queue builds up beyond the producers.
 */
export function produce(stack: Stack, token: string, topics: string[], perTopic: number, delayMs: number) {
  const answers: EnqueueAnswer[] = [];
  let stopping = false;
  let i = 0;
  const loops = topics.flatMap((topic) =>
    Array.from({ length: perTopic }, async () => {
      while (!stopping) {
        const a = await enqueueOne(stack, token, topic, delayMs, i++);
        answers.push(a);
        if (a.id === undefined) await sleep(BACKOFF_MS);
      }
    }),
  );
  return {
    answers,
    /** Stops the producers once their calls in flight are answered. */
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** Reads the Worker's samples every `everyMs` into one list of deliveries, and the wake alarm's Durable Object requests. */
export function collect(stack: Stack, everyMs = 500) {
  const deliveries: Delivery[] = [];
  let durableObjectRequests: Record<string, number> = {};
  let stopped = false;
  const read = async () => {
    const s = await stack.samples();
    durableObjectRequests = s.durableObjectRequests;
    for (const [id, dueAt, at, attempt] of s.samples) deliveries.push({ id, shard: shardOfJobId(id) ?? "?", dueAt, at, attempt });
  };
  const loop = (async () => {
    while (!stopped) {
      await sleep(everyMs);
      // A busy Worker may answer late; the samples stay in it until read.
      await read().catch(() => {});
    }
  })();
  return {
    deliveries,
    durableObjectRequests: () => durableObjectRequests,
    /** Reads once more now. */
    read,
    async stop() {
      stopped = true;
      await loop;
      await read().catch(() => {});
    },
  };
}

/** Forgets what the Worker noted before now (earlier runs on the same stack). */
export async function forgetSamples(stack: Stack): Promise<Record<string, number>> {
  return (await stack.samples()).durableObjectRequests;
}
