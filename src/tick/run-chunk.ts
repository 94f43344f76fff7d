import { noOutcomes, type Settings, type TickChunkReport } from "../env.js";
import { CLAIM_REQUESTS_MAX, MAX_BATCH } from "../queue/bounds.js";
import type { ClaimResult, Queue } from "../queue/queue.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import type { Handlers, Registered } from "../handlers/registry.js";
import { ChunkSettles, settlesAtTail } from "./chunk-settle.js";
import { ChunkTail } from "./chunk-tail.js";
import { dispatchChunk, handlerSlots } from "./dispatch.js";
import type { Clock } from "./clock.js";
import { realClock } from "./clock.js";
import { RootSigning } from "./root-signing.js";
import { jsonLog, settleChunk, type Log } from "./settle.js";

/** What one chunk did, and when its topic wants the tick again. */
export type ChunkReport = TickChunkReport;

/** Options of {@link runChunk}. */
export interface ChunkOptions {
  queue: Queue;
  settings: Settings;
  /** The deployment's code handlers; a topic without one is delivered over http. */
  handlers: Handlers;
  topic: string;
  /**
   * Most jobs to claim: the caller sizes the chunk (TICK_CHUNK; a heavier
   * topic's share, src/tick/round-plan.ts). Also bounded by MAX_BATCH and by
   * what `budget` has left.
   */
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
  /** Where a derived topic's chunk learns its root's signing, shared by a loop's chunks. Default: one of the chunk's own (a read per chunk). */
  rootSigning?: RootSigning;
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
  /** The topic's weight as the claim read it (absent when the claim gave no settings). */
  weight?: number;
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
  // A claim's requests at most and a settle; the rest is for deliveries.
  const take = Math.max(0, Math.min(o.max, MAX_BATCH, budget.left - CLAIM_REQUESTS_MAX - 1));
  if (take === 0) {
    report.nextLookAt = clock.now();
    return { claimed: 0, more: false, nextLookAt: report.nextLookAt, slots: 1, done: Promise.resolve(report) };
  }
  budget.spend();
  // Read once per chunk: a handler defined or removed meanwhile applies from the next chunk.
  const handler = o.handlers.get(o.topic);
  // A batch handler takes its jobs together, so none may wait for a later one of its batch.
  const batchHandler = handler?.kind === "batch";
  const leadMs = batchHandler ? 0 : (o.leadMs ?? s.tickLeadMs);
  const claimedFrom = clock.now();
  const claim = await o.queue.claim(o.topic, { max: take, now: claimedFrom, leadMs });
  const claimMs = clock.now() - claimedFrom;
  // The claim's other requests (its candidates' read, a sweep) count once they are known.
  if (claim.requests > 1) budget.spend(claim.requests - 1);
  report.claimed = claim.jobs.length;
  if (claim.topic && claim.jobs.length > 0) claim.topic = await (o.rootSigning ?? new RootSigning()).of(o.queue, o.topic, claim.topic, () => budget.spend());
  // Full, or cut short by the reply's byte budget: either way more are takeable now.
  report.more = claim.jobs.length === take || claim.heldBy === "bytes";
  report.nextDueAt = claim.nextDueAt;
  report.heldBy = claim.heldBy;
  // The claim returned the topic's settings anyway: the tick learns its weight at no cost.
  if (claim.topic) report.weight = claim.topic.settings.weight;
  const claimLook = report.more ? clock.now() : (claim.nextLookAt ?? null);
  const slots = claim.topic ? handlerSlots(handler, claim.topic.settings) : 1;
  const done = finishChunk({ o, clock, budget, spentBefore, report, claim, claimMs, slots, handler });
  // Handled by whoever awaits it; this only keeps an early rejection from counting as unhandled.
  done.catch(() => {});
  return { claimed: report.claimed, more: report.more, nextLookAt: claimLook, slots, ...(claim.topic ? { weight: claim.topic.settings.weight } : {}), done };
}

/** A chunk whose claim is back, with what delivering and settling it needs. */
interface ClaimedChunk {
  o: ChunkOptions;
  clock: Clock;
  budget: SubrequestBudget;
  /** What `budget` had spent before the claim: the report counts from there. */
  spentBefore: number;
  /** Filled in as the chunk goes: the claim's part already, the outcomes as they settle. */
  report: ChunkReport;
  claim: ClaimResult;
  claimMs: number;
  slots: number;
  /** The topic's code handler as the chunk began, if it has one. */
  handler: Registered | undefined;
}

