import type { Api } from "../harness/api.js";
import { pool, sleep } from "../harness/util.js";
import type { Acked } from "./producer.js";
import type { ChaosReceiver } from "./receiver.js";

/**
 * Where every acknowledged job ended. Each id lands in exactly one of
 * deliveredOnce, redelivered, dead, scheduled or lost, so they add up to
 * `enqueued`; lost must be 0.
 */
export interface Accounting {
  enqueued: number;
  /** Succeeded, delivered (2xx at the receiver) exactly once. */
  deliveredOnce: number;
  /** Succeeded, delivered more than once: a fault struck between delivery and settling (at least once). */
  redelivered: number;
  /** Deliveries beyond the first of the redelivered jobs. */
  extraDeliveries: number;
  dead: number;
  /** Still scheduled or in flight (expected only for jobs due later than the run). */
  scheduled: number;
  /** Unknown to the API, cancelled, or succeeded without a delivery. */
  lost: number;
  lostIds: string[];
  /** Deliveries that arrived before the job was due. */
  early: number;
}

/**
 * Looks every acknowledged job up through the API and at the receiver; `views`
 * gets each job's state and attempts. Eight at a time, set when the stack ran
 * `wrangler dev`, whose plumbing reaped its sockets slowly, so thousands of
 * fast reads starved workerd; npm start's host has no such plumbing.
 */
export async function account(
  api: Api,
  receiver: ChaosReceiver,
  acked: Map<string, Acked>,
  views?: Map<string, { state: string; attempts: number }>,
): Promise<Accounting> {
  const a: Accounting = { enqueued: acked.size, deliveredOnce: 0, redelivered: 0, extraDeliveries: 0, dead: 0, scheduled: 0, lost: 0, lostIds: [], early: 0 };
  const lost = (id: string) => {
    a.lost++;
    if (a.lostIds.length < 10) a.lostIds.push(id);
  };
  const jobs = [...acked.values()];
  await pool(jobs.length, 8, async (i) => {
    const job = jobs[i]!;
    let r = await api.request("GET", `/v1/jobs/${job.id}`);
    // A read that meets a moment of overload is asked again; only a definite answer counts.
    for (let i = 0; i < 10 && r.status === 503; i++) {
      await sleep(1_000);
      r = await api.request("GET", `/v1/jobs/${job.id}`);
    }
    if (r.status === 200) views?.set(job.id, { state: r.body.state, attempts: r.body.attempts });
    for (const d of receiver.byId.get(job.id) ?? []) if (d.at < job.dueAt) a.early++;
    if (r.status === 404) return lost(job.id);
    if (r.status !== 200) throw new Error(`GET /v1/jobs/${job.id}: ${r.status}`);
    const state = r.body.state as string;
    const ok = receiver.okCount(job.id);
    if (state === "succeeded") {
      if (ok === 0) return lost(job.id);
      if (ok === 1) a.deliveredOnce++;
      else {
        a.redelivered++;
        a.extraDeliveries += ok - 1;
      }
    } else if (state === "dead") a.dead++;
    else if (state === "scheduled" || state === "inflight") a.scheduled++;
    else lost(job.id);
  });
  return a;
}

/**
 * Waits until each topic has at most its expected number of jobs left
 * scheduled or in flight (0 unless it holds jobs due after the run).
 */
export async function waitSettled(api: Api, remaining: Record<string, number>, timeoutMs: number): Promise<{ settled: boolean; ms: number }> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    let done = true;
    for (const [topic, left] of Object.entries(remaining)) {
      try {
        const t = await api.topic(topic);
        if (t.scheduled + t.inflight > left) done = false;
      } catch {
        done = false;
      }
      if (!done) break;
    }
    if (done) return { settled: true, ms: Date.now() - start };
    await sleep(1_000);
  }
  return { settled: false, ms: Date.now() - start };
}
