/**
 * Every operation of the Queue, once each, on a deployment prefix of its own:
 * what the key tests (lua-keys, cluster-slots) watch Redis get. The job's
 * life (enqueue, batch, upsert, claim, settle, nack, cancel, reschedule, a pull lease's extension; by flow key too), dead
 * letters (replay, purge), topics (configure, pages, stats, series, delete),
 * capped topics (an enqueue refused at the cap, one that drops the oldest;
 * the same for flow keys' caps), dedup modes (a finished-mode key, content keys),
 * expiry (a paused and a pull topic's jobs, late ones, kept as dead letters and
 * replayed),
 * pull topics, the peek, schedules and the tick's lock; and data of an
 * earlier model, so its migration runs. Only schedule-fire is not reached
 * (it needs a tick's firing).
 */
import type { Redis } from "@upstash/redis/cloudflare";
import { TickLock } from "../../src/queue/lock.js";
import { Queue } from "../../src/queue/queue.js";

export async function runEveryQueueOperation(redis: Redis, prefix: string): Promise<void> {
  const queue = new Queue({ redis, prefix });
  const now = Date.now();

  // Data of an earlier version, so its migration runs: a job in the hash model's record hash.
  await redis.hset(`${prefix}:jobs`, { "a.01MCC6XZVQJSVFFC77WBAJDD34": JSON.stringify({ payload: 1, createdAt: now }) });
  await redis.zadd(`${prefix}:t:a:due`, { score: now, member: "a.01MCC6XZVQJSVFFC77WBAJDD34" });

  // The operations of a job's life, and the admin ones around it.
  await queue.configureTopic("a", { maxAttempts: 2, ratePerSec: 1000 });
  const jobs = await Promise.all(Array.from({ length: 6 }, (_, i) => queue.enqueue({ topic: "a", payload: { i }, idempotencyKey: `k${i}` })));
  await queue.enqueue({ topic: "a", payload: { i: 0 }, idempotencyKey: "k0" });
  await queue.enqueueBatch([
    { topic: "b", payload: 1, delayMs: 60_000 },
    { topic: "b", payload: 2, delayMs: 120_000 },
  ]);
  await queue.get(jobs[0]!.id);
  await queue.reschedule(jobs[5]!.id, now + 3_600_000);
  await queue.cancel(jobs[4]!.id);
  await queue.listJobs("a", { state: "scheduled", limit: 10 });
  const claimed = await queue.claim("a", { max: 3, leaseMs: 60_000, now: now + 1_000 });
  await queue.settle("a", [...claimed.jobs.slice(0, 1).map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const }))]);
  for (const j of claimed.jobs.slice(1)) await queue.nack(j.id, j.attempt, { error: "boom", permanent: true });
  await queue.deadLetters("a", { limit: 10 });
  const dead = claimed.jobs[1];
  if (dead) await queue.deadLetter(dead.id);
  if (dead) await queue.replayDeadLetters("a", { ids: [dead.id] });
  await queue.replayDeadLettersMatching("a", {});
  // A letter for the purges to drop (the replays above took the others back).
  await queue.enqueue({ topic: "a", payload: "doomed" });
  for (const j of (await queue.claim("a", { max: 10, leaseMs: 60_000, now: now + 2_000 })).jobs)
    await queue.nack(j.id, j.attempt, { error: "x", permanent: true });
  // Dry runs (reads alone), then a replay with edits: new records, then a letter moved to a new job.
  const letter = (await queue.deadLetters("a", { limit: 1 })).entries[0]!.id;
  await queue.dryRun.replayIds("a", [letter]);
  await queue.dryRun.deadStep("a", { errorContains: "x" }, "replay");
  await queue.dryRun.deadStep("a", {}, "purge");
  await queue.dryRun.cancelIds("b", ["nope"]);
  await queue.dryRun.cancelWindow("b", {});
  const read = await queue.deadRecords([letter]);
  await queue.editDeadLetters("a", "record", [{ id: letter, value: JSON.stringify({ ...read.letters[0]!.record, payload: "fixed" }) }], ["payload"]);
  await queue.editDeadLetters("a", "move", [{ id: letter, value: "c.01MCC6XZVQJSVFFC77WBAJDD35" }], ["topic"]);
  await queue.enqueue({ topic: "a", payload: "doomed too" });
  for (const j of (await queue.claim("a", { max: 10, leaseMs: 60_000, now: now + 3_000 })).jobs)
    await queue.nack(j.id, j.attempt, { error: "x", permanent: true });
  await queue.purgeDeadLettersStep("a", {});
  await queue.purgeDeadLetters("a", {});
  // Past the retention window and the sweep's slack: the claim names the acked job and its caller sweeps it.
  await queue.claim("a", { max: 1, leaseMs: 60_000, now: Date.now() + 3_600_000 + 120_000 });
  await queue.cancelIds("b", ["nope"]);
  await queue.cancelWindow("b", {});
  // A capped topic: refused at its cap, and one that drops its oldest jobs (their keys read first).
  await queue.configureTopic("r", { maxLength: 1 });
  await queue.enqueue({ topic: "r", payload: 1 });
  await queue.enqueue({ topic: "r", payload: 2 }).catch(() => {});
  await queue.configureTopic("o", { maxLength: 1, overflow: "dropOldest" });
  await queue.enqueue({ topic: "o", payload: 1, idempotencyKey: "o1" });
  await queue.enqueueBatch([{ topic: "o", payload: 2 }]);
  await queue.configureTopic("p", { mode: "pull" });
  await queue.enqueue({ topic: "p", payload: "pulled" });
  // Dedup modes: a finished-mode key repeated while its job lives (due set, then in flight) and once it has ended; content keys, on a capped topic too.
  await queue.enqueue({ topic: "p", payload: "once", idempotencyKey: "fin", idempotencyUntil: "finished" });
  await queue.enqueue({ topic: "p", payload: "once", idempotencyKey: "fin", idempotencyUntil: "finished" });
  await queue.configureTopic("cd", { contentDedupMs: 60_000, maxLength: 10 });
  await queue.enqueueBatch([1, 1, 2].map((payload) => ({ topic: "cd", payload })));
  await queue.enqueue({ topic: "cd", payload: 1, idempotencyKey: "cd1" });
  const pulled = await queue.claim("p", { max: 5, leaseMs: 30_000, mode: "pull", now: now + 1_000 });
  await queue.enqueue({ topic: "p", payload: "once", idempotencyKey: "fin", idempotencyUntil: "finished" });
  for (const j of pulled.jobs) if (j.record.payload === "once") await queue.ack(j.id, j.attempt);
  await queue.enqueue({ topic: "p", payload: "once", idempotencyKey: "fin", idempotencyUntil: "finished" });
  // A pull consumer's lease extension, and one of a job never claimed (no meta: its record is looked for).
  for (const j of pulled.jobs) await queue.extend(j.id, j.attempt, 60_000);
  await queue.extend(jobs[5]!.id, 1, 60_000);
  // A shaped topic: flow keys with limits, a priority, the default lane, a retry and a lease reaped.
  await queue.configureTopic("f", { flow: { parallelism: 2, ratePerSec: 100 } });
  await queue.setFlowKey("f", "tenant-1", { weight: 2 });
  await queue.enqueueBatch([
    { topic: "f", payload: 1, flowKey: "tenant-1" },
    { topic: "f", payload: 2, flowKey: "tenant-2", priority: 3 },
    { topic: "f", payload: 3 },
    { topic: "f", payload: 4, flowKey: "tenant-1", delayMs: 60_000 },
  ]);
  const keyed = await queue.claim("f", { max: 10, leaseMs: 1_000, now: now + 1_000 });
  const [k1, k2] = keyed.jobs;
  if (k1) await queue.settle("f", [{ id: k1.id, attempt: k1.attempt, kind: "retry", at: now + 1_500, error: "again" }]);
  if (k2) await queue.settle("f", [{ id: k2.id, attempt: k2.attempt, kind: "ack" }]);
  await queue.claim("f", { max: 10, leaseMs: 1_000, now: now + 120_000 });
  await queue.busiestFlowKeys("f", 10);
  await queue.setFlowKey("f", "tenant-1", null);
  // Upserts under a job key: a new job; replaced into a flow key, another key and back to plain; ignored; one behind a job
  // in flight; one waiting for a retry (its meta restarted); one a capped topic refuses.
  await queue.upsert({ topic: "u", jobKey: "k", payload: 1, delayMs: 1_000, maxWaitMs: 5_000 });
  await queue.upsert({ topic: "u", jobKey: "k", payload: 2, flowKey: "t1", delayMs: 1_000, maxWaitMs: 5_000 });
  await queue.upsert({ topic: "u", jobKey: "k", payload: 3, flowKey: "t2", priority: 2, onConflict: "keepDue" });
  await queue.upsert({ topic: "u", jobKey: "k", payload: 4 });
  await queue.upsert({ topic: "u", jobKey: "k", payload: 5, onConflict: "ignore" });
  const [inFlight] = (await queue.claim("u", { max: 1, leaseMs: 60_000, now: now + 10_000 })).jobs;
  await queue.upsert({ topic: "u", jobKey: "k", payload: 6 });
  if (inFlight) await queue.settle("u", [{ id: inFlight.id, attempt: inFlight.attempt, kind: "retry", at: now + 60_000, error: "again" }]);
  await queue.upsert({ topic: "u", jobKey: "w", payload: 1 });
  const [waiting] = (await queue.claim("u", { max: 10, leaseMs: 60_000, now: now + 20_000 })).jobs.filter((j) => j.record.jobKey === "w");
  if (waiting) await queue.settle("u", [{ id: waiting.id, attempt: waiting.attempt, kind: "retry", at: now + 60_000, error: "again" }]);
  await queue.upsert({ topic: "u", jobKey: "w", payload: 2 });
  await queue.upsert({ topic: "r", jobKey: "k", payload: 3 }).catch(() => {});
  // Keyed jobs moved and ended one by one (their keys' index with them), a keyed letter replayed.
  const [moved, cancelled, doomed] = await queue.enqueueBatch([1, 2, 3].map((i) => ({ topic: "f", payload: i, flowKey: "tenant-3", delayMs: 600_000 })));
  await queue.reschedule(moved!.id, now + 900_000);
  await queue.cancel(cancelled!.id);
  await queue.reschedule(doomed!.id, now);
  for (const j of (await queue.claim("f", { max: 10, leaseMs: 1_000, now: now + 200_000 })).jobs) {
    await queue.settle("f", [{ id: j.id, attempt: j.attempt, kind: "dead", error: "x" }]);
  }
  await queue.replayDeadLettersMatching("f", {});
  // A shaped dropOldest topic: its keyed jobs dropped (one never claimed: its key read from its record).
  await queue.configureTopic("fo", { maxLength: 1, overflow: "dropOldest" });
  await queue.enqueue({ topic: "fo", payload: 1, flowKey: "tenant-1" });
  await queue.enqueue({ topic: "fo", payload: 2, flowKey: "tenant-2" });
  // Flow keys' caps: a dropOldest key drops its oldest (its index members read first), a reject one refuses.
  await queue.configureTopic("fk", { maxKeyLength: 2, overflow: "dropOldest" });
  await queue.setFlowKey("fk", "tenant-1", { maxKeyLength: 1 });
  await queue.enqueue({ topic: "fk", payload: 1, flowKey: "tenant-1" });
  await queue.enqueue({ topic: "fk", payload: 2, flowKey: "tenant-1" });
  await queue.configureTopic("fr", { maxKeyLength: 1 });
  await queue.enqueue({ topic: "fr", payload: 1, flowKey: "tenant-1" });
  await queue.enqueue({ topic: "fr", payload: 2, flowKey: "tenant-1" }).catch(() => {});
  await queue.flowKeyLengths("fk", ["tenant-1"]);
  // Keyed jobs listed and cancelled in bulk: by flow key, by ids (one never claimed: its key read from its record), by due window.
  const fc = await queue.enqueueBatch([
    { topic: "fc", payload: 1, flowKey: "tenant-2" },
    { topic: "fc", payload: 2, flowKey: "tenant-3" },
    { topic: "fc", payload: 3, priority: 2 },
    { topic: "fc", payload: 4, flowKey: "tenant-2", delayMs: 60_000 },
    { topic: "fc", payload: 5, flowKey: "tenant-4" },
  ]);
  await queue.listJobs("fc", { state: "scheduled", flowKey: "tenant-2", limit: 10 });
  await queue.listJobs("fc", { state: "inflight", flowKey: "tenant-2", limit: 10 });
  await queue.cancelWindow("fc", { flowKey: "tenant-2", dueTo: now + 120_000 });
  await queue.cancelIds("fc", [fc[1]!.id]);
  await queue.cancelWindow("fc", {});
  // Labels: labelled jobs (the script, a batch, upserts that change them), listed, cancelled, replayed and purged by a
  // label (dry runs too), a labelled topic deleted with its indexes.
  await queue.configureTopic("l", { mode: "pull" });
  await queue.enqueue({ topic: "l", payload: 1, labels: ["t:1", "x"] });
  await queue.enqueueBatch([
    { topic: "l", payload: 2, labels: ["t:1"] },
    { topic: "l", payload: 3, labels: ["t:2"], flowKey: "tenant-1" },
    { topic: "l", payload: 4, labels: ["t:1"], delayMs: 60_000 },
  ]);
  await queue.upsert({ topic: "l", jobKey: "k", payload: 1, delayMs: 60_000, labels: ["t:1", "old"] });
  await queue.upsert({ topic: "l", jobKey: "k", payload: 2, delayMs: 60_000, labels: ["t:1", "new"] });
  await queue.listJobs("l", { state: "scheduled", label: "t:1", limit: 10 });
  for (const j of (await queue.claim("l", { max: 2, leaseMs: 60_000, mode: "pull", now: now + 1_000 })).jobs)
    await queue.nack(j.id, j.attempt, { error: "x", permanent: true });
  await queue.listJobs("l", { state: "inflight", label: "t:1", limit: 10 });
  await queue.deadLetters("l", { label: "t:1", limit: 10 });
  await queue.dryRun.cancelWindow("l", { label: "t:2" });
  await queue.dryRun.deadStep("l", { label: "x" }, "replay");
  await queue.dryRun.deadStep("l", { label: "t:1" }, "purge");
  await queue.cancelWindow("l", { label: "t:2" });
  await queue.replayDeadLettersStep("l", { label: "x" });
  await queue.purgeDeadLettersStep("l", { label: "t:1" });
  await queue.deleteTopic("l", { purge: true });
  // Expiry (lua/lib/expire.lua): a paused topic's jobs past their expiresAt, by the tick's push claim (the first claim learns
  // the mark, the next reads them); a pull topic's the same way; jobs a claim would start past their expiresAt or its
  // maxLateness, plain and keyed, kept as dead letters; a job with an expiry cancelled, upserted, purged.
  await queue.configureTopic("x", { paused: true });
  await queue.enqueueBatch([
    { topic: "x", payload: 1, expiresAt: now + 5_000 },
    { topic: "x", payload: 2, flowKey: "tenant-1", expiresAt: now + 5_000 },
    { topic: "x", payload: 3, expiresAt: now + 60_000 },
  ]);
  await queue.claim("x", { max: 10, leaseMs: 1_000, now: now + 10_000 });
  await queue.claim("x", { max: 10, leaseMs: 1_000, now: now + 10_000 });
  await queue.configureTopic("xp", { mode: "pull" });
  await queue.enqueue({ topic: "xp", payload: 1, expiresAt: now + 5_000 });
  await queue.claim("xp", { max: 10, leaseMs: 1_000, now: now + 10_000 });
  await queue.claim("xp", { max: 10, leaseMs: 1_000, now: now + 10_000 });
  await queue.configureTopic("xl", { maxLateness: 1_000, keepExpired: true });
  const late = await queue.enqueueBatch([
    { topic: "xl", payload: 1 },
    { topic: "xl", payload: 2, flowKey: "tenant-1" },
    { topic: "xl", payload: 3, expiresAt: now + 5_000 },
    { topic: "xl", payload: 4, flowKey: "tenant-2", expiresAt: now + 5_000, delayMs: 1_000 },
  ]);
  await queue.claim("xl", { max: 10, leaseMs: 1_000, now: now + 10_000 });
  await queue.replayDeadLetters("xl", { ids: late.map((j) => j.id) });
  const [expiring] = await queue.enqueueBatch([{ topic: "xc", payload: 1, expiresAt: now + 60_000 }]);
  await queue.cancel(expiring!.id);
  await queue.cancelIds("xc", [(await queue.enqueue({ topic: "xc", payload: 2, expiresAt: now + 60_000 })).id]);
  await queue.upsert({ topic: "xc", jobKey: "e", payload: 1, expiresAt: now + 60_000 });
  await queue.upsert({ topic: "xc", jobKey: "e", payload: 2 });
  await queue.enqueue({ topic: "xc", payload: 3, expiresAt: now + 60_000 });
  await queue.deleteTopic("xc", { purge: true });
  // A shaped topic purged: its keys' index first, then its other keyed jobs.
  await queue.deleteTopic("fo", { purge: true });
  await queue.topicStats("a");
  await queue.topicSeries("a", { minutes: 5, now });
  await queue.topicCount();
  await queue.listTopicsPage({ limit: 10 });
  await queue.listTopics();
  await queue.peek({ now: now + 1_000, limit: 10 });
  await queue.tickStatus();
  await queue.look(now);
  await queue.deleteTopic("b", { purge: true });

  // The recurring schedules and the tick's lock.
  const definition = { every: 60_000, timezone: "UTC", grace: 60_000, anchor: now, createdAt: now, updatedAt: now, job: { topic: "s", payload: "tick" } };
  const state = { rev: 1, next: now, runs: 0, lastRunAt: null, lastJobId: null, paused: false };
  await queue.schedules.write("sch", 0, definition, state);
  await queue.schedules.due(now + 1_000);
  await queue.schedules.delete("sch");
  const lock = new TickLock(redis, prefix);
  await lock.acquire(10_000, now + 10_000);
  await lock.release();
}
