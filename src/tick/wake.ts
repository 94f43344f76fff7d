import type { Env, Settings } from "../env.js";
import type { Queue, TickSleep } from "../queue/queue.js";
import { fireDueSchedules } from "../schedules/fire.js";
import { realClock, type Clock } from "./clock.js";
import { unlookedUntil } from "./cron-look.js";
import { armWakeAlarm } from "./wake-alarm.js";

/**
 * How stale a producer's knowledge of whether the tick sleeps may be. The
 * tick keeps polling this long (plus a poll) after marking itself asleep, so
 * a producer that has not seen the mark yet loses nothing.
 */
export const SLEEP_MARK_STALENESS_MS = 1_000;

/** Each shard's sleep mark as this isolate last read it, by key prefix (one entry per shard of each deployment it serves). */
const known = new Map<string, { at: number; sleep: TickSleep }>();

/** The sleep mark of `queue`'s shard, read at most once a SLEEP_MARK_STALENESS_MS per shard and isolate. */
async function tickSleep(queue: Queue, now: number): Promise<TickSleep> {
  const prefix = queue.keys.prefix;
  const seen = known.get(prefix);
  if (seen && now - seen.at < SLEEP_MARK_STALENESS_MS) return seen.sleep;
  const sleep = await queue.tickSleep();
  known.set(prefix, { at: now, sleep });
  return sleep;
}

/** Whether no loop looks before `dueAt`: the tick sleeps, and (past the idle look's horizon) its loop ended idle. */
const unlookedAt = (sleep: TickSleep, s: Settings, now: number, dueAt: number) =>
  sleep !== null && (dueAt - now <= s.tickIdlePeekMs || (sleep === "c" && dueAt < unlookedUntil(now)));

/**
 * Called by the producer after it stored jobs. While the tick sleeps (it
 * found nothing due within TICK_IDLE_PEEK_MS and now looks only that often),
 * jobs due sooner are started from this invocation: at the earliest one's due
 * time it asks the TickChunk entrypoint to drain the topic over the idle
 * horizon, chunk after chunk as jobs fall due. Claims are atomic, so
 * a tick that wakes meanwhile never delivers a job twice. While no loop runs
 * at all (it ended idle: sleep mark "c"), a job due later but before the next
 * cron's look arms the wake alarm (src/tick/wake-alarm.ts), which starts a
 * loop. Best effort: if this fails, the tick's next look finds the job (at
 * most TICK_IDLE_PEEK_MS late, or a minute without a loop).
 */
export async function wakeForSoonJobs(args: {
  env: Env;
  settings: Settings;
  queue: Queue;
  jobs: Array<{ topic: string; dueAt: number }>;
  waitUntil: (work: Promise<unknown>) => void;
  /** Default the real clock. */
  clock?: Clock;
  /** Runs a drain of `topic` (src/tick/drain.ts). Default the TickChunk entrypoint's on `queue`'s shard, through TICK_RUNNER. */
  drain?: (topic: string, horizonMs: number) => Promise<unknown>;
}): Promise<void> {
  const { env, settings: s } = args;
  const clock = args.clock ?? realClock;
  const runner = env.TICK_RUNNER;
  // The drain works on the shard these jobs were stored on.
  const drain = args.drain ?? (runner ? (topic: string, horizonMs: number) => runner.drain(topic, horizonMs, 0, args.queue.shard) : undefined);
  if (!drain || s.tickIdlePeekMs === 0) return;
  const now = clock.now();
  const soon = args.jobs.filter((j) => j.dueAt - now <= s.tickIdlePeekMs);
  // Later jobs matter only with the alarm: without it a loop always looks within a peek.
  const later = env.TICK_ALARM ? args.jobs.filter((j) => j.dueAt - now > s.tickIdlePeekMs && j.dueAt < unlookedUntil(now)) : [];
  if (soon.length === 0 && later.length === 0) return;
  let sleep: TickSleep;
  try {
    sleep = await tickSleep(args.queue, now);
  } catch {
    return;
  }
  if (sleep === "c" && later.length > 0) armAlarm(args, Math.min(...later.map((j) => j.dueAt)), now);
  if (sleep !== null && soon.length > 0) startDrains(args, soon, drain, clock);
}

/** Arms the wake alarm for a job due at `dueAt` (in waitUntil), logging a failure. */
function armAlarm(args: { env: Env; queue: Queue; waitUntil: (work: Promise<unknown>) => void }, dueAt: number, now: number): void {
  const arming = armWakeAlarm(args.env, args.queue.keys.prefix, dueAt, now);
  if (arming)
    args.waitUntil(arming.catch((err: unknown) => console.error(JSON.stringify({ level: "error", msg: "arming the wake alarm failed", error: String(err) }))));
}

