/**
 * Load on the producer (autocannon on loopback) and the highest enqueue rate
 * the tick keeps up with.
 */
import type { Api } from "../harness/api.js";
import { autocannon } from "../harness/autocannon.js";
import { sleep } from "../harness/util.js";
import type { ChaosReceiver } from "./receiver.js";

export interface LoadResult {
  connections: number;
  durationSec: number;
  requests: number;
  ok: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  errorRate: number;
  requestsPerSec: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /**
   * Jobs the topic holds after the run minus before. At least the 201s
   * counted; more by at most one per connection, for requests still in
   * flight when autocannon stopped counting (the server finished them).
   */
  jobsStored: number;
  /** Twenty witness loops beside the load, a request each 250 ms after their last answer: what the non-2xx answers said. */
  witness: { sent: number; byStatus: Record<string, number>; samples: string[] };
}

/** `connections` keep-alive connections enqueueing as fast as they can for `durationSec`. */
export async function loadProducer(api: Api, token: string, connections: number, durationSec: number): Promise<LoadResult> {
  const topic = "load";
  const before = (await api.topic(topic)).scheduled;
  // autocannon counts statuses but keeps no bodies: a witness beside it keeps what the errors said.
  const witness = { sent: 0, byStatus: {} as Record<string, number>, samples: [] as string[] };
  let loading = true;
  const watching = Promise.all(
    Array.from({ length: 20 }, async () => {
      await sleep(2_000);
      while (loading) {
        witness.sent++;
        const a = await api
          .request("POST", "/v1/jobs", { topic, payload: { witness: true }, delay: "1h" })
          .catch((err: Error) => ({ status: 0, contentType: "", body: err.message }));
        witness.byStatus[a.status] = (witness.byStatus[a.status] ?? 0) + 1;
        if (a.status !== 201 && witness.samples.length < 5) witness.samples.push(`${a.status} ${a.contentType}: ${JSON.stringify(a.body).slice(0, 240)}`);
        await sleep(250);
      }
    }),
  );
  const r = await autocannon({
    url: `${api.url}/v1/jobs`,
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    // Due in an hour: this measures the producer; the tick has nothing to do.
    body: JSON.stringify({ topic, payload: { load: true }, delay: "1h" }),
    connections,
    duration: durationSec,
    timeout: 30,
  });
  loading = false;
  await watching;
  const after = (await api.topic(topic)).scheduled - (witness.byStatus["201"] ?? 0);
  const statusCodes: Record<string, number> = {};
  for (const [code, v] of Object.entries((r as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {}))
    statusCodes[code] = v.count;
  const requests = r["2xx"] + r.non2xx + r.errors;
  return {
    connections,
    durationSec,
    requests,
    ok: r["2xx"],
    non2xx: r.non2xx,
    statusCodes,
    errors: r.errors,
    timeouts: r.timeouts,
    errorRate: requests === 0 ? 0 : (r.non2xx + r.errors) / requests,
    requestsPerSec: Math.round(r.requests.average),
    latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    jobsStored: after - before,
    witness,
  };
}

export interface RateStep {
  rate: number;
  /** Enqueues acknowledged per second. */
  achieved: number;
  non2xx: number;
  /** Deliveries per second at the receiver during the step. */
  delivered: number;
  /** Due jobs not yet claimed, sampled each second. */
  backlog: number[];
  /** Growth of the backlog over the step's second half, jobs per second. */
  backlogSlope: number;
  keptUp: boolean;
  /** How long the backlog took to drain after the step. */
  drainMs: number;
}

function slope(values: number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const xs = values.map((_, i) => i);
  const mx = (n - 1) / 2;
  const my = values.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (values[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return num / den;
}

/**
 * Steps the enqueue rate up — each second one batch request of `rate` jobs
 * due at once (batches, so the producer is not what limits the rate), each
 * delivered over http to the receiver — and samples the backlog (due,
 * unclaimed) just before each next batch. The tick keeps up while the
 * backlog does not grow: its trend is under 5 % of the rate per second, and
 * what is left when the step ends is gone within 5 s.
 */
export async function maxSustainedRate(
  api: Api,
  receiver: ChaosReceiver,
  rates: number[],
  stepSec: number,
  log: (l: string) => void,
): Promise<{ steps: RateStep[]; maxSustained: number }> {
  const steps: RateStep[] = [];
  let maxSustained = 0;
  for (const rate of rates) {
    const topic = `rate-${rate}`;
    await api.configureTopic(topic, { url: `${receiver.url}/${topic}`, timeoutMs: 10_000 });
    const backlog: number[] = [];
    const since = Date.now();
    let acked = 0;
    let failed = 0;
    const sends: Array<Promise<void>> = [];
    for (let sec = 0; sec < stepSec; sec++) {
      const at = since + sec * 1_000;
      await sleep(Math.max(0, at - Date.now()));
      for (let i = 0; i < rate; i += 1_000) {
        const jobs = Array.from({ length: Math.min(1_000, rate - i) }, (_, j) => ({ topic, payload: { sec, j } }));
        sends.push(
          api.request("POST", "/v1/jobs/batch", { jobs }).then(
            (r) => {
              if (r.status === 201) acked += jobs.length;
              else failed++;
            },
            () => void failed++,
          ),
        );
      }
      // Just before the next batch: what is left of this second's.
      await sleep(Math.max(0, at + 900 - Date.now()));
      backlog.push((await api.topic(topic)).ready);
    }
    await Promise.all(sends);
    const elapsed = (Date.now() - since) / 1_000;
    const delivered = receiver.countSince(since) / elapsed;
    const s = slope(backlog);
    const drainStart = Date.now();
    for (let i = 0; i < 3_000; i++) {
      const t = await api.topic(topic);
      if (t.ready + t.inflight === 0) break;
      await sleep(100);
    }
    // Kept up: the backlog did not trend up, and what was left at the end went within a few seconds.
    const keptUp = s < rate * 0.05 && Date.now() - drainStart < 5_000 && failed === 0;
    const step = {
      rate,
      achieved: Math.round(acked / stepSec),
      non2xx: failed,
      delivered: Math.round(delivered),
      backlog,
      backlogSlope: Math.round(s * 10) / 10,
      keptUp,
      drainMs: Date.now() - drainStart,
    };
    steps.push(step);
    log(`  ${rate}/s: enqueued ${step.achieved}/s, delivered ${step.delivered}/s, backlog ${backlog.join(" ")}, ${keptUp ? "kept up" : "fell behind"}`);
    if (keptUp) maxSustained = Math.max(maxSustained, step.achieved);
    else break;
  }
  return { steps, maxSustained };
}
