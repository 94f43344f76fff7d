/**
 * Model-based test of the tick (issue 13): random scenarios — push and pull
 * topics, delays 0–60 s, handlers that fail and succeed (some taking
 * virtual time), retries with every backoff type, rate limits and
 * concurrency, pauses and resumes, cron invocations arriving 0–20 s late
 * (overlapping windows, sometimes twice), the tick falling asleep and
 * producers draining — run on one virtual clock (sim-clock.ts) against the
 * real Redis, then checked: every attempt ran exactly once and never early,
 * on time while the topic could take it, retries at their policy's time,
 * rate and concurrency limits held, pull jobs never pushed, nothing lost,
 * every job ended as its plan says (model.ts has the checks).
 *
 * Half the scenarios add a shaped topic (issue 36, model-flow.ts): flow
 * settings (mostly parallelism 2 and 5/s burst 5 a key), up to 50 flow keys
 * (a few hot), some with settings of their own, jobs with a key, a priority
 * or neither, handlers that hang and are never settled (their leases
 * expire and are reaped), keys and the topic paused, all under a topic
 * concurrency (and sometimes rate). Checked besides: per key, jobs in flight
 * never above its parallelism and starts within its rate's GCRA bound (by
 * handler and by claim), no job of a paused key claimed, jobs of a key in
 * priority order, keys taking turns (no key served at more instants than
 * its weight allows while another waits free to start), a late job forgiven only
 * while its key or its topic could not start it, leases expiring only for
 * the attempts that hung, and after the run no key left in the calendar,
 * parked or in flight.
 *
 * Half the scenarios add cancels, upserts by job key and expiries (issue 37,
 * model-lifetime.ts): a cancelled job ends cancelled with no attempt after
 * its cancel; each job an upsert series created is delivered exactly once,
 * with the payload and due time of the last upsert that changed it, never
 * early, an ignored upsert's never, keepDue and maxWait held, and never two
 * of a key's jobs pending at once; a job with an expiresAt (or in a topic
 * with a maxLateness) either started in time or ended expired, never
 * started and not before its time.
 *
 * Half the scenarios deploy with the wake alarm, as wrangler.toml does: each
 * cron invocation looks first (cronTick), loops end when idle (sleep mark
 * "c"), and producers and drains arm a simulated alarm (sim-alarm.ts) whose
 * firing runs TickChunk.wakeTick's loop; its fault is drawn per scenario —
 * none, lost, fired twice, fired 0–2 s late, arms rejected. Checked besides:
 * a job enqueued while no loop runs starts on time (a late alarm's up to its
 * lateness past the alarm's 1 s lead; a lost alarm's or a failed arm's by the
 * next cron's look), the sleep mark is "c" while a loop holds the lock only
 * in the grace a loop that marks it takes before it ends, and with nothing
 * left the tick comes to rest (no loop, mark "c"). The run's summary says
 * how many runs drew each fault and what the alarm did.
 *
 * The tick's decisions (src/tick/decisions.ts) are driven directly too, with no Redis:
 * model-core.ts plays them out and checks the same kind of properties.
 *
 * `npm test` runs MODEL_RUNS (default 15) scenarios; `npm run test:model` 500.
 * A failure prints the fast-check seed and path (and, at once, the first
 * failing run's seed and index, should shrinking outlast the timeout):
 * replay it with MODEL_SEED=<seed> MODEL_PATH=<path> npm run test:model.
 *
 * KNOWN_TODAY lists the bugs of today's code the model finds; violations they
 * explain are counted and reported, not failed. When a fix lands, delete its
 * id: the random runs then fail on it again, and its regression case
 * (model-regressions.json) must pass. MODEL_STRICT=1 treats every id as fixed.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { testEnv } from "../self.js";
import { classify, KNOWN_BUGS, runScenario, scenarioArb, type RunResult, type Scenario } from "./model.js";
import { checkCore, coreScenarioArb } from "./model-core.js";
import regressions from "./model-regressions.json";

/**
 * Bugs the model still finds (see KNOWN_BUGS in model.ts for what each looks
 * like). Delete an id when its fix lands.
 */
const KNOWN_TODAY: string[] = [];

const vars = testEnv as unknown as Record<string, string | undefined>;
const STRICT = vars.MODEL_STRICT === "1" || vars.MODEL_STRICT === "true";
const known: ReadonlySet<string> = new Set(STRICT ? [] : KNOWN_TODAY);
const RUNS = vars.MODEL_RUNS ? Number(vars.MODEL_RUNS) : 15;
// npm test runs a fixed seed, so main stays reproducible; `npm run test:model` (MODEL_RUNS set) draws a new one each time.
const SEED = vars.MODEL_SEED ? Number(vars.MODEL_SEED) : vars.MODEL_RUNS ? Date.now() % 2 ** 31 : 20_261_201;
const PATH = vars.MODEL_PATH || undefined;
/** MODEL_HUNT=<known bug id>: instead, look for a scenario showing that bug and shrink it (for new regression cases). */
const HUNT = vars.MODEL_HUNT || undefined;
/** Runs per `it`, so a long run reports as it goes and no single test holds the pool for long. */
const BLOCK = 50;

