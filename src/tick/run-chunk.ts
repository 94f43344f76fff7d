import { noOutcomes, type Settings, type TickChunkReport } from "../env.js";
import type { Outcome, Queue } from "../queue/queue.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { handlerFor } from "../handlers/registry.js";
import { ChunkTail } from "./chunk-tail.js";
import { dispatchChunk, handlerSlots } from "./dispatch.js";
import type { Clock } from "./clock.js";
import { realClock } from "./clock.js";
import { jsonLog, settleChunk, type Log } from "./settle.js";

/** What one chunk did, and when its topic wants the tick again. */
export type ChunkReport = TickChunkReport;

/** Options of {@link runChunk}. */
export interface ChunkOptions {
  queue: Queue;
  settings: Settings;
  topic: string;
  /** Most jobs to claim; also bounded by TICK_CHUNK and by what `budget` has left. */
  max: number;
  /** How far ahead of their due time jobs are claimed (topics without limits, not batch handlers). Default TICK_LEAD_MS. */
  leadMs?: number;
  /** Default the real clock. */
  clock?: Clock;
  /** Counts every Redis call and delivery. Default a budget of TICK_SUBREQUEST_BUDGET of its own. */
  budget?: SubrequestBudget;
  /** Outbound fetch for the http handler; every call is counted against `budget`. Default the global fetch. */
  fetch?: typeof fetch;
  /** Limits handlers running at once across the chunks of one invocation. Default TICK_CONCURRENCY of its own. */
  overall?: Semaphore;
  /** Default JSON lines on the console. */
  log?: Log;
  /**
   * Told when part of the chunk was settled before the whole chunk ended (see
   * startChunk): how many jobs (their slots are free) and the times of the
   * retries among them, so the caller can be back for them.
   */
  onEarlySettle?: (jobs: number, retryTimes: number[]) => void;
  /**
   * Told once, at the chunk's tail (see startChunk), whether more of the
   * topic is ready; answers whether the caller claims the next chunk beside
   * this one now (then what has ended is settled at once). Default: no.
   */
  onTail?: (backlog: boolean) => boolean;
  /** The topic's handler slots for `size` of them, shared with its other chunks in this invocation. Default: the chunk's own. */
  topicSlots?: (size: number) => Semaphore;
}

/** A chunk whose claim has come back: what it took, and its delivery and settle still running. */
export interface StartedChunk {
  claimed: number;
  /** The claim took all it asked for: more may be ready. */
  more: boolean;
  /** When the topic can next make progress as the claim saw it (its next due job, the rate's next token, a lease deadline), or null. */
  nextLookAt: number | null;
  /** Handlers this topic may run at once in one invocation (its concurrency, the code handler's, else 10). */
  slots: number;
  /** Delivers and settles the claimed jobs; the chunk's whole report. Never rejects before it is awaited or handled. */
  done: Promise<ChunkReport>;
}

/**
 * One chunk of one push topic: claim (which refuses a pull or paused topic
 * and applies its rate limit and concurrency), dispatch, settle. The tick runs
 * chunks in its own invocation or fans them out to invocations of their own
 * (TickChunk.run); a producer's drain runs them back to back. Every one of them
 * comes back with `nextLookAt`: when the topic can next make progress, counting
 * the retries this chunk scheduled and the slots it freed.
 */
export async function runChunk(o: ChunkOptions): Promise<ChunkReport> {
  return (await startChunk(o)).done;
}

/**
 * {@link runChunk} in two steps: resolves once the claim is back, with the
 * chunk's delivery and settle going on in `done`, so a caller can claim
 * again for jobs that fall due while this chunk's handlers run.
 */
