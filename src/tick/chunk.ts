import { WorkerEntrypoint } from "cloudflare:workers";
import { settings, type Env, type TickChunkReport } from "../env.js";
import { queueFromSettings } from "../queue/from-settings.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { dispatchChunk } from "./dispatch.js";
import { jsonLog, settleChunk } from "./settle.js";

/** What one fanned-out chunk (or drain) did. */
export type ChunkReport = TickChunkReport;

/**
 * Runs one chunk of a topic — claim, dispatch, settle — in an invocation of
 * its own, with a subrequest budget of its own. The tick calls it through a
 * service binding to this same Worker (`TICK_RUNNER` in wrangler.toml) when
 * one invocation's budget cannot carry the due load. It is an RPC method, not
 * an HTTP route: nothing outside the Worker can reach it.
 */
export class TickChunk extends WorkerEntrypoint<Env> {
  /**
   * Runs a topic's due jobs, chunk after chunk, as they fall due over the
   * next `horizonMs` (the producer calls this while the tick sleeps; see
   * src/tick/wake.ts). Ends when nothing more is due within the horizon or its
   * subrequest budget is spent.
   */
  async drain(topic: string, horizonMs: number): Promise<ChunkReport> {
    const s = settings(this.env);
    const end = Date.now() + horizonMs;
    const total: ChunkReport = { claimed: 0, outcomes: { ack: 0, retry: 0, dead: 0, stale: 0 }, subrequests: 0, more: false };
    for (;;) {
      const r = await this.run(topic, s.tickChunk);
      total.claimed += r.claimed;
      total.subrequests += r.subrequests;
      for (const k of ["ack", "retry", "dead", "stale"] as const) total.outcomes[k] += r.outcomes[k];
      if (total.subrequests + s.tickChunk + 3 > s.tickSubrequestBudget) return total;
      if (r.more) continue;
      const next = r.nextDueAt ?? null;
      if (next === null || next > end) return total;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    }
  }

  async run(topic: string, max: number): Promise<ChunkReport> {
    const s = settings(this.env);
    const queue = queueFromSettings(s);
    const budget = new SubrequestBudget(s.tickSubrequestBudget);
    // A claim, a settle and the settings read; the rest is for deliveries.
    const take = Math.max(0, Math.min(max, s.tickChunk, budget.left - 3));
    const report: ChunkReport = { claimed: 0, outcomes: { ack: 0, retry: 0, dead: 0, stale: 0 }, subrequests: 0, more: false, nextDueAt: null };
    if (take === 0) return report;
    budget.spend();
    const { settings: topicSettings, secrets } = await queue.topicSettings(topic);
    budget.spend();
    const claim = await queue.claim(topic, { max: take, leaseMs: topicSettings.timeoutMs + 30_000 });
    report.claimed = claim.jobs.length;
    report.more = claim.jobs.length === take;
    report.nextDueAt = claim.nextDueAt;
    if (claim.jobs.length > 0) {
      const outcomes = await dispatchChunk(claim.jobs, {
        settings: topicSettings,
        secrets,
        allowPrivateTargets: s.allowPrivateTargets,
        fetch: budget.countingFetch(fetch),
        overall: new Semaphore(s.tickConcurrency),
        now: () => Date.now(),
        ...(s.signingSecret !== undefined ? { deploymentSigningSecret: s.signingSecret } : {}),
      });
      budget.spend();
      const results = await settleChunk(queue, topic, outcomes, { log: jsonLog });
      results.forEach((r, i) => (r.applied ? report.outcomes[outcomes[i]!.kind]++ : report.outcomes.stale++));
    }
    report.subrequests = budget.spent;
    return report;
  }
}