const totals = { runs: 0, pushJobs: 0, pullJobs: 0, attempts: 0, invocations: 0, drains: 0, virtualMs: 0, realMs: 0, requests: 0, failing: 0 };
/** Runs with a shaped topic, and what they held. */
const flowTotals = { runs: 0, jobs: 0, keyed: 0, keys: 0, prioritized: 0, hung: 0, keyPauses: 0 };
/** Runs with cancels and upserts, and what they did. */
const lifetimeTotals = { runs: 0, cancels: 0, cancelled: 0, series: 0, upserts: 0, created: 0, expiring: 0, lateBound: 0, expired: 0 };
const knownHits = new Map<string, { runs: number; violations: number; example?: string }>();
/** Runs with the wake alarm, by its fault, and what it did in them. */
const alarmRuns = new Map<string, number>();
const alarmTotals = { arms: 0, firings: 0, wakes: 0, claimedByWakes: 0, looksAsleep: 0, idleEnds: 0, enqueuedUnlooped: 0, dueForAlarm: 0 };

function account(r: RunResult, seed: number, index: number) {
  totals.runs++;
  for (const k of ["pushJobs", "pullJobs", "attempts", "invocations", "drains", "virtualMs", "realMs", "requests"] as const) totals[k] += r.stats[k];
  const a = r.stats.alarm;
  alarmRuns.set(a?.fault ?? "no alarm", (alarmRuns.get(a?.fault ?? "no alarm") ?? 0) + 1);
  if (a) for (const k of Object.keys(alarmTotals) as Array<keyof typeof alarmTotals>) alarmTotals[k] += a[k];
  const f = r.stats.flow;
  if (f) {
    flowTotals.runs++;
    for (const k of ["jobs", "keyed", "keys", "prioritized", "hung", "keyPauses"] as const) flowTotals[k] += f[k];
  }
  const l = r.stats.lifetime;
  if (l) {
    lifetimeTotals.runs++;
    for (const k of ["cancels", "cancelled", "series", "upserts", "created", "expiring", "lateBound", "expired"] as const) lifetimeTotals[k] += l[k];
  }
  const c = classify(r.violations, known);
  for (const [id, vs] of c.known) {
    const h = knownHits.get(id) ?? { runs: 0, violations: 0 };
    h.runs++;
    h.violations += vs.length;
    h.example ??= `seed ${seed} path ${index}: ${vs[0]!.message}`;
    knownHits.set(id, h);
  }
  return c;
}

afterAll(() => {
  const minutes = (totals.virtualMs / 60_000).toFixed(1);
  console.log(
    `model: ${totals.runs} runs, ${totals.pushJobs} push + ${totals.pullJobs} pull jobs, ${totals.attempts} attempts, ${totals.invocations} tick invocations, ` +
      `${totals.drains} drains, ${minutes} virtual minutes, ${totals.requests} Redis requests, ${(totals.realMs / 1000).toFixed(1)} s${STRICT ? " (strict)" : ""}`,
  );
  const t = alarmTotals;
  console.log(
    `model: runs by wake alarm fault: ${[...alarmRuns].map(([f, n]) => `${f} ${n}`).join(", ")}; ${t.arms} arms, ${t.firings} alarms came due, ${t.wakes} wake loops ` +
      `(${t.claimedByWakes} attempts claimed by them), ${t.looksAsleep} cron looks left the tick asleep, ${t.idleEnds} loops ended idle; ` +
      `${t.enqueuedUnlooped} push jobs enqueued while no loop ran, ${t.dueForAlarm} of them due past a producer's drain`,
  );
  const ft = flowTotals;
  console.log(
    `model: ${ft.runs} runs with a shaped topic: ${ft.jobs} jobs (${ft.keyed} with a flow key, ${ft.jobs - ft.keyed} in the default lane, ${ft.prioritized} with a priority), ` +
      `${ft.keys} keys used, ${ft.hung} attempts hung (leases reaped), ${ft.keyPauses} key pauses`,
  );
  const lt = lifetimeTotals;
  console.log(
    `model: ${lt.runs} runs with cancels and upserts: ${lt.cancels} cancels sent (${lt.cancelled} cancelled a job), ` +
      `${lt.series} upsert series, ${lt.upserts} upserts, ${lt.created} jobs created by them; ${lt.expiring} jobs with an expiresAt and ` +
      `${lt.lateBound} in a topic with a maxLateness, ${lt.expired} ended expired`,
  );
  for (const [id, h] of knownHits) console.log(`model: known bug ${id}: ${h.violations} violations in ${h.runs} runs, e.g. ${h.example}`);
});