export async function startChunk(o: ChunkOptions): Promise<StartedChunk> {
  const s = o.settings;
  const clock = o.clock ?? realClock;
  const budget = o.budget ?? new SubrequestBudget(s.tickSubrequestBudget);
  const spentBefore = budget.spent;
  const report: ChunkReport = { claimed: 0, outcomes: noOutcomes(), subrequests: 0, more: false, nextDueAt: null, nextLookAt: null };
  // A claim and a settle; the rest is for deliveries.
  const take = Math.max(0, Math.min(o.max, s.tickChunk, budget.left - 2));
  if (take === 0) {
    report.nextLookAt = clock.now();
    return { claimed: 0, more: false, nextLookAt: report.nextLookAt, slots: 1, done: Promise.resolve(report) };
  }
  budget.spend();
  // A batch handler takes its jobs together, so none may wait for a later one of its batch.
  const batchHandler = handlerFor(o.topic)?.kind === "batch";
  const leadMs = batchHandler ? 0 : (o.leadMs ?? s.tickLeadMs);
  const claimedFrom = clock.now();
  const claim = await o.queue.claim(o.topic, { max: take, now: claimedFrom, leadMs });
  const claimMs = clock.now() - claimedFrom;
  report.claimed = claim.jobs.length;
  report.more = claim.jobs.length === take;
  report.nextDueAt = claim.nextDueAt;
  report.heldBy = claim.heldBy;
  const claimLook = report.more ? clock.now() : (claim.nextLookAt ?? null);
  const slots = claim.topic ? handlerSlots(o.topic, claim.topic.settings) : 1;
  const finish = async (): Promise<ChunkReport> => {
    let look = claim.nextLookAt ?? Infinity;
    if (claim.jobs.length > 0 && claim.topic) {
      const { settings: topicSettings, secrets } = claim.topic;
      const capped = topicSettings.concurrency !== undefined;
      // One settle for the whole chunk, unless a retry falls due while other
      // handlers of the chunk still run: then what has ended is settled at
      // the retry's time, so the retry is not held back by the slowest handler.
      const ended: Outcome[] = [];
      let settling: Promise<void> = Promise.resolve();
      let all = false;
      const stop = new AbortController();
      const settle = () => {
        const batch = ended.splice(0);
        if (batch.length === 0) return;
        settling = settling.then(async () => {
          budget.spend();
          const results = await settleChunk(o.queue, o.topic, batch, { now: clock.now(), log: o.log ?? jsonLog, index: capped ? "due" : "retries" });
          results.forEach((r, i) => {
            const outcome = batch[i]!;
            if (!r.applied) report.outcomes.stale++;
            else {
              report.outcomes[outcome.kind]++;
              if (outcome.kind === "retry") look = Math.min(look, outcome.at);
            }
          });
          if (!all) {
            const retries = batch.flatMap((b, i) => (results[i]!.applied && b.kind === "retry" ? [b.at] : []));
            o.onEarlySettle?.(batch.length, retries);
          }
        });
      };
      // One timer at a time, for the earliest retry not yet settled.
      let timerAt = Infinity;
      const onOutcome = (outcome: Outcome) => {
        ended.push(outcome);
        tail?.ended();
        if (outcome.kind !== "retry" || outcome.at >= timerAt) return;
        timerAt = outcome.at;
        void clock.sleep(Math.max(0, Math.ceil(outcome.at - clock.now())), stop.signal).then(() => {
          if (all || timerAt !== outcome.at) return;
          timerAt = Infinity;
          settle();
        });
      };
      // At the chunk's tail (src/tick/chunk-tail.ts) the caller is told, and
      // when it claims the next chunk now and more is ready (the claim was
      // full, or the topic's concurrency left the rest), what has ended is
      // settled at once if the chunk is bigger than its lanes, so a capped
      // topic's concurrency lets that claim through. The next chunk's jobs are
      // then back by the time these handlers free their slots; they wait for
      // one about as long as that claim took, and for the handlers running.
      // A batch handler's chunk is one call per batch: the next is claimed when it is back.
      const overall = o.overall ?? new Semaphore(s.tickConcurrency);
      const lanes = Math.min(slots, overall.size);
      const backlog = report.more || claim.heldBy === "concurrency";
      const n = claim.jobs.length;
      const tail = batchHandler
        ? undefined
        : new ChunkTail({
            jobs: n,
            lanes,
            claimMs,
            now: () => clock.now(),
            reached: (queued) => {
              // The early settle and the final one: one more than the claim's reservation's settle.
              if (o.onTail?.(backlog) && backlog && n > lanes && ended.length > 0 && budget.left >= queued + 2) settle();
            },
          });
      await dispatchChunk(claim.jobs, {
        settings: topicSettings,
        secrets,
        allowPrivateTargets: s.allowPrivateTargets,
        fetch: budget.countingFetch(o.fetch ?? fetch),
        overall,
        ...(o.topicSlots ? { topicSlots: o.topicSlots(slots) } : {}),
        now: () => clock.now(),
        until: (at) => clock.sleep(Math.max(0, Math.ceil(at - clock.now()))),
        onOutcome,
        ...(tail ? { onStart: (jobs: number) => tail.started(jobs) } : {}),
        ...(s.signingSecret !== undefined ? { deploymentSigningSecret: s.signingSecret } : {}),
      });
      all = true;
      stop.abort();
      settle();
      await settling;
      // The slots this chunk freed let jobs held back by concurrency start now —
      // also jobs stored meanwhile whose own runner found the slots taken and gave up.
      if (capped) look = Math.min(look, clock.now());
    }
    if (report.more) look = Math.min(look, clock.now());
    report.nextLookAt = Number.isFinite(look) ? look : null;
    report.subrequests = budget.spent - spentBefore;
    return report;
  };
  const done = finish();
  // Handled by whoever awaits it; this only keeps an early rejection from counting as unhandled.
  done.catch(() => {});
  return { claimed: report.claimed, more: report.more, nextLookAt: claimLook, slots, done };
}
