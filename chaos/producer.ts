import type { Answer, Api } from "../harness/api.js";
import { sleep } from "../harness/util.js";

/** Every answer producers got, for the report: what came back, and when. */
export class Answers {
  readonly byStatus: Record<string, number> = {};
  readonly timeline: Array<{ sentAt: number; at: number; status: number | "network" }> = [];
  /**
   * 503s from wrangler dev's own proxy ("Your worker restarted mid-request"),
   * not from the Worker: local plumbing that production does not have. The
   * Worker may have run the request; the retry's idempotency key tells.
   * npm start's host (miniflare, no proxy) has no such answer, so under it
   * this stays 0.
   */
  localProxy503 = 0;
  /** Error answers that were not application/problem+json. */
  notProblemJson = 0;
  /** A few of them, as they came. */
  readonly notProblemSamples: Array<{ status: number; contentType: string; body: string }> = [];
  /** Jobs whose first try failed (503 or no answer) yet a retry found them stored: the failure was after the write. */
  storedDespiteFailure = 0;
  retries = 0;

  /** Counts an answer; returns its status as counted (a local proxy's 503 counts as no answer from the Worker). */
  record(sentAt: number, status: number | "network", contentType = "", body: unknown = ""): number | "network" {
    if (status === 503 && typeof body === "string" && body.startsWith("Your worker restarted mid-request")) {
      this.localProxy503++;
      status = "network";
    }
    this.byStatus[status] = (this.byStatus[status] ?? 0) + 1;
    this.timeline.push({ sentAt, at: Date.now(), status });
    if (typeof status === "number" && status >= 400 && contentType !== "application/problem+json") {
      this.notProblemJson++;
      if (this.notProblemSamples.length < 3) this.notProblemSamples.push({ status, contentType, body: JSON.stringify(body).slice(0, 300) });
    }
    return status;
  }

  /** Answers per second (by when they came) from `from` (second 0) to `to`, as "status×count" lists. */
  perSecond(from: number, to: number): string[] {
    const out: string[] = [];
    for (let s = from; s < to; s += 1_000) {
      const counts: Record<string, number> = {};
      for (const t of this.timeline) if (t.at >= s && t.at < s + 1_000) counts[t.status] = (counts[t.status] ?? 0) + 1;
      out.push(
        Object.entries(counts)
          .map(([k, v]) => `${k}×${v}`)
          .join(" ") || "-",
      );
    }
    return out;
  }

  /** Status counts of requests sent at or after `from` and answered before `to`. */
  between(from: number, to: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const t of this.timeline) if (t.sentAt >= from && t.at < to) out[t.status] = (out[t.status] ?? 0) + 1;
    return out;
  }
}

export interface Acked {
  id: string;
  dueAt: number;
}

/**
 * How long a careful client waits before its `attempt`-th retry: at least
 * the answer's Retry-After, and an exponential backoff with jitter (250 ms
 * doubling to 4 s, each wait drawn from its upper half). Retrying every few
 * hundred milliseconds instead turns an outage of ten seconds into a storm
 * of thousands of requests a second once it ends.
 */
function retryDelayMs(attempt: number, answer: Answer | null): number {
  const base = Math.min(4_000, 250 * 2 ** (attempt - 1));
  return Math.max(answer?.retryAfterMs ?? 0, base / 2 + (Math.random() * base) / 2);
}

/**
 * Enqueues one job until it is acknowledged (201, or 200 for a repeat of its
 * Idempotency-Key), trying again after 503s and lost answers with the same
 * key and a backoff, as a careful client does. Anything else (a 4xx or 5xx
 * other than 503) is counted and ends the tries.
 */
export async function enqueueUntilAcked(api: Api, job: Record<string, unknown>, key: string, answers: Answers, giveUpAt: number): Promise<Acked | null> {
  let failedBefore = false;
  for (let attempt = 1; Date.now() < giveUpAt; attempt++) {
    let r: Answer;
    const sentAt = Date.now();
    try {
      r = await api.request("POST", "/v1/jobs", job, { "idempotency-key": key });
    } catch {
      answers.record(sentAt, "network");
      failedBefore = true;
      answers.retries++;
      await sleep(retryDelayMs(attempt, null));
      continue;
    }
    const counted = answers.record(sentAt, r.status, r.contentType, r.body);
    if (r.status === 201 || r.status === 200) {
      if (r.status === 200 && failedBefore) answers.storedDespiteFailure++;
      // A repeat found in flight or finished has no due time to report: its early check is skipped.
      return { id: r.body.id, dueAt: r.body.dueAt === null ? Number.NaN : Date.parse(r.body.dueAt) };
    }
    if (counted !== 503 && counted !== "network") return null;
    failedBefore = true;
    answers.retries++;
    await sleep(retryDelayMs(attempt, r));
  }
  return null;
}

/**
 * Enqueues `ratePerSec` jobs a second for `durationMs`, each until
 * acknowledged; resolves with every acknowledged job once all have been
 * (or `settleMs` after the last was started).
 */
export async function produce(
  api: Api,
  options: { ratePerSec: number; durationMs: number; job: (i: number) => Record<string, unknown>; answers: Answers; keyPrefix: string; settleMs?: number },
): Promise<{ acked: Map<string, Acked>; unacked: number }> {
  const acked = new Map<string, Acked>();
  const pending: Array<Promise<void>> = [];
  const start = Date.now();
  const total = Math.round((options.ratePerSec * options.durationMs) / 1000);
  let unacked = 0;
  const giveUpAt = start + options.durationMs + (options.settleMs ?? 60_000);
  for (let i = 0; i < total; i++) {
    const at = start + (i * 1000) / options.ratePerSec;
    const wait = at - Date.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      enqueueUntilAcked(api, options.job(i), `${options.keyPrefix}-${i}`, options.answers, giveUpAt).then((a) => {
        if (a) acked.set(a.id, a);
        else unacked++;
      }),
    );
  }
  await Promise.all(pending);
  return { acked, unacked };
}
