/**
 * Labels at scale (issue 37): a topic of JOBS jobs of which 100 carry a
 * label. Listing by the label and cancelling by it touch those 100 only:
 * every command each call makes Redis run (INFO commandstats, as Upstash
 * bills them, those inside scripts included) and every script's arguments
 * (SLOWLOG) are the same beside 1,000 other jobs as beside JOBS - 100, so
 * none grows with the jobs that lack the label. And a label's index does not
 * keep the jobs that finished: a long-lived label churned through thousands
 * of jobs holds about its live ones. Runs against a Redis of its own, one
 * test after the other, with JOBS jobs: 100,000 (some 10 s on 2 cores), or
 * LABEL_SCALE_JOBS.
 */
import { afterAll, expect, inject, it } from "vitest";
import { MAX_BATCH } from "../../../src/limits.js";
import * as lua from "../../../src/queue/lua.generated.js";
import { Queue } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { testEnv } from "../self.js";
import { freshPrefix } from "./helpers.js";
import { nameScripts, redisMeter, type StepWork, totalCommands } from "./redis-meter.js";

const vars = testEnv as unknown as Record<string, string | undefined>;
const JOBS = vars.LABEL_SCALE_JOBS ? Number(vars.LABEL_SCALE_JOBS) : 100_000;
const LABELLED = 100;
const LABEL = "tenant:42";
/** The small topic's other jobs, the yardstick the large one's calls are held to. */
const FEW = 1_000;
const timeout = Math.max(120_000, JOBS * 3);

/** The Redis of this file alone: its bridge's URL and token. */
const own = { redisUrl: inject("labelBridgeUrl"), redisToken: inject("labelBridgeToken") };
const stats = redisMeter(own.redisUrl, own.redisToken);
const report: Record<string, number> = {};
afterAll(() => console.log(JSON.stringify({ labelScale: { jobs: JOBS, labelled: LABELLED, ...report } })));

function labelQueue() {
  return new Queue({ redis: createRedis({ ...own, redisTimeoutMs: 30_000 }), prefix: freshPrefix("labelscale") });
}

/** `total` jobs an hour off into `topic`, in batches; LABELLED of them, spread evenly, carry LABEL. Answers those ids in enqueue order. */
async function fill(queue: Queue, topic: string, total: number): Promise<string[]> {
  const every = Math.floor(total / LABELLED);
  const labelled: string[] = [];
  for (let at = 0; at < total; at += MAX_BATCH) {
    const n = Math.min(MAX_BATCH, total - at);
    const stored = await queue.enqueueBatch(
      Array.from({ length: n }, (_, j) => ({
        topic,
        payload: { n: at + j, pad: "x".repeat(80) },
        delayMs: 3_600_000,
        ...((at + j) % every === 0 ? { labels: [LABEL, "other"] } : {}),
      })),
    );
    for (const [j, s] of stored.entries()) if ((at + j) % every === 0) labelled.push(s.id);
  }
  return labelled;
}

/** What `work` made Redis do: its commands by name and its scripts with their argument counts. */
async function workOf<T>(work: () => Promise<T>): Promise<{ result: T; work: StepWork }> {
  await stats.fromHere();
  const result = await work();
  return { result, work: await stats.workSoFar() };
}

