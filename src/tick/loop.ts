import type { Settings } from "../env.js";
import type { TickLock } from "../queue/lock.js";
import type { Queue, TickStatus } from "../queue/queue.js";
import { RedisUnavailableError } from "../queue/redis.js";
import { Semaphore, SubrequestBudget } from "./budget.js";
import { realClock, type Clock } from "./clock.js";
import { fireDueSchedules } from "../schedules/fire.js";
import { ChunksInFlight } from "./in-flight.js";
import type { ChunkReport } from "./run-chunk.js";
import { jsonLog, type Log } from "./settle.js";
import { SLEEP_MARK_STALENESS_MS } from "./wake.js";

export { realClock, type Clock } from "./clock.js";

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
  /** One structured line per round that did work and per failed attempt. Default console.log of JSON. */
  log?: Log;
  /**
   * Runs one chunk of a topic in an invocation of its own (the TickChunk
   * entrypoint through the TICK_RUNNER service binding), with a subrequest
   * budget of its own; it costs this invocation one subrequest. With it, a
   * round hands a topic's chunk out whenever delivering it here would spend
   * more than the loop can afford per round for the rest of its window, and
   * a topic with a backlog gets up to `TICK_FANOUT` chunks per round.
   */
  fanOut?: (topic: string, max: number) => Promise<ChunkReport>;
  /**
   * Goes on with this loop's window in an invocation of its own (TickChunk's
   * continueTick) when this one's subrequest budget runs out, so a load the
   * budget cannot carry is not left until the next cron. Without it, polls
   * stretch as the budget shrinks instead.
   */
  handOver?: (windowEnd: number) => Promise<unknown>;
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
  /** Whether the loop handed the rest of its window to an invocation of its own. */
  handedOver: boolean;
}

/** How often a waiting invocation asks for the lock while the holder's window lasts. */
const HANDOVER_CHECK_MS = 5_000;
/** How often the loop records its status (with a poll it makes anyway). */
const STATUS_EVERY_MS = 10_000;
/** Most due topics one poll returns. */
const MAX_DUE_TOPICS = 500;
/** quietUntil's key for the schedules (no topic name holds "~"). */
const SCHEDULES = "~schedules";
/** Most topics of the index sampled into the per-minute backlog series, earliest first. */
const SAMPLED_TOPICS = 200;

/**
 * One tick invocation: takes the lock (waiting for a running loop to end its
 * window rather than starting a second one), then runs rounds until its window
 * or its subrequest budget ends. A round polls the topic index — one command
 * that names every topic with work due now, whatever the number of topics —
 * runs a chunk of each (each at most `tickChunk`, so a hot topic cannot starve
 * the others), here or fanned out, and then sleeps until the index's next due
 * time, the time any chunk asked to be back (a retry, a freed slot, the rate's
 * next token), or `TICK_POLL_MS`, whichever is soonest.
 */
