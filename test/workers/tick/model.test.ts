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
 * `npm test` runs MODEL_RUNS (default 15) scenarios; `npm run test:model` 500.
 * A failure prints the fast-check seed and path (and, at once, the first
 * failing run's seed and index, should shrinking outlast the timeout):
 * replay it with MODEL_SEED=<seed> MODEL_PATH=<path> npm run test:model.
 *
 * KNOWN_TODAY lists the bugs of today's code the model finds; violations they
 * explain are counted and reported, not failed. When a fix lands, delete its
 * id: the random runs then fail on it again, and its regression case below
 * must pass. MODEL_STRICT=1 treats every id as fixed.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { testEnv } from "../self.js";
import { classify, KNOWN_BUGS, runScenario, scenarioArb, type RunResult, type Scenario } from "./model.js";

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
const knownHits = new Map<string, { runs: number; violations: number; example?: string }>();

function account(r: RunResult, seed: number, index: number) {
  totals.runs++;
  for (const k of ["pushJobs", "pullJobs", "attempts", "invocations", "drains", "virtualMs", "realMs", "requests"] as const) totals[k] += r.stats[k];
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

// ---------------------------------------------------------------------------
// Regression cases: counterexamples fast-check found and shrank.
// ---------------------------------------------------------------------------

interface Regression {
  name: string;
  /** The known bug it shows, while that bug is in KNOWN_TODAY; none: it must pass. */
  bug?: string;
  scenario: Scenario;
}

const ok = { k: "ok" as const, ms: 0 };

const REGRESSIONS: Regression[] = [
  // Must pass: overlapping and duplicate invocations, retries of every backoff type, a rate limit, a pull consumer.
  {
    name: "overlapping and duplicate invocations run every attempt once, on time, at its retry time",
    scenario: {
      pollMs: 100,
      idlePeekMs: 0,
      chunk: 2,
      overlapMs: 15_000,
      topics: [
        { mode: "push", maxAttempts: 4, backoff: { type: "exponential", delay: 500, factor: 2, maxDelay: 4_000, jitter: true } },
        { mode: "push", maxAttempts: 3, backoff: { type: "schedule", delays: [1_000, 7_000] }, rate: 5, burst: 2 },
        { mode: "pull", maxAttempts: 3, backoff: { type: "fixed", delay: 2_000 } },
      ],
      batches: [
        {
          at: 0,
          producer: 0,
          jobs: [
            { topic: 0, delay: 0, plan: [{ k: "error", ms: 0 }, { k: "retry", ms: 0 }, ok] },
            { topic: 1, delay: 5_000, plan: [{ k: "retry", ms: 0, after: 1_500 }, { k: "error", ms: 0 }, ok] },
            { topic: 2, delay: 0, plan: [{ k: "error", ms: 0 }, ok] },
          ],
        },
        {
          at: 50_000,
          producer: 1,
          jobs: [
            { topic: 0, delay: 20_000, plan: Array.from({ length: 4 }, () => ({ k: "error" as const, ms: 0 })), backoff: { type: "fixed", delay: 3_000 } },
            { topic: 1, delay: 60_000, plan: [{ k: "permanent", ms: 0 }] },
            { topic: 0, delay: 14_000, plan: [ok], backoff: { type: "exponential", delay: 1_000, factor: 3, maxDelay: 20_000, jitter: false } },
          ],
        },
        {
          at: 75_000,
          producer: 0,
          jobs: [
            { topic: 0, delay: 0, plan: [{ k: "retry", ms: 0 }, ok] },
            { topic: 1, delay: 0, plan: [ok] },
            { topic: 2, delay: 3_000, plan: [{ k: "permanent", ms: 0 }] },
          ],
        },
      ],
      pauses: [],
      crons: [3_000, 12_000, 15_000],
      duplicates: [{ minute: 1, offset: 500 }],
      consumer: { everyMs: 1_500, max: 2 },
      seed: 42,
    },
  },
  {
    name: "while the tick sleeps, the producer's drain starts a job due soon on time",
    scenario: {
      pollMs: 1_000,
      idlePeekMs: 20_000,
      chunk: 100,
      overlapMs: 15_000,
      topics: [{ mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 0 } }],
      batches: [{ at: 30_000, producer: 0, jobs: [{ topic: 0, delay: 5_000, plan: [{ k: "ok", ms: 300 }] }] }],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 1_000, max: 1 },
      seed: 1,
    },
  },

  // Known bugs of today's code: shrunk counterexamples (MODEL_HUNT=<id>), except the first, written from the issue.
  {
    name: "ratePerSec 2, burst 2, concurrency 1, a fast handler: 2 jobs/s, not 1",
    bug: "concurrency-throughput",
    scenario: {
      pollMs: 1_000,
      idlePeekMs: 0,
      chunk: 100,
      overlapMs: 15_000,
      topics: [{ mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 0 }, rate: 2, burst: 2, concurrency: 1 }],
      batches: [{ at: 30_000, producer: 0, jobs: Array.from({ length: 6 }, () => ({ topic: 0, delay: 0, plan: [ok] })) }],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 1_000, max: 1 },
      seed: 1,
    },
  },
  {
    // Seed 11, path 23:1:1:…: the tick marked itself asleep at +0.3 s; a pull job due at +20.3 s is drained and pushed.
    name: "a pull-mode job is never pushed, even while the tick sleeps",
    bug: "pull-drained",
    scenario: {
      pollMs: 100,
      idlePeekMs: 20_000,
      chunk: 1,
      overlapMs: 15_000,
      topics: [{ mode: "pull", maxAttempts: 1, backoff: { type: "schedule", delays: [0] } }],
      batches: [
        {
          at: 301,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 19_999,
              plan: [
                { k: "retry", ms: 0 },
                { k: "permanent", ms: 1 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 1 },
              ],
            },
          ],
        },
      ],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 500, max: 1 },
      seed: 0,
    },
  },
  {
    // Seed 14, path 8:1:1:…: a drain runs attempt 1, which asks for a retry at once; the drain ends (its claim saw
    // nothing else due) and the retry waits ~20 s for the sleeping tick.
    name: "a retry scheduled by a drain runs at its retry time",
    bug: "drain-retry-waits",
    scenario: {
      pollMs: 100,
      idlePeekMs: 20_000,
      chunk: 100,
      overlapMs: 15_000,
      topics: [{ mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 0 } }],
      batches: [
        {
          at: 1_501,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "retry", ms: 0 },
                { k: "ok", ms: 1 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 1 },
              ],
              maxAttempts: 2,
            },
          ],
        },
      ],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 500, max: 1 },
      seed: 0,
    },
  },
  {
    // Written from the bug: topic 0's first job takes 5 s; topic 1's job and topic 0's second fall due meanwhile.
    name: "a slow handler holds back no other job: the loop claims while it runs",
    bug: "head-of-line",
    scenario: {
      pollMs: 100,
      idlePeekMs: 0,
      chunk: 100,
      overlapMs: 15_000,
      topics: [
        { mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 0 } },
        { mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 0 } },
      ],
      batches: [
        {
          at: 10_000,
          producer: 0,
          jobs: [
            { topic: 0, delay: 0, plan: [{ k: "ok", ms: 5_000 }] },
            { topic: 1, delay: 1_000, plan: [ok] },
            { topic: 0, delay: 2_000, plan: [ok] },
          ],
        },
      ],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 1_000, max: 1 },
      seed: 1,
    },
  },
  {
    // Seed 832162324, path 12 (found after the fix above): in one chunk, a job fails fast and its retry falls due
    // while another of the chunk's handlers still runs; the chunk settled only when the slow one ended.
    name: "a retry is not held back by a slow handler of its own chunk",
    bug: "head-of-line",
    scenario: {
      pollMs: 100,
      idlePeekMs: 0,
      chunk: 3,
      overlapMs: 15_000,
      topics: [{ mode: "push", maxAttempts: 2, backoff: { type: "fixed", delay: 400 } }],
      batches: [
        {
          at: 10_000,
          producer: 0,
          jobs: [
            { topic: 0, delay: 1_000, plan: [{ k: "ok", ms: 3_000 }] },
            { topic: 0, delay: 1_000, plan: [{ k: "error", ms: 100 }, ok] },
          ],
        },
      ],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 1_000, max: 1 },
      seed: 1,
    },
  },
  {
    // Seed 835171181, path 17 (after the fix above): a job settled early frees its concurrency slot, and the
    // runner claims the next job into it then, not when the rest of its chunk ends.
    name: "a job settled early frees its slot at once",
    bug: "head-of-line",
    scenario: {
      pollMs: 100,
      idlePeekMs: 0,
      chunk: 100,
      overlapMs: 15_000,
      topics: [{ mode: "push", maxAttempts: 2, backoff: { type: "fixed", delay: 200 }, concurrency: 2 }],
      batches: [
        {
          at: 10_000,
          producer: 0,
          jobs: [
            { topic: 0, delay: 1_000, plan: [{ k: "ok", ms: 3_000 }] },
            { topic: 0, delay: 1_000, plan: [{ k: "error", ms: 0 }, ok] },
            { topic: 0, delay: 1_000, plan: [ok] },
          ],
        },
      ],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 1_000, max: 1 },
      seed: 1,
    },
  },
  {
    // Seed 836524220, path 8 (after the fixes above), as fast-check generated it: while a topic's fanned-out
    // chunk is out (a slow handler), a retry that falls due waited for that chunk to return instead of running here.
    name: "a fanned-out chunk that is still out holds back no later job of its topic",
    bug: "head-of-line",
    scenario: {
      pollMs: 1000,
      idlePeekMs: 0,
      chunk: 1,
      overlapMs: 15000,
      topics: [
        {
          mode: "push",
          maxAttempts: 2,
          backoff: { type: "exponential", delay: 583, factor: 1.5, maxDelay: 18633, jitter: true },
          rate: 1,
          burst: 3,
          concurrency: 3,
        },
        { mode: "pull", maxAttempts: 4, backoff: { type: "schedule", delays: [11713] } },
      ],
      batches: [
        {
          at: 27374,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 7,
              plan: [
                { k: "error", ms: 2991 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 2997 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 3,
              backoff: { type: "schedule", delays: [13] },
            },
          ],
        },
        {
          at: 149983,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 15,
              plan: [
                { k: "retry", ms: 0, after: 4943 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 2991 },
                { k: "retry", ms: 2993 },
              ],
              maxAttempts: 1,
              backoff: { type: "exponential", delay: 3993, factor: 1.5, maxDelay: 8646, jitter: true },
            },
            {
              topic: 1,
              delay: 14,
              plan: [
                { k: "retry", ms: 2748 },
                { k: "ok", ms: 2182 },
                { k: "ok", ms: 11 },
                { k: "retry", ms: 0, after: 2 },
              ],
              backoff: { type: "exponential", delay: 107, factor: 1.5, maxDelay: 11033, jitter: false },
            },
          ],
        },
        {
          at: 149994,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 33,
              plan: [
                { k: "ok", ms: 2339 },
                { k: "ok", ms: 1939 },
                { k: "retry", ms: 0, after: 3433 },
                { k: "error", ms: 267 },
              ],
              maxAttempts: 2,
              backoff: { type: "schedule", delays: [3785, 2434, 3602] },
            },
            {
              topic: 1,
              delay: 291,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "retry", ms: 759, after: 4805 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              maxAttempts: 2,
              backoff: { type: "fixed", delay: 8892 },
            },
          ],
        },
        {
          at: 102709,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 1940,
              plan: [
                { k: "retry", ms: 0 },
                { k: "error", ms: 1749 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 890, factor: 3, maxDelay: 4817, jitter: true },
            },
          ],
        },
        {
          at: 131581,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 517,
              plan: [
                { k: "ok", ms: 854 },
                { k: "error", ms: 570 },
                { k: "ok", ms: 2495 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 2,
              backoff: { type: "exponential", delay: 2984, factor: 1, maxDelay: 14538, jitter: false },
            },
            {
              topic: 0,
              delay: 59213,
              plan: [
                { k: "error", ms: 1571 },
                { k: "permanent", ms: 1941 },
                { k: "ok", ms: 1314 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [11104, 6195, 4039] },
            },
            {
              topic: 0,
              delay: 10424,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 2585 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 3,
            },
          ],
        },
        {
          at: 30415,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 20000,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 1542 },
                { k: "error", ms: 2686 },
                { k: "retry", ms: 2937 },
              ],
              maxAttempts: 2,
              backoff: { type: "exponential", delay: 881, factor: 3, maxDelay: 13147, jitter: true },
            },
          ],
        },
        {
          at: 13,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 6765,
              plan: [
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 1819 },
                { k: "retry", ms: 1342, after: 2682 },
              ],
              maxAttempts: 1,
            },
            {
              topic: 0,
              delay: 14899,
              plan: [
                { k: "ok", ms: 2809 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 2677 },
                { k: "permanent", ms: 2835 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 3459, factor: 1, maxDelay: 18912, jitter: false },
            },
            {
              topic: 0,
              delay: 37277,
              plan: [
                { k: "ok", ms: 0 },
                { k: "retry", ms: 0, after: 3316 },
                { k: "permanent", ms: 0 },
                { k: "error", ms: 0 },
              ],
              backoff: { type: "exponential", delay: 1037, factor: 1.5, maxDelay: 14399, jitter: true },
            },
          ],
        },
        {
          at: 7,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 27661,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "retry", ms: 0, after: 3051 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 2,
            },
          ],
        },
        {
          at: 6,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 28254,
              plan: [
                { k: "retry", ms: 0, after: 1724 },
                { k: "ok", ms: 2079 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 1 },
              ],
            },
            {
              topic: 0,
              delay: 7,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 2811 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 11 },
              ],
              maxAttempts: 4,
              backoff: { type: "schedule", delays: [7971, 4569, 8698] },
            },
          ],
        },
        {
          at: 150000,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 16376,
              plan: [
                { k: "retry", ms: 0, after: 1836 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
              ],
              maxAttempts: 3,
            },
          ],
        },
      ],
      pauses: [{ topic: 0, at: 147748, forMs: 9316 }],
      crons: [7110, 1583],
      duplicates: [],
      consumer: { everyMs: 4961, max: 1 },
      seed: 29,
    } as Scenario,
  },
  {
    // Seed 836932898, path 11, as generated: the tick asleep, a concurrency-1 topic; a job stored while the
    // drain's chunk held the one slot got a drain of its own, which found the slot taken and ended; the chunk's
    // settle freed the slot, but its drain saw nothing due at its claim and ended too: the job waited 15 s.
    name: "a freed slot is used by the drain whose chunk freed it",
    scenario: {
      pollMs: 100,
      idlePeekMs: 20000,
      chunk: 100,
      overlapMs: 15000,
      topics: [
        { mode: "push", maxAttempts: 2, backoff: { type: "schedule", delays: [8859] }, concurrency: 1 },
        { mode: "pull", maxAttempts: 3, backoff: { type: "exponential", delay: 2787, factor: 1, maxDelay: 15462, jitter: false }, rate: 10, burst: 2 },
      ],
      batches: [
        {
          at: 130924,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 952,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 537 },
                { k: "retry", ms: 0, after: 2054 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 1081, factor: 1, maxDelay: 18704, jitter: false },
            },
            {
              topic: 1,
              delay: 45931,
              plan: [
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 0, after: 4297 },
                { k: "ok", ms: 1923 },
              ],
              maxAttempts: 2,
              backoff: { type: "schedule", delays: [8146, 11757, 11439] },
            },
          ],
        },
        {
          at: 6133,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 2950 },
                { k: "permanent", ms: 2917 },
              ],
              backoff: { type: "fixed", delay: 3544 },
            },
            {
              topic: 0,
              delay: 15381,
              plan: [
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 1593, after: 1225 },
              ],
              maxAttempts: 2,
              backoff: { type: "exponential", delay: 2345, factor: 1.5, maxDelay: 1399, jitter: true },
            },
          ],
        },
        {
          at: 118037,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 56,
              plan: [
                { k: "ok", ms: 1920 },
                { k: "error", ms: 88 },
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
              ],
              backoff: { type: "fixed", delay: 8661 },
            },
          ],
        },
        {
          at: 82571,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 26263,
              plan: [
                { k: "retry", ms: 1911, after: 89 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              backoff: { type: "fixed", delay: 8730 },
            },
          ],
        },
        {
          at: 39406,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "retry", ms: 0 },
                { k: "retry", ms: 0, after: 396 },
                { k: "retry", ms: 0, after: 3284 },
                { k: "error", ms: 0 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [10014] },
            },
          ],
        },
        {
          at: 5111,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 120,
              plan: [
                { k: "ok", ms: 354 },
                { k: "permanent", ms: 2915 },
                { k: "ok", ms: 1760 },
                { k: "ok", ms: 860 },
              ],
              maxAttempts: 3,
              backoff: { type: "schedule", delays: [4745, 8794, 14652] },
            },
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "ok", ms: 1062 },
                { k: "error", ms: 1344 },
                { k: "retry", ms: 0 },
                { k: "retry", ms: 42, after: 2569 },
              ],
              maxAttempts: 4,
              backoff: { type: "fixed", delay: 1463 },
            },
            {
              topic: 0,
              delay: 48908,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 1387 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              maxAttempts: 3,
              backoff: { type: "fixed", delay: 3449 },
            },
          ],
        },
        {
          at: 33567,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 202,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              backoff: { type: "fixed", delay: 2051 },
            },
            {
              topic: 1,
              delay: 60000,
              plan: [
                { k: "retry", ms: 0, after: 1456 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 2,
              backoff: { type: "schedule", delays: [5918] },
            },
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 1222 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 2895 },
                { k: "permanent", ms: 1343 },
              ],
              backoff: { type: "exponential", delay: 3972, factor: 1, maxDelay: 3914, jitter: false },
            },
          ],
        },
        {
          at: 25016,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "error", ms: 0 },
                { k: "error", ms: 1672 },
                { k: "ok", ms: 1433 },
                { k: "error", ms: 2101 },
              ],
              maxAttempts: 3,
              backoff: { type: "schedule", delays: [1326, 13904] },
            },
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 1877 },
                { k: "permanent", ms: 1942 },
              ],
              maxAttempts: 4,
              backoff: { type: "fixed", delay: 3870 },
            },
            {
              topic: 0,
              delay: 1621,
              plan: [
                { k: "permanent", ms: 1705 },
                { k: "error", ms: 1666 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 4,
              backoff: { type: "exponential", delay: 3232, factor: 2, maxDelay: 4330, jitter: true },
            },
          ],
        },
        {
          at: 57819,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 1167,
              plan: [
                { k: "retry", ms: 0 },
                { k: "permanent", ms: 977 },
                { k: "permanent", ms: 0 },
                { k: "retry", ms: 704, after: 2456 },
              ],
              maxAttempts: 3,
            },
          ],
        },
      ],
      pauses: [{ topic: 1, at: 6088, forMs: 13502 }],
      crons: [6, 6, 5, 11714],
      duplicates: [{ minute: 3, offset: 2270 }],
      consumer: { everyMs: 1139, max: 3 },
      seed: 1782822724,
    } as Scenario,
  },
  {
    // Seed 837588740, path 10, as generated: a job due just before the running loop's window ended waited for
    // the next minute's invocation, which asked for the lock only a whole poll after the holder's window.
    name: "a handover between minutes leaves no gap of a poll",
    scenario: {
      pollMs: 1000,
      idlePeekMs: 20000,
      chunk: 100,
      overlapMs: 15000,
      topics: [
        { mode: "push", maxAttempts: 1, backoff: { type: "exponential", delay: 393, factor: 1, maxDelay: 16958, jitter: true }, rate: 1, burst: 1 },
        { mode: "pull", maxAttempts: 2, backoff: { type: "schedule", delays: [6739, 1695, 11641] }, rate: 10, burst: 5, concurrency: 2 },
        { mode: "push", maxAttempts: 3, backoff: { type: "exponential", delay: 2882, factor: 1, maxDelay: 13013, jitter: false } },
      ],
      batches: [
        {
          at: 23777,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 20342,
              plan: [
                { k: "retry", ms: 2300, after: 1469 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 0, after: 121 },
                { k: "error", ms: 0 },
              ],
              maxAttempts: 2,
              backoff: { type: "fixed", delay: 474 },
            },
          ],
        },
        {
          at: 144314,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 1494,
              plan: [
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              maxAttempts: 4,
              backoff: { type: "schedule", delays: [5850, 2546, 1950] },
            },
            {
              topic: 0,
              delay: 9120,
              plan: [
                { k: "ok", ms: 2696 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              backoff: { type: "schedule", delays: [10456, 2563, 3389] },
            },
          ],
        },
        {
          at: 98229,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 8775,
              plan: [
                { k: "error", ms: 2789 },
                { k: "retry", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
            },
          ],
        },
        {
          at: 134417,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 295,
              plan: [
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              maxAttempts: 4,
              backoff: { type: "fixed", delay: 7580 },
            },
            {
              topic: 1,
              delay: 37164,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "error", ms: 1071 },
                { k: "error", ms: 336 },
                { k: "ok", ms: 440 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [5197, 5264] },
            },
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "retry", ms: 0, after: 4597 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 0, after: 4869 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 3,
            },
          ],
        },
        {
          at: 21508,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 10828,
              plan: [
                { k: "error", ms: 314 },
                { k: "retry", ms: 0, after: 2673 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 1791 },
              ],
              maxAttempts: 1,
              backoff: { type: "fixed", delay: 3350 },
            },
          ],
        },
        {
          at: 77892,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 878,
              plan: [
                { k: "retry", ms: 1722 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              backoff: { type: "fixed", delay: 6426 },
            },
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "retry", ms: 1750, after: 2473 },
                { k: "ok", ms: 2573 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 3,
              backoff: { type: "fixed", delay: 9590 },
            },
          ],
        },
        {
          at: 130693,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 258,
              plan: [
                { k: "error", ms: 1817 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 2214 },
                { k: "retry", ms: 1280, after: 3900 },
              ],
              maxAttempts: 1,
              backoff: { type: "fixed", delay: 3108 },
            },
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "retry", ms: 0 },
                { k: "error", ms: 0 },
                { k: "permanent", ms: 149 },
                { k: "ok", ms: 0 },
              ],
            },
            {
              topic: 2,
              delay: 0,
              plan: [
                { k: "ok", ms: 418 },
                { k: "error", ms: 2660 },
                { k: "permanent", ms: 2333 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 4,
            },
          ],
        },
        {
          at: 79193,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "retry", ms: 1333, after: 2825 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 2099 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 1969, factor: 2, maxDelay: 8095, jitter: false },
            },
            {
              topic: 0,
              delay: 1985,
              plan: [
                { k: "retry", ms: 0 },
                { k: "permanent", ms: 0 },
                { k: "permanent", ms: 1250 },
                { k: "permanent", ms: 0 },
              ],
              backoff: { type: "schedule", delays: [3371, 11205, 10014] },
            },
          ],
        },
        {
          at: 132711,
          producer: 0,
          jobs: [
            {
              topic: 2,
              delay: 0,
              plan: [
                { k: "retry", ms: 1746, after: 4010 },
                { k: "ok", ms: 1271 },
                { k: "permanent", ms: 2924 },
                { k: "permanent", ms: 1497 },
              ],
              backoff: { type: "exponential", delay: 743, factor: 3, maxDelay: 3710, jitter: true },
            },
          ],
        },
        {
          at: 71731,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 1993,
              plan: [
                { k: "permanent", ms: 1078 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 0, after: 4010 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 2,
            },
          ],
        },
      ],
      pauses: [{ topic: 0, at: 91357, forMs: 38377 }],
      crons: [976],
      duplicates: [],
      consumer: { everyMs: 503, max: 4 },
      seed: 2147483629,
    } as Scenario,
  },
  {
    // Seed 838061136, path 7, as generated: at its window's end a loop held the lock while its last chunk's slow
    // handler ran, so the next minute's loop could not start and a job due meanwhile waited 2 s.
    name: "a loop lets go of the lock at its window's end while its last chunks settle",
    scenario: {
      pollMs: 1000,
      idlePeekMs: 0,
      chunk: 100,
      overlapMs: 15000,
      topics: [
        { mode: "push", maxAttempts: 4, backoff: { type: "schedule", delays: [9439, 10400, 13164] }, rate: 1, burst: 3, concurrency: 2 },
        { mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 9639 }, concurrency: 3 },
      ],
      batches: [
        {
          at: 18781,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 1969,
              plan: [
                { k: "ok", ms: 2421 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 0, after: 1795 },
                { k: "retry", ms: 603, after: 2992 },
              ],
              backoff: { type: "fixed", delay: 4138 },
            },
            {
              topic: 0,
              delay: 48741,
              plan: [
                { k: "error", ms: 1907 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 0, after: 2401 },
              ],
              backoff: { type: "fixed", delay: 1045 },
            },
          ],
        },
        {
          at: 141521,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 60000,
              plan: [
                { k: "retry", ms: 2097 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 2880, after: 2585 },
                { k: "permanent", ms: 2314 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [2683] },
            },
          ],
        },
        {
          at: 124654,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "retry", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 0, after: 772 },
              ],
              backoff: { type: "exponential", delay: 1699, factor: 1.5, maxDelay: 1049, jitter: false },
            },
            {
              topic: 0,
              delay: 19999,
              plan: [
                { k: "ok", ms: 1632 },
                { k: "error", ms: 2115 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 3012, factor: 2, maxDelay: 10731, jitter: true },
            },
          ],
        },
        {
          at: 142205,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "retry", ms: 1984, after: 2194 },
                { k: "retry", ms: 949, after: 3007 },
                { k: "retry", ms: 0 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [13434, 14376, 2186] },
            },
            {
              topic: 0,
              delay: 0,
              plan: [
                { k: "retry", ms: 0, after: 2827 },
                { k: "error", ms: 96 },
                { k: "retry", ms: 475, after: 95 },
                { k: "error", ms: 149 },
              ],
            },
          ],
        },
        {
          at: 114837,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 20000,
              plan: [
                { k: "ok", ms: 2463 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 2275 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 4,
              backoff: { type: "exponential", delay: 2777, factor: 2, maxDelay: 7799, jitter: false },
            },
            {
              topic: 1,
              delay: 31307,
              plan: [
                { k: "ok", ms: 1736 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 2905 },
                { k: "ok", ms: 2572 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [13604, 10506] },
            },
            {
              topic: 0,
              delay: 1072,
              plan: [
                { k: "retry", ms: 0, after: 4540 },
                { k: "error", ms: 1196 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 0, after: 2209 },
              ],
              maxAttempts: 2,
              backoff: { type: "schedule", delays: [4601, 1251, 14988] },
            },
          ],
        },
        {
          at: 74555,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 1825 },
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
              ],
              maxAttempts: 1,
              backoff: { type: "fixed", delay: 5945 },
            },
            {
              topic: 1,
              delay: 51047,
              plan: [
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 430, after: 4286 },
              ],
              maxAttempts: 4,
              backoff: { type: "schedule", delays: [9518, 942, 12886] },
            },
            {
              topic: 1,
              delay: 970,
              plan: [
                { k: "ok", ms: 743 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [6354, 3742] },
            },
          ],
        },
        {
          at: 112334,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 23425,
              plan: [
                { k: "retry", ms: 0 },
                { k: "retry", ms: 2433 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 2380 },
              ],
              maxAttempts: 3,
            },
            {
              topic: 0,
              delay: 60000,
              plan: [
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 329 },
              ],
              maxAttempts: 3,
            },
          ],
        },
        {
          at: 68372,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 28760,
              plan: [
                { k: "ok", ms: 1563 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 400 },
                { k: "retry", ms: 0, after: 4669 },
              ],
              backoff: { type: "schedule", delays: [5215, 14612] },
            },
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 2476 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 905 },
              ],
              maxAttempts: 1,
            },
            {
              topic: 1,
              delay: 6444,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 1528 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 0, after: 2798 },
              ],
              maxAttempts: 3,
              backoff: { type: "fixed", delay: 3374 },
            },
          ],
        },
      ],
      pauses: [],
      crons: [12636, 2, 19992, 14],
      duplicates: [],
      consumer: { everyMs: 4253, max: 4 },
      seed: 20,
    } as Scenario,
  },
  {
    // Seed 838483984, path 19, shrunk: the tick asleep, a drain's slow handler failed after the sleeping tick's
    // look, and its retry fell due after the drain's horizon but before the tick's next look: 6.4 s late.
    name: "a drain follows its topic to a retry due past its horizon while the tick sleeps",
    scenario: {
      pollMs: 100,
      idlePeekMs: 20000,
      chunk: 1,
      overlapMs: 15000,
      topics: [{ mode: "push", maxAttempts: 1, backoff: { type: "fixed", delay: 0 } }],
      batches: [
        {
          at: 68607,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 703,
              plan: [
                { k: "error", ms: 0 },
                { k: "error", ms: 1389 },
                { k: "error", ms: 0 },
                { k: "error", ms: 1126 },
              ],
              maxAttempts: 3,
              backoff: { type: "schedule", delays: [13133, 12570] },
            },
            {
              topic: 0,
              delay: 1619,
              plan: [
                { k: "retry", ms: 397, after: 2056 },
                { k: "retry", ms: 1169, after: 1333 },
                { k: "ok", ms: 1382 },
                { k: "error", ms: 0 },
              ],
              backoff: { type: "fixed", delay: 4697 },
            },
            {
              topic: 0,
              delay: 60000,
              plan: [
                { k: "retry", ms: 299, after: 2861 },
                { k: "error", ms: 0 },
                { k: "retry", ms: 1763, after: 214 },
                { k: "retry", ms: 0 },
              ],
            },
          ],
        },
        {
          at: 101991,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 24685,
              plan: [
                { k: "retry", ms: 1091, after: 3829 },
                { k: "error", ms: 0 },
                { k: "error", ms: 2588 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 2,
              backoff: { type: "schedule", delays: [14699] },
            },
          ],
        },
        {
          at: 127730,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 1449,
              plan: [
                { k: "retry", ms: 0, after: 963 },
                { k: "permanent", ms: 876 },
                { k: "permanent", ms: 0 },
                { k: "retry", ms: 702, after: 1476 },
              ],
              maxAttempts: 1,
              backoff: { type: "exponential", delay: 3191, factor: 3, maxDelay: 2564, jitter: false },
            },
          ],
        },
        {
          at: 20692,
          producer: 0,
          jobs: [
            {
              topic: 0,
              delay: 37076,
              plan: [
                { k: "ok", ms: 156 },
                { k: "ok", ms: 652 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 2,
            },
            {
              topic: 0,
              delay: 19999,
              plan: [
                { k: "retry", ms: 0 },
                { k: "retry", ms: 0, after: 1180 },
                { k: "ok", ms: 340 },
                { k: "error", ms: 1671 },
              ],
              maxAttempts: 2,
              backoff: { type: "exponential", delay: 1880, factor: 2, maxDelay: 8522, jitter: false },
            },
            {
              topic: 0,
              delay: 19999,
              plan: [
                { k: "ok", ms: 0 },
                { k: "retry", ms: 1353, after: 2410 },
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
              ],
              maxAttempts: 3,
            },
          ],
        },
        {
          at: 81587,
          producer: 1,
          jobs: [
            {
              topic: 0,
              delay: 1220,
              plan: [
                { k: "permanent", ms: 2468 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 1200 },
              ],
              maxAttempts: 1,
              backoff: { type: "schedule", delays: [6332, 8854, 5871] },
            },
            {
              topic: 0,
              delay: 57214,
              plan: [
                { k: "ok", ms: 1534 },
                { k: "ok", ms: 228 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 1167 },
              ],
              maxAttempts: 2,
            },
            {
              topic: 0,
              delay: 940,
              plan: [
                { k: "retry", ms: 2138, after: 1063 },
                { k: "ok", ms: 1345 },
                { k: "ok", ms: 2369 },
                { k: "retry", ms: 0, after: 2257 },
              ],
              maxAttempts: 4,
            },
          ],
        },
      ],
      pauses: [{ topic: 0, at: 69310, forMs: 22823 }],
      crons: [19769, 7863, 9651, 13838],
      duplicates: [],
      consumer: { everyMs: 671, max: 1 },
      seed: 1471879647,
    } as Scenario,
  },
  {
    // Seed 843457663, path 6, its first 5 s: TICK_CONCURRENCY's free slots all went to a pull topic listed
    // first, whose claim took none; the push topic after it waited for a chunk to end, and none did: 1.9 s late.
    name: "free slots a claim did not take go to the topic that waited for them in the same poll",
    scenario: {
      pollMs: 1000,
      idlePeekMs: 20000,
      chunk: 100,
      overlapMs: 15000,
      topics: [
        { mode: "pull", maxAttempts: 1, backoff: { type: "schedule", delays: [4161, 2955, 11584] }, concurrency: 2 },
        { mode: "pull", maxAttempts: 4, backoff: { type: "fixed", delay: 6279 }, concurrency: 1 },
        {
          mode: "push",
          maxAttempts: 4,
          backoff: { type: "exponential", delay: 2537, factor: 1.5, maxDelay: 6409, jitter: true },
          rate: 0.5,
          burst: 3,
          concurrency: 1,
        },
        { mode: "push", maxAttempts: 4, backoff: { type: "fixed", delay: 2100 } },
      ],
      batches: [
        {
          at: 1,
          producer: 0,
          jobs: [
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "permanent", ms: 0 },
                { k: "error", ms: 0 },
                { k: "error", ms: 0 },
                { k: "error", ms: 2016 },
              ],
              maxAttempts: 2,
            },
            {
              topic: 3,
              delay: 20001,
              plan: [
                { k: "ok", ms: 377 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
              ],
              maxAttempts: 4,
              backoff: { type: "schedule", delays: [13758, 9402, 4684] },
            },
            {
              topic: 1,
              delay: 19999,
              plan: [
                { k: "ok", ms: 1439 },
                { k: "error", ms: 0 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 2722 },
              ],
              maxAttempts: 1,
            },
          ],
        },
        {
          at: 14,
          producer: 1,
          jobs: [
            {
              topic: 2,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "retry", ms: 0 },
                { k: "retry", ms: 0, after: 2724 },
                { k: "error", ms: 0 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 3421, factor: 2, maxDelay: 1568, jitter: true },
            },
          ],
        },
        {
          at: 0,
          producer: 0,
          jobs: [
            {
              topic: 2,
              delay: 15107,
              plan: [
                { k: "error", ms: 854 },
                { k: "ok", ms: 0 },
                { k: "error", ms: 0 },
                { k: "ok", ms: 1509 },
              ],
              maxAttempts: 3,
              backoff: { type: "exponential", delay: 2117, factor: 1.5, maxDelay: 15502, jitter: false },
            },
            {
              topic: 3,
              delay: 0,
              plan: [
                { k: "ok", ms: 2497 },
                { k: "ok", ms: 0 },
                { k: "permanent", ms: 0 },
                { k: "ok", ms: 2961 },
              ],
              maxAttempts: 3,
            },
          ],
        },
        {
          at: 16,
          producer: 1,
          jobs: [
            {
              topic: 2,
              delay: 74,
              plan: [
                { k: "error", ms: 0 },
                { k: "ok", ms: 2970 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 2157 },
              ],
              maxAttempts: 1,
              backoff: { type: "exponential", delay: 3543, factor: 2, maxDelay: 19154, jitter: true },
            },
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 0 },
                { k: "retry", ms: 2941, after: 2301 },
              ],
              maxAttempts: 4,
              backoff: { type: "exponential", delay: 2460, factor: 1, maxDelay: 5805, jitter: true },
            },
          ],
        },
        {
          at: 13,
          producer: 1,
          jobs: [
            {
              topic: 1,
              delay: 0,
              plan: [
                { k: "error", ms: 0 },
                { k: "ok", ms: 6 },
                { k: "ok", ms: 0 },
                { k: "ok", ms: 3000 },
              ],
              maxAttempts: 2,
            },
          ],
        },
      ],
      pauses: [],
      crons: [2],
      duplicates: [],
      consumer: { everyMs: 511, max: 2 },
      seed: 1749095785,
    } as Scenario,
  },
  {
    // The same while the tick sleeps: the producer's drain claims the topic's second job while the first runs.
    name: "a slow handler holds back no other job of its drain",
    bug: "head-of-line",
    scenario: {
      pollMs: 1_000,
      idlePeekMs: 20_000,
      chunk: 100,
      overlapMs: 15_000,
      topics: [{ mode: "push", maxAttempts: 2, backoff: { type: "fixed", delay: 500 } }],
      batches: [
        {
          at: 30_000,
          producer: 0,
          jobs: [
            { topic: 0, delay: 1_000, plan: [{ k: "ok", ms: 6_000 }] },
            { topic: 0, delay: 3_000, plan: [{ k: "error", ms: 0 }, ok] },
          ],
        },
      ],
      pauses: [],
      crons: [0],
      duplicates: [],
      consumer: { everyMs: 1_000, max: 1 },
      seed: 1,
    },
  },
];

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