it(`listing and cancelling by a label of ${LABELLED} jobs: the same commands beside ${FEW.toLocaleString("en")} other jobs as beside ${(JOBS - LABELLED).toLocaleString("en")}`, {
  timeout,
}, async () => {
  await nameScripts(lua);
  const queue = labelQueue();
  // Redis learns the scripts first (a first EVALSHA of each is answered NOSCRIPT, then EVAL'd), so both topics' calls are the steady ones.
  await queue.enqueue({ topic: "warm", payload: 0, delayMs: 3_600_000, labels: [LABEL] });
  await queue.listJobs("warm", { state: "scheduled", label: LABEL });
  await queue.cancelWindow("warm", { label: LABEL });
  const calls: Record<string, { list: StepWork; cancel: StepWork }> = {};
  for (const [topic, total] of [
    ["few", FEW + LABELLED],
    ["many", JOBS],
  ] as const) {
    const labelled = await fill(queue, topic, total);
    expect(labelled).toHaveLength(LABELLED);
    const list = await workOf(() => queue.listJobs(topic, { state: "scheduled", label: LABEL, limit: 1_000 }));
    expect(list.result.jobs.map((j) => j.id)).toEqual(labelled);
    expect(list.result.jobs.every((j) => j.labels?.includes(LABEL))).toBe(true);
    expect(list.result.next).toBeNull();
    const cancel = await workOf(() => queue.cancelWindow(topic, { label: LABEL }));
    expect(cancel.result).toEqual({ cancelled: LABELLED, inflight: 0, next: null });
    calls[topic] = { list: list.work, cancel: cancel.work };
    // Cancelled, they left the label; the topic's other jobs are all still there.
    expect((await queue.listJobs(topic, { state: "scheduled", label: LABEL, limit: 1_000 })).jobs).toEqual([]);
    expect((await queue.topicStats(topic)).scheduled).toBe(total - LABELLED);
  }
  const { few, many } = calls as Record<"few" | "many", { list: StepWork; cancel: StepWork }>;
  // Not one command more, nor one argument more, with 99 times the other jobs.
  expect(many.list).toEqual(few.list);
  expect(many.cancel).toEqual(few.cancel);
  // Two requests a call: the label's walk (label-page.lua), then the jobs' metas and records' labels (read-jobs.lua) or the cancel.
  expect(many.list.scripts.map((s) => s.name)).toEqual(["labelPage", "readJobs"]);
  expect(many.cancel.scripts.map((s) => s.name)).toEqual(["labelPage", "cancelJobs"]);
  // What each script is handed is the label's jobs: a few arguments, then at most 4 per labelled job.
  for (const s of [...many.list.scripts, ...many.cancel.scripts]) expect(s.args, s.name).toBeLessThanOrEqual(20 + 4 * LABELLED);
  report.listCommands = totalCommands(many.list);
  report.cancelCommands = totalCommands(many.cancel);
  // The listing's 12 and the scheduled page's expiries beside it (one ZMSCORE of the topic's exp set).
  expect(totalCommands(many.list)).toBeLessThanOrEqual(13);
  expect(totalCommands(many.cancel)).toBeLessThanOrEqual(20);
});

it("a long-lived label's index holds about its live jobs, not the thousands that came and finished", { timeout }, async () => {
  const queue = labelQueue();
  const topic = "churn";
  const index = queue.keys.labelIndex(topic, LABEL);
  const JOBS_THROUGH = 3_000;
  const LIVE = 20;
  for (let i = 0; i < JOBS_THROUGH; i += LIVE) {
    await Promise.all(Array.from({ length: LIVE }, (_, j) => queue.enqueue({ topic, payload: i + j, labels: [LABEL] })));
    // The LIVE jobs, all due, are taken by one claim and acked: the next round starts with none live.
    const { jobs } = await queue.claim(topic, { max: 100, leaseMs: 60_000 });
    expect(jobs).toHaveLength(LIVE);
    await queue.settle(
      topic,
      jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
    );
  }
  // Every job came and went; the enqueues' probes kept the index at about twice the jobs live at once (LIVE).
  const size = Number(await stats.command(["ZCARD", index]));
  report.churnIndexSize = size;
  expect(size).toBeLessThanOrEqual(5 * LIVE);
  // A walk by the label drops what is left of them: nothing is listed, and the index is gone.
  expect((await queue.listJobs(topic, { state: "scheduled", label: LABEL })).jobs).toEqual([]);
  expect(Number(await stats.command(["EXISTS", index]))).toBe(0);
  expect(await stats.command(["SMEMBERS", queue.keys.labelSet(topic)])).toEqual([]);
});
