import type { Settings } from "../env.js";
import type { TickLock } from "../queue/lock.js";
import type { ClaimResult, Outcome, Queue } from "../queue/queue.js";
import { RedisUnavailableError } from "../queue/redis.js";
import type { TopicSecrets, TopicSettings } from "../queue/topics.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import type { ChunkReport } from "./chunk.js";
import { dispatchChunk } from "./dispatch.js";
import { SLEEP_MARK_STALENESS_MS } from "./wake.js";

/** Time as the loop sees it; tests drive it by hand. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/** Options of one tick invocation. */
export interface TickOptions {
  queue: Queue;
  lock: TickLock;
  settings: Settings;
  /** When Cloudflare scheduled this invocation (its minute), epoch ms. */
  scheduledTime: number;
  clock?: Clock;
  /** How long past `scheduledTime` the loop runs. Default 60,000 ms + `settings.tickOverlapMs`. */
  windowMs?: number;
  /** Outbound fetch for the http handler (counted). Default the global fetch. */
  fetch?: typeof fetch;
  /** One structured line per round and per failure. Default console.log of JSON. */
  log?: (line: Record<string, unknown>) => void;
  /**
   * Runs one chunk of a topic in an invocation of its own (the TickChunk
   * entrypoint through the TICK_RUNNER service binding). With it, a topic
   * with a backlog gets up to `TICK_FANOUT` extra chunks per round, each
   * costing this invocation one subrequest.
   */
  fanOut?: (topic: string, max: number) => Promise<ChunkReport>;
}

export interface TickReport {
  /** Why the loop ended: its window passed, the budget ran out, the lock was lost, or it never got the lock. */
  ended: "window" | "budget" | "lock-lost" | "not-acquired";
  rounds: number;
  claimed: number;
  outcomes: { ack: number; retry: number; dead: number; stale: number };
  subrequests: number;
  /** Chunks run in invocations of their own. */
  fannedOut: number;
  /** Sleeps of TICK_IDLE_PEEK_MS taken while idle. */
  idleSleeps: number;
}

/** How often known topics' settings are read again (new topics are read at once). */
const TOPIC_SETTINGS_REFRESH_MS = 30_000;
/** How often lease deadlines are looked at, to reap leases of loops that died. */
const LEASE_CHECK_MS = 5_000;
/** How often a waiting invocation asks for the lock while the holder's window lasts. */
const HANDOVER_CHECK_MS = 5_000;
/** How long a topic found paused is left alone: a resume takes effect within this. */
const PAUSED_RECHECK_MS = 5_000;

/**
 * One tick invocation: takes the lock (waiting for a running loop to end its
 * window rather than starting a second one), then runs rounds until its window
 * or its subrequest budget ends. A round claims a chunk of every push topic
 * (each topic at most `tickChunk`, so a hot topic cannot starve the others),
 * dispatches them, and settles each topic's chunk in one call; then it sleeps
 * until the earliest known due time or `TICK_POLL_MS`, whichever is sooner.
 */