/** Delivers and settles what the claim took; the chunk's report, with when its topic wants the tick again. */
async function finishChunk(c: ClaimedChunk): Promise<ChunkReport> {
  const { claim, clock, report } = c;
  let look = claim.nextLookAt ?? Infinity;
  if (claim.jobs.length > 0 && claim.topic) look = Math.min(look, await deliverAndSettle(c, claim.topic));
  if (report.more) look = Math.min(look, clock.now());
  report.nextLookAt = Number.isFinite(look) ? look : null;
  report.subrequests = c.budget.spent - c.spentBefore;
  return report;
}

/**
 * Dispatches the claimed jobs and settles them (src/tick/chunk-settle.ts:
 * once, or early at a retry's time or at the chunk's tail); resolves with
 * the earliest time the topic wants the tick for what this chunk did.
 */
async function deliverAndSettle(c: ClaimedChunk, topic: NonNullable<ClaimResult["topic"]>): Promise<number> {
  const { o, clock, budget, report, claim } = c;
  const s = o.settings;
  const capped = topic.settings.concurrency !== undefined;
  const log = o.log ?? jsonLog;
  const settles = new ChunkSettles({
    clock,
    settle: (batch) => {
      budget.spend();
      return settleChunk(o.queue, o.topic, batch, {
        now: clock.now(),
        log,
        ...(capped ? { index: "due" as const } : { index: "retries" as const, leadMs: o.settings.tickLeadMs }),
      });
    },
    outcomes: report.outcomes,
    ...(o.onEarlySettle ? { onEarlySettle: o.onEarlySettle } : {}),
  });
  const overall = o.overall ?? new Semaphore(s.tickConcurrency);
  const tail = tailOf(c, settles, Math.min(c.slots, overall.size));
  await dispatchChunk(claim.jobs, {
    handler: c.handler,
    settings: topic.settings,
    secrets: topic.secrets,
    allowPrivateTargets: s.allowPrivateTargets,
    fetch: budget.countingFetch(o.fetch ?? fetch),
    overall,
    // The overall slots go by weight between topics that wait for them (src/tick/budget.ts).
    claimant: { topic: o.topic, weight: topic.settings.weight },
    ...(o.topicSlots ? { topicSlots: o.topicSlots(c.slots) } : {}),
    now: () => clock.now(),
    until: (at) => clock.sleep(Math.max(0, Math.ceil(at - clock.now()))),
    onOutcome: (outcome) => {
      settles.add(outcome);
      tail?.ended();
      settles.settleAtRetry(outcome);
    },
    ...(tail ? { onStart: (jobs: number) => tail.started(jobs) } : {}),
    ...(s.signingSecret !== undefined ? { deploymentSigningSecret: s.signingSecret } : {}),
  });
  const look = await settles.finish();
  // The slots this chunk freed let jobs held back by concurrency start now —
  // also jobs stored meanwhile whose own runner found the slots taken and gave up.
  return capped ? Math.min(look, clock.now()) : look;
}

/**
 * The chunk's tail watcher (src/tick/chunk-tail.ts): at the tail the caller
 * is told, and when it claims the next chunk now, what has ended may be
 * settled at once ({@link settlesAtTail}). The next chunk's jobs are then
 * back by the time these handlers free their slots; they wait for one about
 * as long as that claim took, and for the handlers running. A batch
 * handler's chunk has none: it is one call per batch, and the next is
 * claimed when it is back.
 */
function tailOf(c: ClaimedChunk, settles: ChunkSettles, lanes: number): ChunkTail | undefined {
  if (c.handler?.kind === "batch") return undefined;
  const { o, clock, budget, report, claim } = c;
  const backlog = report.more || claim.heldBy === "concurrency";
  const jobs = claim.jobs.length;
  return new ChunkTail({
    jobs,
    lanes,
    claimMs: c.claimMs,
    now: () => clock.now(),
    reached: (queued) => {
      const claimsNext = o.onTail?.(backlog) ?? false;
      if (settlesAtTail({ claimsNext, backlog, jobs, lanes, waiting: settles.waiting, queued, budgetLeft: budget.left })) settles.settleEnded();
    },
  });
}