export async function runTick(options: TickOptions): Promise<TickReport> {
  const { queue, lock, settings: s } = options;
  const clock = options.clock ?? realClock;
  const log = options.log ?? jsonLog;
  const budget = new SubrequestBudget(s.tickSubrequestBudget);
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
    handedOver: false,
  };
  const finish = (ended: TickReport["ended"]) => ({ ...report, ended, subrequests: budget.spent });
  const status = (ended: string | null, asleep: boolean): TickStatus => ({
    startedAt: options.scheduledTime,
    updatedAt: clock.now(),
    rounds: report.rounds,
    claimed: report.claimed,
    subrequests: budget.spent,
    budget: s.tickSubrequestBudget,
    asleep,
    ended,
  });

  // Without a successor to hand over to, blind polls (looking for jobs nobody
  // told us about) may use at most half of what is left of the budget, so
  // polling alone can never end a loop early: with little budget left, the
  // poll interval stretches. Known due times are still met exactly.
  const pollInterval = () =>
    options.handOver ? s.tickPollMs : Math.max(s.tickPollMs, (windowEnd - clock.now()) / Math.max(1, budget.left / 2));

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

  let handoverWait = 25;
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
    // budget, or die and let its lock lapse); from then on, quickly until
    // it lets go. An overlap of 15 s costs a waiter a few requests, not fifteen.
    const holderLeft = got.holderWindowEnd === null ? 0 : got.holderWindowEnd - clock.now();
    // Past the holder's window it is about to let go (its last poll may still be under way): ask again
    // soon, then less often, so a handover leaves no gap of a whole poll.
    const wait = holderLeft > 0 ? Math.min(holderLeft, got.heldForMs + 1, HANDOVER_CHECK_MS) : Math.min(got.heldForMs + 1, s.tickPollMs, handoverWait);
    if (holderLeft <= 0) handoverWait = Math.min(handoverWait * 2, s.tickPollMs);
    await clock.sleep(Math.max(25, Math.min(wait, windowEnd - clock.now())));
  }
  let lastExtend = clock.now();

  // What the last round's chunk of each topic took: a local chunk is priced by it.
  const lastTaken = new Map<string, number>();
  // Topics whose last chunk came back full: more is ready than one chunk.
  const backlog = new Set<string>();
  // Topics whose fan-out failed in this invocation: delivered here from then on.
  const noFanOut = new Set<string>();
  // Sleeping when idle: after a few empty rounds with nothing due within
  // TICK_IDLE_PEEK_MS, the loop marks itself asleep (producers then start
  // jobs due sooner themselves), keeps polling until every producer has seen
  // the mark, and from then on looks only every TICK_IDLE_PEEK_MS.
  let idleRounds = 0;
  let markedAt: number | null = null;
  // The change to the mark that the next poll makes: undefined leaves it.
  // The first poll clears a mark a previous invocation left behind.
  let markChange: number | "clear" | undefined = "clear";
  const markTtl = 3 * s.tickIdlePeekMs;
  let ended: TickReport["ended"] = "window";
  // The status and the per-minute backlog samples ride along with polls: the
  // first poll of a minute lists the topics to sample, the next samples them.
  let statusAt = -Infinity;
  let listedMinute = -1;
  let sampledMinute = -1;
  let toSample: string[] = [];
  let rotation = 0;
  // A chunk that got nothing yet asks to be back at once would make the loop
  // spin (the index is only ever early by mistake, and claims correct it): such
  // a topic is left alone for a poll interval instead.
  const quietUntil = new Map<string, number>();

  // Chunks run side by side: a round waits for its claims, not for their
  // handlers, so a job that falls due while a slow handler runs is claimed
  // at the next poll. Chunks that end may bring the next poll forward.
  const inFlight = new ChunksInFlight({ queue, settings: s, clock, budget, fetch: options.fetch ?? fetch, overall, log, ...(options.fanOut ? { fanOut: options.fanOut } : {}) });
  let pollAt = -Infinity;
  // A chunk that ends may not bring the next poll before the pace of the round that started it.
  let pacedUntil = -Infinity;
  // Topics that were due at a poll but got no chunk because chunks still ran (theirs, or all of TICK_CONCURRENCY): polled again as one ends.
  const waitingForChunk = new Set<string>();
  // A bug (not an outage) in a chunk: rethrown by the loop, as it would have been in the round.
  let failure: { error: unknown } | undefined;
  const foldEnded = () => {
    // What a running chunk settled early (a freed slot, a retry): be back for it.
    for (const at of inFlight.takeLooks()) pollAt = Math.min(pollAt, at);
    for (const e of inFlight.takeEnded()) {
      const r = e.report;
      if (!r) {
        if (e.where === "fanned") {
          log({ level: "error", msg: "fan-out chunk failed; the topic is delivered here from now on", topic: e.topic, error: String(e.error) });
          noFanOut.add(e.topic);
        } else if (e.error instanceof RedisUnavailableError) {
          log({ level: "error", msg: "Redis unreachable while a chunk ran; its jobs come back after their lease", topic: e.topic, error: e.error.message });
        } else failure ??= { error: e.error };
        // Its jobs are still due (or leased, and come back after the lease): look again soon.
        pollAt = Math.min(pollAt, clock.now() + s.tickPollMs);
        continue;
      }
      for (const k of ["ack", "retry", "dead", "stale"] as const) report.outcomes[k] += r.outcomes[k];
      if (e.where === "fanned") {
        // (Due already when it was started, yet nothing to take: see quietUntil.)
        if (r.claimed === 0 && r.nextLookAt != null && r.nextLookAt <= e.startedAt) {
          quietUntil.set(e.topic, clock.now() + s.tickPollMs);
          continue;
        }
        report.claimed += r.claimed;
        lastTaken.set(e.topic, r.claimed);
        if (r.more) backlog.add(e.topic);
        else backlog.delete(e.topic);
      }
      let look = r.nextLookAt ?? Infinity;
      // Its slots are free again: whatever waited for them is polled now.
      if (waitingForChunk.size > 0) {
        waitingForChunk.clear();
        look = clock.now();
      }
      if (Number.isFinite(look)) pollAt = Math.min(pollAt, r.more ? look : Math.max(look, pacedUntil));
    }
  };

  try {
    for (;;) {
      foldEnded();
      if (failure) throw failure.error;
      if (clock.now() >= windowEnd) break;
      if (clock.now() < pollAt) {
        await inFlight.sleep(pollAt - clock.now());
        continue;
      }
      try {
        // A poll, the lock's release and a handover must stay affordable.
        if (budget.left < 3) {
          ended = "budget";
          break;
        }
        const renew = clock.now() - lastExtend >= lockTtl / 3;
        // A change of the sleep mark is news too: the status says whether the loop sleeps.
        const writeStatus = clock.now() - statusAt >= STATUS_EVERY_MS || markChange !== undefined;
        const minute = Math.floor(clock.now() / 60_000);
        const list = minute !== listedMinute;
        const sample = !list && sampledMinute !== minute && toSample.length > 0;
        budget.spend();
        const polledAt = clock.now();
        const peek = await queue.peek({
          now: polledAt,
          limit: Math.min(MAX_DUE_TOPICS, Math.max(1, budget.left - 2)),
          ...(renew ? { renewLock: { token: lock.token, ttlMs: lockTtl } } : {}),
          ...(markChange !== undefined ? { sleepMark: markChange } : {}),
          ...(writeStatus ? { status: status(null, markChange === undefined ? markedAt !== null : markChange !== "clear") } : {}),
          ...(sample ? { sample: { at: polledAt, topics: toSample } } : {}),
          ...(list ? { listToSample: SAMPLED_TOPICS } : {}),
        });
        if (writeStatus) statusAt = polledAt;
        if (list) {
          listedMinute = minute;
          toSample = peek.toSample;
        }
        if (sample) sampledMinute = minute;
        if (typeof markChange === "number" && markedAt === null) markedAt = clock.now();
        if (markChange === "clear") markedAt = null;
        markChange = undefined;
        if (!peek.lockHeld) {
          ended = "lock-lost";
          break;
        }
        outageWait = 1_000;
        if (renew) lastExtend = clock.now();

        let now = clock.now();
        let wakeAt = peek.more ? now : (peek.nextAt ?? Infinity);
        const due = peek.due.map((d) => d.topic).filter((t) => (quietUntil.get(t) ?? -Infinity) <= now);
        if (due.length < peek.due.length) wakeAt = Math.min(wakeAt, ...[...quietUntil.values()].filter((t) => t > now));

        // Schedules whose occurrence has come store their jobs now, and those
        // topics are claimed in this same round.
        if (peek.schedulesDue && (quietUntil.get(SCHEDULES) ?? -Infinity) <= now && budget.left >= 6) {
          const f = await fireDueSchedules(queue.schedules, now, Math.min(6, budget.left - 4));
          budget.spend(f.calls);
          for (const j of f.jobs) if (!due.includes(j.topic)) due.push(j.topic);
          if (f.jobs.length > 0) log({ level: "info", msg: "schedules fired", jobs: f.jobs.length, fenced: f.fenced });
          // Fenced off: someone else (a producer while this loop slept) fired it, and its job is due now.
          if (f.fenced > 0) wakeAt = now;
          if (f.nextAt !== null) {
            // Nothing fired yet still due: leave the schedules for a poll rather than spin.
            if (f.jobs.length === 0 && f.nextAt <= now) quietUntil.set(SCHEDULES, now + s.tickPollMs);
            else wakeAt = Math.min(wakeAt, f.nextAt);
          }
          now = clock.now();
        } else if (peek.schedulesDue) wakeAt = Math.min(wakeAt, quietUntil.get(SCHEDULES) ?? now + s.tickPollMs);

        // Each chunk here costs a claim, a settle and a fetch per job; fanned
        // out it costs one subrequest. A chunk runs here while the loop can
        // afford chunks like it every poll interval until its window ends;
        // beyond that pace, and for topics with a backlog, it is fanned out.
        // One subrequest stays for releasing the lock and one for a handover.
        // A topic whose chunk still runs gets what its free slots allow here,
        // and no second fanned-out chunk until the first is back (meanwhile it
        // is served here).
        let left = budget.left - 2;
        const fanning = options.fanOut !== undefined && s.tickFanout > 0;
        let pace = fanning ? left / Math.max(1, (windowEnd - now) / s.tickPollMs) : Infinity;
        const remote: Array<{ topic: string; max: number }> = [];
        const localTopics: string[] = [];
        const busy: string[] = [];
        const start = due.length > 0 ? rotation++ % due.length : 0;
        for (let k = 0; k < due.length; k++) {
          const topic = due[(start + k) % due.length]!;
          const running = inFlight.busy(topic);
          const price = 2 + Math.min(s.tickChunk, lastTaken.get(topic) ?? 1);
          if (fanning && !noFanOut.has(topic) && (backlog.has(topic) || price > pace)) {
            if (!running.here && !running.fanned) {
              const chunks = backlog.has(topic) ? s.tickFanout : 1;
              for (let c = 0; c < chunks && left >= 1; c++, left--) remote.push({ topic, max: s.tickChunk });
              continue;
            }
            // Its fanned-out chunk is still out: what falls due meanwhile runs here, if the pace allows.
            if (price > pace) {
              busy.push(topic);
              continue;
            }
          }
          if (inFlight.room(topic, s.tickChunk) < 1) {
            busy.push(topic);
            continue;
          }
          localTopics.push(topic);
          pace -= price;
        }
        // The budget is shared evenly among the topics run here, so a tight
        // budget still reaches every topic in turn (the rotation above).
        const share = Math.floor(left / Math.max(1, localTopics.length));
        const local: Array<{ topic: string; max: number }> = [];
        // Beside running chunks, TICK_CONCURRENCY's free slots are shared out, not promised twice.
        let slots = inFlight.freeSlots;
        for (const topic of localTopics) {
          const affordable = Math.min(s.tickChunk, Math.max(share, 3) - 2, left - 2);
          if (affordable < 1) break;
          const max = Math.min(affordable, inFlight.room(topic, s.tickChunk), slots);
          if (max < 1) {
            busy.push(topic);
            continue;
          }
          local.push({ topic, max });
          left -= 2 + max;
          slots -= max;
        }
        for (const topic of busy) waitingForChunk.add(topic);
        const unserved = due.length - busy.length - local.length - new Set(remote.map((r) => r.topic)).size;
        if (unserved > 0) wakeAt = now;
        if (local.length === 0 && remote.length === 0 && unserved > 0 && inFlight.idle) {
          ended = "budget";
          break;
        }

        report.rounds++;
        if (local.length === 0 && remote.length === 0) {
          if (!inFlight.idle) {
            // Work still runs: a chunk that ends brings the next poll forward.
            pollAt = Math.min(wakeAt, clock.now() + pollInterval(), windowEnd);
            continue;
          }
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
            pollAt = clock.now() + Math.min(wakeAt - clock.now() - s.tickPollMs, s.tickIdlePeekMs, windowEnd - clock.now());
            continue;
          }
          pollAt = clock.now() + Math.min(wakeAt - clock.now(), pollInterval(), windowEnd - clock.now());
          continue;
        }
        idleRounds = 0;
        if (markedAt !== null) markChange = "clear";

        budget.spend(remote.length);
        report.fannedOut += remote.length;
        for (const r of remote) inFlight.startFanned(r.topic, r.max);
        const started = await Promise.all(local.map((p) => inFlight.startHere(p.topic, p.max, 2 + p.max)));
        // What this round will cost: the poll, the fan-outs, and per chunk here a claim (and a settle and a delivery a job).
        let price = 1 + remote.length;
        let full = false;
        started.forEach((c, i) => {
          const topic = local[i]!.topic;
          price += c.claimed > 0 ? 2 + c.claimed : 1;
          // Due already when the round began, yet nothing to take: a claim that
          // found the topic's next job not yet due is not this.
          if (c.claimed === 0 && c.nextLookAt != null && c.nextLookAt <= now) {
            quietUntil.set(topic, clock.now() + s.tickPollMs);
            log({ level: "warn", msg: "a chunk got nothing yet asked to be back at once; leaving the topic for a poll", topic });
            return;
          }
          report.claimed += c.claimed;
          lastTaken.set(topic, c.claimed);
          if (c.more) backlog.add(topic);
          else backlog.delete(topic);
          full ||= c.more;
          if (c.nextLookAt != null) wakeAt = Math.min(wakeAt, c.nextLookAt);
        });
        for (const [topic, until] of quietUntil) if (until <= now) quietUntil.delete(topic);
        log({
          level: "info",
          msg: "tick round",
          round: report.rounds,
          topics: local.map((p) => p.topic),
          claimed: started.reduce((n, c) => n + c.claimed, 0),
          fannedOut: remote.length,
          subrequests: budget.spent,
          budget: s.tickSubrequestBudget,
          // When the loop looks next (a due job, the rate's next token, a lease deadline); chunks that end may bring it forward.
          nextLookInMs: Number.isFinite(wakeAt) ? Math.max(0, wakeAt - clock.now()) : null,
        });

        // Paced: rounds like this one, back to back, must not spend the budget
        // before the window ends, so a steady trickle is gathered into rounds
        // up to one poll interval apart instead of ending the loop early.
        // A backlog (a full chunk, more due topics than one poll names) is not
        // paced: it is worked off at once, handing over if the budget ends.
        const backlogged = peek.more || unserved > 0 || full;
        pacedUntil = -Infinity;
        if (!backlogged) {
          pacedUntil = now + Math.min(s.tickPollMs, ((windowEnd - clock.now()) * price) / Math.max(1, budget.left - 2));
          wakeAt = Math.max(wakeAt, pacedUntil);
        }
        pollAt = clock.now() + Math.min(wakeAt - clock.now(), pollInterval(), windowEnd - clock.now());
      } catch (err) {
        await waitOutOutage(err);
      }
    }
  } finally {
    budget.spend();
    // The lock goes first: a successor polls and claims while this loop's last
    // chunks settle (their jobs stay leased to them), so a slow handler at the
    // end of a window delays no job due meanwhile.
    // During an outage the release fails; the lock then lapses on its own.
    await lock.release(status(ended, false)).catch(() => false);
    await inFlight.allEnded();
    foldEnded();
  }
  if (failure) throw failure.error;
  if (ended === "budget" && options.handOver && windowEnd - clock.now() > s.tickPollMs) {
    // The successor takes the lock this loop just released and goes on with the window.
    try {
      report.handedOver = true;
      await options.handOver(windowEnd);
    } catch (err) {
      log({ level: "error", msg: "handing the tick over failed; the next cron goes on", error: String(err) });
    }
  }
  return finish(ended);
}