/**
 * One drain per topic, from its earliest job due soon: it follows the
 * topic's later due times itself. A drain this isolate asked for, that has
 * not begun yet and reaches past these jobs, covers them: it looks at the
 * topic when it begins. One that has begun may have decided to end already.
 */
function startDrains(
  args: { settings: Settings; queue: Queue; waitUntil: (work: Promise<unknown>) => void },
  soon: Array<{ topic: string; dueAt: number }>,
  drain: (topic: string, horizonMs: number) => Promise<unknown>,
  clock: Clock,
): void {
  const s = args.settings;
  const earliest = new Map<string, number>();
  for (const j of soon) earliest.set(j.topic, Math.min(earliest.get(j.topic) ?? Infinity, j.dueAt));
  const latest = Math.max(...soon.map((j) => j.dueAt));
  for (const [topic, dueAt] of earliest) {
    const running = draining.get(key(args.queue, topic));
    if (running !== undefined && !running.begun && running.from <= dueAt && running.until >= latest) continue;
    const until = clock.now() + s.tickIdlePeekMs;
    const entry = { from: dueAt, until, begun: false };
    draining.set(key(args.queue, topic), entry);
    args.waitUntil(
      clock
        .sleep(Math.max(0, dueAt - clock.now()))
        .then(() => {
          entry.begun = true;
          return drain(topic, Math.max(0, until - clock.now()));
        })
        .catch((err: unknown) => console.error(JSON.stringify({ level: "error", msg: "waking jobs due soon failed", topic, error: String(err) })))
        .finally(() => {
          if (draining.get(key(args.queue, topic)) === entry) draining.delete(key(args.queue, topic));
        }),
    );
  }
}

/** Drains this isolate has asked for, per deployment and topic: from when, until when, and whether it has begun. */
const draining = new Map<string, { from: number; until: number; begun: boolean }>();
const key = (queue: Queue, topic: string) => `${queue.keys.prefix}\n${topic}`;

/**
 * Called by the producer after a schedule was written (created, replaced,
 * resumed) with its next occurrence at `nextAt`. While the tick sleeps it
 * would find the schedule only at its next look (up to TICK_IDLE_PEEK_MS
 * later), so this invocation fires the occurrences that come within that
 * horizon itself, at their times, and starts the jobs they store as the
 * producer starts any job due soon. Fires are fenced, so a tick that wakes
 * meanwhile and fires too never stores a second job for an occurrence.
 */
export async function wakeForSoonSchedule(args: {
  env: Env;
  settings: Settings;
  queue: Queue;
  nextAt: number | null;
  waitUntil: (work: Promise<unknown>) => void;
  clock?: Clock;
}): Promise<void> {
  const s = args.settings;
  const clock = args.clock ?? realClock;
  if (args.nextAt === null || s.tickIdlePeekMs === 0 || !args.env.TICK_RUNNER) return;
  const now = clock.now();
  const until = now + s.tickIdlePeekMs;
  if (!unlookedAt(args.env.TICK_ALARM ? "c" : "1", s, now, args.nextAt)) return;
  let sleep: TickSleep;
  try {
    sleep = await tickSleep(args.queue, now);
  } catch {
    return;
  }
  if (!unlookedAt(sleep, s, now, args.nextAt)) return;
  // Past the peek while no loop runs: the alarm's loop fires it.
  if (args.nextAt > until) return armAlarm(args, args.nextAt, now);
  let next: number | null = args.nextAt;
  args.waitUntil(
    (async () => {
      while (next !== null && next <= until) {
        await clock.sleep(Math.max(0, next - clock.now()));
        // The sleeping tick wakes a poll before the index's next score and fires from then on; a
        // producer that fired beside it would take the occurrence from a tick that already looks.
        if (!(await args.queue.tickAsleep())) break;
        const fired = await fireDueSchedules(args.queue.schedules, clock.now());
        if (fired.jobs.length > 0) {
          await wakeForSoonJobs({ ...args, jobs: fired.jobs.map((j) => ({ topic: j.topic, dueAt: j.occurrence })), clock });
        }
        // Nothing fired and nothing later: someone else fired it, or it changed.
        next = fired.nextAt !== null && fired.nextAt > clock.now() ? fired.nextAt : fired.jobs.length > 0 ? fired.nextAt : null;
      }
    })().catch((err: unknown) => console.error(JSON.stringify({ level: "error", msg: "firing schedules due soon failed", error: String(err) }))),
  );
}