describe.runIf(HUNT !== undefined)("hunting a counterexample", () => {
  it(`finds and shrinks a scenario that shows ${HUNT}`, { timeout: 4 * 3_600_000 }, async () => {
    const details = await fc.check(
      fc.asyncProperty(scenarioArb(), async (sc: Scenario) => {
        const r = await runScenario(sc);
        return !classify(r.violations, new Set([HUNT!])).known.has(HUNT!);
      }),
      { numRuns: RUNS, seed: SEED },
    );
    console.log(`model: hunt ${HUNT}: ${fc.defaultReportMessage(details) ?? "not found"}`);
    if (details.counterexample) console.log(`model: hunt ${HUNT} counterexample ${JSON.stringify(details.counterexample[0])}`);
  });
});

describe.skipIf(HUNT !== undefined)("the tick, model-based", () => {
  const blocks = PATH ? 1 : Math.ceil(RUNS / BLOCK);
  for (let b = 0; b < blocks; b++) {
    const runs = PATH ? 1 : Math.min(BLOCK, RUNS - b * BLOCK);
    const seed = (SEED + b) % 2 ** 31;
    // Runs take ~1 s (at most ~10 s); past this, fast-check stops shrinking and reports what it has.
    const limitMs = runs * 10_000 + 5 * 60_000;
    it(`random scenarios ${b * BLOCK + 1}–${b * BLOCK + runs} of ${PATH ? 1 : RUNS} (seed ${seed}) hold every property`, {
      timeout: limitMs + 5 * 60_000,
    }, async () => {
      console.log(`model: seed ${seed}, ${runs} runs${PATH ? `, path ${PATH}` : ""}${STRICT ? ", strict" : ""}`);
      let index = 0;
      let reported = false;
      const details = await fc.check(
        fc.asyncProperty(scenarioArb(), async (sc: Scenario) => {
          const i = index++;
          const r = await runScenario(sc);
          const c = account(r, seed, i);
          if (c.unexplained.length === 0) return true;
          totals.failing++;
          const text = `${c.unexplained.length} unexplained violation(s):\n${c.unexplained.map((v) => `  [${v.kind}] ${v.message}`).join("\n")}\n${r.explain()}`;
          if (!reported) {
            reported = true;
            console.error(`model: first failing run: seed ${seed} path ${PATH ?? i} (before shrinking)\n${text}\nscenario ${JSON.stringify(sc)}`);
          }
          throw new Error(text);
        }),
        { numRuns: runs, seed, skipAllAfterTimeLimit: limitMs, ...(PATH ? { path: PATH } : {}) },
      );
      if (details.failed) {
        const report = fc.defaultReportMessage(details) ?? "fast-check failed";
        console.error(`model: FAILED\n${report}`);
        throw new Error(report);
      }
    });
  }
});

// The same properties' core, driven directly (model-core.ts): the decisions alone, many plays a run.
const CORE_PLAYS_PER_RUN = 20;

describe.skipIf(HUNT !== undefined)("the tick's core (src/tick/decisions.ts), model-based", () => {
  it(`${RUNS * CORE_PLAYS_PER_RUN} random plays of a loop's window or a drain's horizon (seed ${SEED}) hold every property`, { timeout: 600_000 }, () => {
    fc.assert(
      fc.property(coreScenarioArb(), (sc) => {
        const r = checkCore(sc);
        if (r.violations.length > 0) throw new Error(`${r.violations.length} violation(s), ended ${r.ended}:\n  ${r.violations.slice(0, 5).join("\n  ")}`);
      }),
      { numRuns: RUNS * CORE_PLAYS_PER_RUN, seed: SEED, ...(PATH ? { path: PATH } : {}) },
    );
  });
});

// ---------------------------------------------------------------------------
// Regression cases: counterexamples fast-check found and shrank, as it prints
// them (scenario JSON), with why each was kept, in model-regressions.json.
// ---------------------------------------------------------------------------

interface Regression {
  name: string;
  /** Where it came from (seed and path) and what it showed. */
  note?: string;
  /** The known bug it shows, while that bug is in KNOWN_TODAY; none: it must pass. */
  bug?: string;
  scenario: Scenario;
}

const REGRESSIONS: Regression[] = regressions as Regression[];

describe.skipIf(HUNT !== undefined)("regression cases", () => {
  for (const rc of REGRESSIONS) {
    const title = rc.bug && known.has(rc.bug) ? `${rc.name} (known bug ${rc.bug} of today's code: it still shows)` : rc.name;
    it(title, { timeout: 120_000 }, async () => {
      const r = await runScenario(rc.scenario);
      const c = classify(r.violations, known);
      const why = `\n${r.violations.map((v) => `  [${v.kind}] ${v.message}`).join("\n")}\n${r.explain()}`;
      if (rc.bug && known.has(rc.bug)) expect(c.known.has(rc.bug), `${rc.bug} no longer shows: delete it from KNOWN_TODAY${why}`).toBe(true);
      // Once its bug is off the list, the case must pass (other known bugs it may touch aside).
      expect(c.unexplained, `violations no known bug explains${why}`).toEqual([]);
    });
  }

  it("every known id names a bug model.ts can recognize", () => {
    const ids = new Set(KNOWN_BUGS.map((b) => b.id));
    expect(KNOWN_TODAY.filter((id) => !ids.has(id))).toEqual([]);
  });
});