export async function runTick(options: TickOptions): Promise<TickReport> {
  const { queue, lock, settings: s } = options;
  const clock = options.clock ?? realClock;
  // Errors (an outage) go to console.error, so they show at wrangler's and Workers Logs' default level.
  const log = options.log ?? ((line) => (line.level === "error" ? console.error : console.log)(JSON.stringify(line)));
  const budget = new SubrequestBudget(s.tickSubrequestBudget);
  const fetcher = budget.countingFetch(options.fetch ?? fetch);
  const overall = new Semaphore(s.tickConcurrency);
  const windowEnd = options.scheduledTime + (options.windowMs ?? 60_000 + s.tickOverlapMs);
  // Renewed every third of its life, and it must outlast an idle sleep: a
  // crashed loop is replaced within 15 s (30 s with the default idle look).
  const lockTtl = Math.max(15_000, 3 * s.tickPollMs, s.tickIdlePeekMs + 10_000);
  const report: TickReport = {
    ended: "window",
    rounds: 0,
    claimed: 0,
    outcomes: { ack: 0, retry: 0, dead: 0, stale: 0 },
    subrequests: 0,
    fannedOut: 0,
    idleSleeps: 0,
  };
  const finish = (ended: TickReport["ended"]) => ({ ...report, ended, subrequests: budget.spent });

  // Blind polls (looking for jobs nobody told us about) may use at most half
  // of what is left of the budget, so polling alone can never end a loop
  // early: with little budget left, the poll interval stretches. Known due
  // times are still met exactly.
  const pollInterval = () => Math.max(s.tickPollMs, (windowEnd - clock.now()) / Math.max(1, budget.left / 2));

  // While Redis is unreachable the loop waits and tries again (1 s, doubling
  // up to 5 s) rather than ending: jobs it held stay leased and come back
  // after their lease, so nothing is lost, and the loop resumes on its own.
  let outageWait = 1_000;
  const waitOutOutage = async (err: unknown) => {
    if (!(err instanceof RedisUnavailableError)) throw err;
    log({ level: "error", msg: "Redis unreachable; the tick waits and retries", retryInMs: outageWait, error: err.message });
    await clock.sleep(Math.min(outageWait, Math.max(0, windowEnd - clock.now())));
    outageWait = Math.min(outageWait * 2, 5_000);
  };

  // 1. The lock. A loop already running is healthy while it renews its lock;
  // wait for it to end (or for its lock to lapse) instead of running beside it.
  for (;;) {
    if (clock.now() >= windowEnd || budget.left < 4) return finish("not-acquired");
    budget.spend();
    let got: Awaited<ReturnType<TickLock["acquire"]>>;
    try {
      got = await lock.acquire(lockTtl, windowEnd);
    } catch (err) {
      await waitOutOutage(err);
      continue;
    }
    if (got.acquired) break;
    // Until the holder's window ends, ask every 5 s (it may end early, out of
    // budget, or die and let its lock lapse); from then on, every poll until
    // it lets go. An overlap of 15 s costs a waiter a few requests, not fifteen.
    const holderLeft = got.holderWindowEnd === null ? 0 : got.holderWindowEnd - clock.now();
    const wait = holderLeft > 0 ? Math.min(holderLeft, got.heldForMs + 1, HANDOVER_CHECK_MS) : Math.min(got.heldForMs + 1, s.tickPollMs);
    await clock.sleep(Math.max(25, Math.min(wait, windowEnd - clock.now())));
  }
  let lastExtend = clock.now();

  type Topic = { name: string; settings: TopicSettings; secrets: TopicSecrets };
  const known = new Map<string, Topic>();
  let topics: Topic[] = [];
  let settingsReadAt = -Infinity;
  let leasesReadAt = -Infinity;
  const pausedUntil = new Map<string, number>();
  // Topics whose last claim came back full: more is ready than one chunk.
  const backlog = new Set<string>();
  // Sleeping when idle: after a few empty rounds with nothing due within
  // TICK_IDLE_PEEK_MS, the loop marks itself asleep (producers then start
  // jobs due sooner themselves), keeps polling until every producer has seen
  // the mark, and from then on looks only every TICK_IDLE_PEEK_MS.
  let idleRounds = 0;
  let markedAt: number | null = null;
  // The change to the mark that the next peek makes: undefined leaves it.
  // The first peek clears a mark a previous invocation left behind.
  let markChange: number | "clear" | undefined = "clear";
  const markTtl = 3 * s.tickIdlePeekMs;
  let ended: TickReport["ended"] = "window";

  try {
    while (clock.now() < windowEnd) {
      try {
        // One cheap look: the topic registry and each push topic's earliest due
        // time (and, every few seconds, earliest lease deadline). Only topics
        // with work are claimed, so an idle poll is this one request.
        if (budget.left < 3) {
          ended = "budget";
          break;
        }
        const withLeases = clock.now() - leasesReadAt >= LEASE_CHECK_MS;
        // Renew the lock well before it lapses, in the same request; losing it
        // means another loop took over.
        const renew = clock.now() - lastExtend >= lockTtl / 3;
        budget.spend();
        const peek = await queue.peek(
          topics.map((t) => t.name),
          {
            leases: withLeases,
            ...(renew ? { renewLock: { token: lock.token, ttlMs: lockTtl } } : {}),
            ...(markChange !== undefined ? { sleepMark: markChange } : {}),
          },
        );
        if (typeof markChange === "number" && markedAt === null) markedAt = clock.now();
        if (markChange === "clear") markedAt = null;
        markChange = undefined;
        if (!peek.lockHeld) {
          ended = "lock-lost";
          break;
        }
        outageWait = 1_000;
        if (renew) lastExtend = clock.now();
        if (withLeases) leasesReadAt = clock.now();
        const stale = clock.now() - settingsReadAt >= TOPIC_SETTINGS_REFRESH_MS;
        const toRead = peek.registered.filter((n) => stale || !known.has(n)).slice(0, Math.max(0, budget.left - 3));
        if (toRead.length > 0) {
          budget.spend(toRead.length);
          const read = await Promise.all(toRead.map(async (name) => ({ name, ...(await queue.topicSettings(name)) })));
          for (const t of read) known.set(t.name, t);
          if (stale) settingsReadAt = clock.now();
        }
        for (const n of [...known.keys()]) if (!peek.registered.includes(n)) known.delete(n);
        const peeked = topics.map((t) => t.name);
        // Paused topics stay in: the claim script itself refuses them, so a
        // resume takes effect at the next claim, not at the next settings read.
        // A topic found paused is only asked again after a poll interval.
        topics = [...known.values()].filter((t) => t.settings.mode === "push");
        const nowPeek = clock.now();
        // Topics read for the first time have no peek yet: claim them once to learn.
        const withWork = topics.filter((t) => {
          if ((pausedUntil.get(t.name) ?? -Infinity) > nowPeek) return false;
          const p = peek.topics.get(t.name);
          if (!p || !peeked.includes(t.name)) return true;
          return (p.nextDueAt !== null && p.nextDueAt <= nowPeek) || (p.nextLeaseDeadline !== null && p.nextLeaseDeadline <= nowPeek);
        });
        let wakeAt = Infinity;
        for (const t of topics) {
          const p = peek.topics.get(t.name);
          if (p?.nextDueAt != null && p.nextDueAt > nowPeek) wakeAt = Math.min(wakeAt, p.nextDueAt);
        }

        // Each claimed topic costs a claim and a settle, and each job may make
        // one fetch; one subrequest stays for releasing the lock. The budget is
        // shared evenly, starting from a topic that rotates every round, so a
        // tight budget still reaches every topic in turn.
        //
        // A topic with a backlog, when fan-out is on, is handed to invocations
        // of their own instead: a chunk there costs this invocation one
        // subrequest, where delivering it here costs one per job.
        let left = budget.left - 1;
        const fanning = options.fanOut && s.tickFanout > 0 ? withWork.filter((t) => backlog.has(t.name)) : [];
        const local = withWork.filter((t) => !fanning.includes(t));
        const remote: Array<{ topic: string; max: number }> = [];
        for (const t of fanning) {
          for (let k = 0; k < s.tickFanout && left >= 1; k++, left--) remote.push({ topic: t.name, max: s.tickChunk });
        }
        const share = Math.floor(left / Math.max(1, local.length));
        const plan: Array<{ topic: (typeof topics)[number]; max: number }> = [];
        for (let k = 0; k < local.length; k++) {
          const topic = local[(report.rounds + k) % local.length]!;
          const max = Math.min(s.tickChunk, Math.max(share, 3) - 2, left - 2);
          if (max < 1) break;
          plan.push({ topic, max });
          left -= 2 + max;
        }
        if (plan.length === 0 && remote.length === 0 && withWork.length > 0) {
          ended = "budget";
          break;
        }
        if (plan.length === 0 && remote.length === 0) {
          report.rounds++;
          idleRounds++;
          const quiet = s.tickIdlePeekMs > 0 && wakeAt - clock.now() > s.tickIdlePeekMs;
          if (!quiet) {
            if (markedAt !== null) markChange = "clear";
          } else if (markedAt === null) {
            if (idleRounds >= 3) markChange = markTtl;
          } else if (clock.now() - markedAt >= SLEEP_MARK_STALENESS_MS + s.tickPollMs) {
            // Every producer knows by now: look again only every TICK_IDLE_PEEK_MS,
            // renewing the mark with each look.
            report.idleSleeps++;
            markChange = markTtl;
            const wait = Math.min(wakeAt - clock.now() - s.tickPollMs, s.tickIdlePeekMs, windowEnd - clock.now());
            if (wait > 0) await clock.sleep(wait);
            continue;
          }
          const wait = Math.min(wakeAt - clock.now(), pollInterval(), windowEnd - clock.now());
          if (wait > 0) await clock.sleep(wait);
          continue;
        }
        idleRounds = 0;
        if (markedAt !== null) markChange = "clear";

        budget.spend(remote.length);
        report.fannedOut += remote.length;
        const remoteRuns = Promise.all(
          remote.map((r) =>
            options.fanOut!(r.topic, r.max).catch((err: unknown) => {
              log({ level: "error", msg: "fan-out chunk failed", topic: r.topic, error: String(err) });
              return null;
            }),
          ),
        );

        const now = clock.now();
        budget.spend(plan.length);
        const claims: ClaimResult[] = await Promise.all(
          plan.map((p) => queue.claim(p.topic.name, { max: p.max, leaseMs: p.topic.settings.timeoutMs + 30_000, now })),
        );
        report.rounds++;
        let more = false;
        let nextDue = Infinity;
        const settled = await Promise.all(
          plan.map(async (p, i) => {
            const claim = claims[i]!;
            if (claim.paused) pausedUntil.set(p.topic.name, now + PAUSED_RECHECK_MS);
            else pausedUntil.delete(p.topic.name);
            // When to look again: the topic's next due job, or — when ready jobs
            // were held back by its rate limit — its next token.
            if (claim.nextDueAt !== null) {
              nextDue = Math.min(nextDue, claim.nextDueAt);
              wakeAt = Math.min(wakeAt, claim.nextDueAt > now ? claim.nextDueAt : now + (claim.rateLimitedForMs || s.tickPollMs));
            }
            if (claim.jobs.length === p.max && p.max > 0) {
              more = true;
              backlog.add(p.topic.name);
            } else backlog.delete(p.topic.name);
            if (claim.jobs.length === 0) return [];
            report.claimed += claim.jobs.length;
            const ctx = {
              settings: p.topic.settings,
              secrets: p.topic.secrets,
              allowPrivateTargets: s.allowPrivateTargets,
              fetch: fetcher,
              overall,
              now: () => clock.now(),
              ...(s.signingSecret !== undefined ? { deploymentSigningSecret: s.signingSecret } : {}),
            };
            const outcomes: Outcome[] = await dispatchChunk(claim.jobs, ctx);
            budget.spend();
            const results = await queue.settle(p.topic.name, outcomes, { now: clock.now() });
            for (const [j, r] of results.entries()) {
              if (!r.applied) report.outcomes.stale++;
              else report.outcomes[outcomes[j]!.kind]++;
            }
            for (const o of outcomes) {
              if (o.kind !== "ack") log({ level: "warn", msg: "job failed", topic: p.topic.name, id: o.id, attempt: o.attempt, outcome: o.kind, error: o.error });
            }
            return results;
          }),
        );
        // A fanned-out topic keeps its backlog mark while any of its chunks came back full.
        const stillFull = new Set<string>();
        for (const [i, r] of (await remoteRuns).entries()) {
          if (!r) continue;
          report.claimed += r.claimed;
          for (const k of ["ack", "retry", "dead", "stale"] as const) report.outcomes[k] += r.outcomes[k];
          if (r.more) stillFull.add(remote[i]!.topic);
        }
        for (const t of fanning) {
          if (stillFull.has(t.name)) more = true;
          else backlog.delete(t.name);
        }
        log({
          level: "info",
          msg: "tick round",
          round: report.rounds,
          claimed: settled.reduce((n, r) => n + r.length, 0),
          subrequests: budget.spent,
          nextDueInMs: Number.isFinite(nextDue) ? nextDue - clock.now() : null,
        });

        if (more) continue;
        const wait = Math.min(wakeAt - clock.now(), pollInterval(), windowEnd - clock.now());
        if (wait > 0) await clock.sleep(wait);
      } catch (err) {
        await waitOutOutage(err);
      }
    }
  } finally {
    budget.spend();
    // During an outage the release fails; the lock then lapses on its own.
    await lock.release().catch(() => false);
  }
  return finish(ended);
}
