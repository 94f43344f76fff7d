/**
 * What a job costs in Redis commands (as Upstash bills them: INFO
 * commandstats counts the commands scripts run too) and in REST requests
 * (Workers subrequests). Runs against a Redis of its own so the counts are exact.
 */
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { Queue } from "../../../src/queue/queue.js";
import { createRedis } from "../../../src/queue/redis.js";
import { normalizeBackoff } from "../../../src/queue/policy/backoff.js";
import { freshPrefix } from "./helpers.js";
import { redisMeter } from "./redis-meter.js";

const redis = createRedis({ redisUrl: inject("meterBridgeUrl"), redisToken: inject("meterBridgeToken"), redisTimeoutMs: 30_000 });
const report: Record<string, number> = {};

// Counts REST requests to the metered Redis (every one is a Workers subrequest).
let requests = 0;
const realFetch = globalThis.fetch;
beforeAll(() => {
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    if (String(input instanceof Request ? input.url : input).startsWith(inject("meterBridgeUrl"))) requests++;
    return realFetch(input, init);
  }) as typeof fetch;
});
afterAll(() => {
  globalThis.fetch = realFetch;
  console.log(JSON.stringify({ costPerJob: report }));
});

// The metering's own requests go through the unwrapped fetch: they are not the work's.
const stats = redisMeter(inject("meterBridgeUrl"), inject("meterBridgeToken"), realFetch);

async function meter<T>(work: () => Promise<T>): Promise<{ commands: number; requests: number; result: T }> {
  let made = 0;
  const m = await stats.meter(async () => {
    requests = 0;
    const result = await work();
    made = requests;
    return result;
  });
  return { commands: m.commands, requests: made, result: m.result };
}

/** Reports each path's Redis commands and requests per job (of `jobs`) under `name`, holding its requests to `requestsPerJob`; returns its commands per job. */
function reportPaths(
  name: string,
  paths: Record<string, { commands: number; requests: number }>,
  jobs: number,
  requestsPerJob: number,
): Record<string, number> {
  const commands: Record<string, number> = {};
  for (const [path, m] of Object.entries(paths)) {
    commands[path] = m.commands / jobs;
    report[`${name}_${path}_commands`] = commands[path];
    report[`${name}_${path}_requests`] = m.requests / jobs;
    expect(m.requests / jobs, path).toBe(requestsPerJob);
  }
  return commands;
}

const N = 10_000;
const CHUNK = 100;

it(`${N} jobs through enqueue → claim → ack in chunks of ${CHUNK}: ≤ 4 Redis commands per job`, { timeout: 180_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  // Producers enqueue one job per call; 50 calls in flight at a time.
  const enqueue = await meter(async () => {
    for (let i = 0; i < N; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => queue.enqueue({ topic: "bill", payload: { n: i + j, pad: "x".repeat(80) } })));
    }
  });
  const drain = await meter(async () => {
    let done = 0;
    for (;;) {
      const { jobs } = await queue.claim("bill", { max: CHUNK, leaseMs: 60_000 });
      if (jobs.length === 0) return done;
      await queue.settle(
        "bill",
        jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
      );
      done += jobs.length;
    }
  });
  expect(drain.result).toBe(N);
  report.enqueueCommands = enqueue.commands / N;
  report.claimAndAckCommands = drain.commands / N;
  report.successCommands = (enqueue.commands + drain.commands) / N;
  report.enqueueRequests = enqueue.requests / N;
  report.claimAndAckRequests = drain.requests / N;
  expect(report.successCommands).toBeLessThanOrEqual(4);
});

it("an enqueue into a capped topic: below a reject topic's maxLength, and at a dropOldest topic's, where each drops one", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 1_000;
  await queue.configureTopic("gate", { maxLength: 10 * M });
  await queue.configureTopic("ring", { maxLength: M, overflow: "dropOldest" });
  await queue.enqueueBatch(Array.from({ length: M }, (_, i) => ({ topic: "ring", payload: i, delayMs: 3_600_000 })));
  // One at a time: what a single enqueue costs on its own (the registering first one included, as above).
  const gate = await meter(async () => {
    for (let i = 0; i < M; i++) await queue.enqueue({ topic: "gate", payload: { n: i, pad: "x".repeat(80) } });
  });
  const ring = await meter(async () => {
    for (let i = 0; i < M; i++) await queue.enqueue({ topic: "ring", payload: { n: i, pad: "x".repeat(80) }, delayMs: 3_600_000 });
  });
  expect(await queue.topicStats("ring")).toMatchObject({ scheduled: M, counters: { dropped: M } });
  expect((await queue.topicStats("gate")).scheduled).toBe(M);
  report.cappedRejectEnqueueCommands = gate.commands / M;
  report.cappedRejectEnqueueRequests = gate.requests / M;
  report.cappedDropOldestEnqueueCommands = ring.commands / M;
  report.cappedDropOldestEnqueueRequests = ring.requests / M;
});

it("an enqueue of a flow key's job into a topic capping its keys: below a reject key's maxKeyLength, and at a dropOldest key's, where each drops one", {
  timeout: 120_000,
}, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 1_000;
  await queue.configureTopic("kgate", { maxKeyLength: 10 * M });
  await queue.configureTopic("kring", { maxKeyLength: M, overflow: "dropOldest" });
  await queue.enqueueBatch(Array.from({ length: M }, (_, i) => ({ topic: "kring", payload: i, flowKey: "k", delayMs: 3_600_000 })));
  const gate = await meter(async () => {
    for (let i = 0; i < M; i++) await queue.enqueue({ topic: "kgate", payload: { n: i, pad: "x".repeat(80) }, flowKey: "k" });
  });
  const ring = await meter(async () => {
    for (let i = 0; i < M; i++) await queue.enqueue({ topic: "kring", payload: { n: i, pad: "x".repeat(80) }, flowKey: "k", delayMs: 3_600_000 });
  });
  expect(await queue.flowKeyLengths("kring", ["k"])).toEqual([M]);
  expect((await queue.topicStats("kring")).counters.dropped).toBe(M);
  report.keyCappedRejectEnqueueCommands = gate.commands / M;
  report.keyCappedRejectEnqueueRequests = gate.requests / M;
  report.keyCappedDropOldestEnqueueCommands = ring.commands / M;
  report.keyCappedDropOldestEnqueueRequests = ring.requests / M;
});

it("jobs with an expiresAt: enqueue, claim + ack, and ending expired behind a paused topic, per job", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 1_000;
  const now = Date.now();
  const enqueue = await meter(async () => {
    for (let i = 0; i < M; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => queue.enqueue({ topic: "ttl", payload: i + j, expiresAt: now + 3_600_000 })));
    }
  });
  const drain = await meter(async () => {
    for (;;) {
      const { jobs } = await queue.claim("ttl", { max: CHUNK, leaseMs: 60_000 });
      if (jobs.length === 0) return;
      await queue.settle(
        "ttl",
        jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
      );
    }
  });
  await queue.configureTopic("gone", { paused: true });
  await queue.enqueueBatch(Array.from({ length: M }, (_, i) => ({ topic: "gone", payload: i, expiresAt: now + 1_000 })));
  // The tick's claims once they passed: the first learns the topic's mark, the next two end 500 each.
  const expire = await meter(async () => {
    for (let i = 0; i < 3; i++) await queue.claim("gone", { max: CHUNK, leaseMs: 60_000, now: now + 2_000 });
  });
  expect((await queue.topicStats("gone")).counters.expired).toBe(M);
  expect((await queue.topicStats("ttl")).counters).toMatchObject({ succeeded: M, expired: 0 });
  report.expiringEnqueueCommands = enqueue.commands / M;
  report.expiringClaimAndAckCommands = drain.commands / M;
  report.expiredCommands = expire.commands / M;
  report.expiredRequests = expire.requests / M;
  // The pipeline's three commands, and the topic's mark and exp set (the first 50, registering the topic, take the script).
  expect(enqueue.commands / M).toBeLessThanOrEqual(5.25);
  // A claim of a topic with expiring jobs reads them (ZRANGE), checks its picks (ZMSCORE) and takes those it starts out (ZREM).
  expect(drain.commands / M).toBeLessThanOrEqual(0.35);
});

it("a failed attempt and dead-lettering, per job", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const backoff = normalizeBackoff({ type: "fixed", delay: 0 });
  await queue.enqueueBatch(Array.from({ length: 1_000 }, (_, i) => ({ topic: "fail", payload: i, backoff, maxAttempts: 2 })));
  const cycle = async (kind: "retry" | "dead") => {
    let n = 0;
    for (;;) {
      const { jobs } = await queue.claim("fail", { max: CHUNK, leaseMs: 60_000 });
      if (jobs.length === 0) return n;
      await queue.settle(
        "fail",
        jobs.map((j) =>
          kind === "retry"
            ? { id: j.id, attempt: j.attempt, kind, at: Date.now(), error: "HTTP 503" }
            : { id: j.id, attempt: j.attempt, kind, error: "HTTP 500" },
        ),
      );
      n += jobs.length;
      if (kind === "retry" && n >= 1_000) return n;
    }
  };
  const retry = await meter(() => cycle("retry"));
  const dead = await meter(() => cycle("dead"));
  expect(retry.result).toBe(1_000);
  expect(dead.result).toBe(1_000);
  report.failedAttemptCommands = retry.commands / 1_000;
  report.deadLetterCommands = dead.commands / 1_000;
  expect((await queue.topicStats("fail")).counters).toMatchObject({ retried: 1_000, dead: 1_000 });
  // What was metered wrote each job's attempt history (it rides on the writes the scripts make anyway).
  const [letter] = (await queue.deadLetters("fail", { limit: 1 })).entries;
  expect(letter!.history.map((h) => [h.outcome, h.error])).toEqual([
    ["retry", "HTTP 503"],
    ["dead", "HTTP 500"],
  ]);
});

it("an upsert that changes its pending job's labels is still the pointer's read and one script call: the pointer lists them", {
  timeout: 120_000,
}, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 50;
  const upsertAll = (labels: string[]) =>
    meter(async () => {
      for (let i = 0; i < M; i++) await queue.upsert({ topic: "rel", jobKey: `k-${i}`, payload: i, delayMs: 60_000, labels });
    });
  await queue.upsert({ topic: "rel", jobKey: "first", payload: 0 });
  expect((await upsertAll(["a", "b"])).requests / M).toBe(2);
  // Both labels dropped for another: the script needs their indexes, which the pointer named.
  const relabelled = await upsertAll(["c"]);
  expect(relabelled.requests / M).toBe(2);
  expect(relabelled.result).toBeUndefined();
  expect((await queue.listJobs("rel", { state: "scheduled", label: "a", limit: 100 })).jobs).toEqual([]);
  expect((await queue.listJobs("rel", { state: "scheduled", label: "c", limit: 100 })).jobs).toHaveLength(M);
  // And back to none: the pointer says so too, and the next relabelling is one call again.
  expect((await upsertAll([])).requests / M).toBe(2);
  expect((await upsertAll(["d"])).requests / M).toBe(2);
  expect((await queue.listJobs("rel", { state: "scheduled", label: "c", limit: 100 })).jobs).toEqual([]);
});

it("an upsert by job key, per path: a plain read of the pointer and one script call", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 200;
  const keys = Array.from({ length: M }, (_, i) => `user-${i}`);
  const upsertAll = (topic: string, extra: { onConflict?: "ignore"; flowKey?: string } = {}) =>
    meter(async () => {
      for (const [i, jobKey] of keys.entries()) await queue.upsert({ topic, jobKey, payload: { n: i, pad: "x".repeat(80) }, delayMs: 60_000, ...extra });
    });
  // The topic registered (and its cap read) before, as a producer's steady upserts find it.
  await queue.upsert({ topic: "deb", jobKey: "first", payload: 0 });
  const paths = {
    created: await upsertAll("deb"),
    replaced: await upsertAll("deb"),
    ignored: await upsertAll("deb", { onConflict: "ignore" }),
    replacedKeyed: await upsertAll("deb", { flowKey: "tenant" }),
  };
  // Their jobs finished (claimed and acked past their due time): each pointer is left behind, and the next upsert creates.
  for (;;) {
    const { jobs } = await queue.claim("deb", { max: 100, leaseMs: 60_000, now: Date.now() + 120_000 });
    if (jobs.length === 0) break;
    await queue.settle(
      "deb",
      jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "ack" as const })),
    );
  }
  const createdOverStale = await upsertAll("deb");
  const all = { ...paths, createdOverStale };
  reportPaths("upsert", all, M, 2);
  // GET, EVALSHA, the script's GET of the pointer, then: ZSCORE (ignored); HSET jobKeys, SET record, ZADD due, ZADD index, SET pointer
  // (created), with 2 ZSCOREs (due set, fdue) of the job left behind; ZSCORE, GET record, SET record, GET meta, ZADD due,
  // ZADD index (replaced); into a flow key, HSET shaped, ZADD fdue, ZADD fsched, ZADD fkidx and ZREM due for the ZADD due.
  expect(all.ignored.commands / M).toBe(4);
  expect(all.created.commands / M).toBe(8);
  expect(all.createdOverStale.commands / M).toBe(10);
  expect(all.replaced.commands / M).toBe(9);
  expect(all.replacedKeyed.commands / M).toBe(13);
  expect(await queue.topicStats("deb")).toMatchObject({ scheduled: M });
});

it("dedup modes, per path: an idempotency key held until its job finished, and a topic's content dedup", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 200;
  const each = (work: (i: number) => Promise<unknown>) =>
    meter(async () => {
      for (let i = 0; i < M; i++) await work(i);
    });
  const finished = (topic: string, i: number) =>
    queue.enqueue({ topic, payload: { n: i, pad: "x".repeat(80) }, delayMs: 60_000, idempotencyKey: `order-${i}`, idempotencyUntil: "finished" });
  const byContent = (i: number, idempotencyKey?: string) =>
    queue.enqueue({ topic: "same", payload: { n: i, pad: "x".repeat(80) }, delayMs: 60_000, ...(idempotencyKey ? { idempotencyKey } : {}) });
  // Both topics registered (and their conf read) before, as a producer's steady enqueues find them.
  await queue.enqueue({ topic: "fin", payload: 0 });
  await queue.configureTopic("same", { contentDedupMs: 3_600_000 });
  await queue.enqueue({ topic: "same", payload: 0 });
  const paths = {
    finishedNew: await each((i) => finished("fin", i)),
    finishedLive: await each((i) => finished("fin", i)),
    contentNew: await each((i) => byContent(i)),
    contentRepeat: await each((i) => byContent(i)),
    contentRepeatKeyed: await each((i) => byContent(i, `client-${i}`)),
  };
  // The finished-mode jobs cancelled: each key is left behind, and the next repeat makes a new job.
  await queue.cancelWindow("fin", {});
  const finishedEnded = await each((i) => finished("fin", i));
  const perJob = reportPaths("dedup", { ...paths, finishedEnded }, M, 1);
  // EVALSHA, SET NX, SET record, ZADD due, ZADD index (a new job); EVALSHA, SET NX, GET, ZSCORE (the due set) and PEXPIRE (a
  // repeat of a live job); with 3 ZSCOREs (due, fdue, lease) and the SET of the key, a new job (one whose job ended). Content:
  // an HMGET of the conf, then its key as a window key: a repeat's GET, the purge mark's GET and the ZSCORE of its due time;
  // beside a new idempotency key, its SET NX and its SET naming the job the content matched.
  expect(perJob).toEqual({ finishedNew: 5, finishedLive: 5, finishedEnded: 10, contentNew: 6, contentRepeat: 6, contentRepeatKeyed: 8 });
  expect(await queue.topicStats("fin")).toMatchObject({ scheduled: M });
  expect(await queue.topicStats("same")).toMatchObject({ scheduled: M + 1 });
});

it("a labelled enqueue, per job: the script, each label's index and its probe", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  const M = 200;
  const eight = Array.from({ length: 8 }, (_, i) => `l${i}`);
  const enqueueAll = (labels: string[]) =>
    meter(async () => {
      for (let i = 0; i < M; i++) await queue.enqueue({ topic: "tagged", payload: { n: i, pad: "x".repeat(80) }, delayMs: 60_000, labels });
    });
  // The topic registered (and its cap read) before, as a producer's steady enqueues find it.
  await queue.enqueue({ topic: "tagged", payload: 0, delayMs: 60_000 });
  const one = await enqueueAll(["tenant:42"]);
  const all = await enqueueAll(eight);
  report.labelledEnqueue_1label_commands = one.commands / M;
  report.labelledEnqueue_8labels_commands = all.commands / M;
  report.labelledEnqueue_requests = (one.requests + all.requests) / (2 * M);
  expect((one.requests + all.requests) / (2 * M)).toBe(1);
  // EVALSHA, SET record (MSET), ZADD due, ZADD LT index; per label ZADD, SADD, ZRANDMEMBER; a ZMSCORE of due, fdue,
  // lease and dead:at for all the probes (no member is stale here: no ZREM).
  expect(one.commands / M).toBe(4 + 3 + 4);
  expect(all.commands / M).toBe(4 + 8 * 3 + 4);
  expect((await queue.listJobs("tagged", { state: "scheduled", label: "l7", limit: 1000 })).jobs).toHaveLength(M);
});

it("each dead-letter operation on a topic of 100 letters: Redis commands and requests", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  await queue.enqueueBatch(Array.from({ length: 100 }, (_, i) => ({ topic: "letters", payload: i })));
  const { jobs } = await queue.claim("letters", { max: 100, leaseMs: 60_000 });
  await queue.settle(
    "letters",
    jobs.map((j) => ({ id: j.id, attempt: j.attempt, kind: "dead" as const, error: "HTTP 500" })),
  );
  const [first, second, third] = jobs.map((j) => j.id);
  // Each operation once before it is metered, so what is metered runs loaded scripts (a first EVALSHA answers NOSCRIPT).
  await queue.deadLetters("letters", { limit: 1 });
  await queue.replayDeadLetters("letters", { ids: [first!] });
  await queue.deleteDeadLetter("letters", second!);
  await queue.editDeadLetters("letters", "record", [{ id: "letters.01ARZ3NDEKTSV4RRFFQ69G5FAV", value: "{}" }], ["payload"]);
  const ids = (from: number) => jobs.slice(from, from + 10).map((j) => j.id);
  const ops: Record<string, () => Promise<unknown>> = {
    list: () => queue.deadLetters("letters", { limit: 25 }),
    get: () => queue.deadLetter(third!),
    replayByIds: () => queue.replayDeadLetters("letters", { ids: ids(3) }),
    deleteOne: () => queue.deleteDeadLetter("letters", third!),
    // Dry runs: a replay's and a purge's step over the topic's (now 87) letters, and a replay of 10 by id.
    dryRunReplayAll: () => queue.dryRun.deadStep("letters", {}, "replay"),
    dryRunPurgeAll: () => queue.dryRun.deadStep("letters", {}, "purge"),
    dryRunReplayByIds: () => queue.dryRun.replayIds("letters", ids(13)),
    // A replay of 10 by id with a new payload (what the API does): their records read, rewritten, then the replay.
    editedReplayByIds: async () => {
      const read = await queue.deadRecords(ids(13));
      const letters = read.letters.map((l) => ({ id: l.id, value: JSON.stringify({ ...l.record, payload: "fixed" }) }));
      await queue.replayDeadLetters("letters", { ids: await queue.editDeadLetters("letters", "record", letters, ["payload"]) });
    },
    // And into another topic: their records read, their new jobs enqueued, the letters finished as moved.
    movedByIds: async () => {
      const read = await queue.deadRecords(ids(23));
      const made = await queue.enqueueBatch(read.letters.map((l) => ({ topic: "fixed", payload: l.record.payload, idempotencyKey: `replay:${l.id}` })));
      await queue.editDeadLetters(
        "letters",
        "move",
        read.letters.map((l, i) => ({ id: l.id, value: made[i]!.id })),
        ["topic"],
      );
    },
    purgeAll: () => queue.purgeDeadLetters("letters"),
  };
  // By id one request (a read, or the script); a page and a purge step two (the page of ids, then their script).
  // A dry run's step: the page, then (a replay) its metas; an edited replay three (records, rewrite, replay).
  const requests: Record<string, number> = {
    list: 2,
    get: 1,
    replayByIds: 1,
    deleteOne: 1,
    dryRunReplayAll: 2,
    dryRunPurgeAll: 1,
    dryRunReplayByIds: 1,
    editedReplayByIds: 3,
    movedByIds: 3,
    purgeAll: 2,
  };
  for (const [name, op] of Object.entries(ops)) {
    const m = await meter(op);
    report[`deadLetter_${name}_commands`] = m.commands;
    report[`deadLetter_${name}_requests`] = m.requests;
    expect(m.requests, name).toBe(requests[name]);
  }
  expect((await queue.deadLetters("letters")).entries).toEqual([]);
});

it("a pull consumer's lease extension: one request, one script call of 4 commands", { timeout: 120_000 }, async () => {
  const queue = new Queue({ redis, prefix: freshPrefix("cost") });
  await queue.configureTopic("pulled", { mode: "pull" });
  await queue.enqueueBatch(Array.from({ length: 101 }, (_, i) => ({ topic: "pulled", payload: i })));
  const { jobs } = await queue.claim("pulled", { max: 101, leaseMs: 60_000, mode: "pull" });
  // One extension before the metering, so what is metered runs the loaded script (a first EVALSHA answers NOSCRIPT).
  await queue.extend(jobs[0]!.id, jobs[0]!.attempt, 60_000);
  const m = await meter(async () => {
    for (const j of jobs.slice(1)) expect((await queue.extend(j.id, j.attempt, 120_000)).result).toBe("extended");
  });
  report.leaseExtensionCommands = m.commands / 100;
  report.leaseExtensionRequests = m.requests / 100;
  // EVALSHA, then ZSCORE, GET, HGET and ZADD inside it.
  expect(report.leaseExtensionCommands).toBe(5);
  expect(report.leaseExtensionRequests).toBe(1);
});

it("an idle minute of the tick, polling and asleep, with 1, 100 and 10,000 empty topics: requests and Redis commands", { timeout: 300_000 }, async () => {
  const { tickDeployment, VirtualClock } = await import("../tick/helpers.js");
  for (const mode of ["polling", "asleep"] as const) {
    const perMinute: Record<number, { commands: number; requests: number }> = {};
    for (const topicCount of [1, 100, 10_000]) {
      const clock = new VirtualClock(1_900_000_000_000);
      const d = tickDeployment(
        {
          UPSTASH_REDIS_REST_URL: inject("meterBridgeUrl"),
          UPSTASH_REDIS_REST_TOKEN: inject("meterBridgeToken"),
          TICK_POLL_MS: "1000",
          TICK_IDLE_PEEK_MS: mode === "polling" ? "0" : "20000",
        },
        clock,
      );
      // Topics that exist (configured) and hold nothing.
      for (let t = 0; t < topicCount; t += 200) {
        await Promise.all(Array.from({ length: Math.min(200, topicCount - t) }, (_, i) => d.queue.configureTopic(`idle${t + i}`, { maxAttempts: 3 })));
      }
      await d.tick({ scheduledTime: clock.now(), windowMs: 2_000 });
      const minute = await meter(() => d.tick({ scheduledTime: clock.now(), windowMs: 60_000 }));
      perMinute[topicCount] = { commands: minute.commands, requests: minute.requests };
      report[`idle_${mode}_${topicCount}topics_commandsPerMinute`] = minute.commands;
      report[`idle_${mode}_${topicCount}topics_requestsPerMinute`] = minute.requests;
      expect(minute.result.claimed).toBe(0);
      if (mode === "polling") {
        // 60 polls at 1 s, one request each (renewing the lock rides along), plus taking and releasing the lock.
        expect(minute.requests).toBeLessThanOrEqual(60 + 3);
      } else {
        // A few polls, then a look every 20 s.
        expect(minute.result.idleSleeps).toBeGreaterThanOrEqual(2);
        expect(minute.requests).toBeLessThanOrEqual(15);
      }
    }
    // What exists costs nothing: only topics with work are ever looked at.
    expect(perMinute[10_000]!.commands).toBeLessThanOrEqual(1.1 * perMinute[1]!.commands);
    expect(perMinute[10_000]!.requests).toBeLessThanOrEqual(1.1 * perMinute[1]!.requests);
  }
});

it("an idle minute with 5 topics holding jobs due in an hour: the per-minute backlog samples are the only cost per topic", { timeout: 120_000 }, async () => {
  const { tickDeployment, VirtualClock } = await import("../tick/helpers.js");
  const clock = new VirtualClock(1_900_000_000_000);
  const d = tickDeployment(
    { UPSTASH_REDIS_REST_URL: inject("meterBridgeUrl"), UPSTASH_REDIS_REST_TOKEN: inject("meterBridgeToken"), TICK_POLL_MS: "1000" },
    clock,
  );
  for (let t = 0; t < 5; t++) await d.queue.enqueue({ topic: `later${t}`, payload: 1, runAt: clock.now() + 3_600_000 });
  await d.tick({ scheduledTime: clock.now(), windowMs: 2_000 });
  const minute = await meter(() => d.tick({ scheduledTime: clock.now(), windowMs: 60_000 }));
  report.idle_asleep_5busyTopics_commandsPerMinute = minute.commands;
  report.idle_asleep_5busyTopics_requestsPerMinute = minute.requests;
  expect(minute.result.claimed).toBe(0);
  expect(minute.requests).toBeLessThanOrEqual(15);
});

it("schedules: commands per fire (with its job) and an idle minute with 0 and 10,000 schedules far off", { timeout: 300_000 }, async () => {
  const { tickDeployment, VirtualClock } = await import("../tick/helpers.js");
  const { upsertSchedule } = await import("../../../src/schedules/lifecycle.js");
  const { fireDueSchedules } = await import("../../../src/schedules/fire.js");
  const meterEnv = { UPSTASH_REDIS_REST_URL: inject("meterBridgeUrl"), UPSTASH_REDIS_REST_TOKEN: inject("meterBridgeToken"), TICK_POLL_MS: "1000" };
  const T = 1_900_000_020_000 - 20_000;

  // The fire step alone, 100 schedules due at once: one read and one fenced write for all of them.
  {
    const clock = new VirtualClock(T);
    const d = tickDeployment(meterEnv, clock);
    const warm = tickDeployment(meterEnv, clock);
    await upsertSchedule(
      warm.queue.schedules,
      "warm",
      { every: 60_000, timezone: "UTC", grace: 60_000, startAt: T + 1_000, job: { topic: "fired", payload: 0 } },
      T,
    );
    // Loads the scripts (a first EVALSHA answers NOSCRIPT), so what is metered is what a fire costs from then on.
    expect((await fireDueSchedules(warm.queue.schedules, T + 1_000)).jobs).toHaveLength(1);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        upsertSchedule(
          d.queue.schedules,
          `s${i}`,
          { every: 60_000, timezone: "UTC", grace: 60_000, startAt: T + 1_000, job: { topic: "fired", payload: i } },
          T,
        ),
      ),
    );
    const fire = await meter(() => fireDueSchedules(d.queue.schedules, T + 1_000));
    expect(fire.result.jobs).toHaveLength(100);
    report.schedule_fireStep_commandsPerFire = fire.commands / 100;
    report.schedule_fireStep_requestsPer100 = fire.requests;
    expect(fire.requests).toBe(2);
  }

  // One schedule every 2 s through a tick minute: its 30 fires with their jobs (claim, delivery to a code handler, settle) and the polls.
  {
    const clock = new VirtualClock(T);
    const d = tickDeployment(meterEnv, clock);
    const topic = `sched${crypto.randomUUID().slice(0, 6)}`;
    let delivered = 0;
    d.handlers.define(topic, () => void delivered++);
    await upsertSchedule(d.queue.schedules, "two", { every: 2_000, timezone: "UTC", grace: 60_000, startAt: T + 2_000, job: { topic, payload: "x" } }, T);
    const minute = await meter(() => d.tick({ scheduledTime: T, windowMs: 60_000 }));
    expect(delivered).toBe(29);
    report.schedule_every2s_commandsPerMinute = minute.commands;
    report.schedule_every2s_requestsPerMinute = minute.requests;
    report.schedule_every2s_commandsPerOccurrence = minute.commands / delivered;
  }

  // Idle: 0 and 10,000 schedules whose next occurrence is a year off cost the sleeping tick the same.
  const perMinute: Record<number, number> = {};
  for (const count of [0, 10_000]) {
    const clock = new VirtualClock(T);
    const d = tickDeployment({ ...meterEnv, TICK_IDLE_PEEK_MS: "20000" }, clock);
    for (let i = 0; i < count; i += 250) {
      await Promise.all(
        Array.from({ length: Math.min(250, count - i) }, (_, k) =>
          upsertSchedule(
            d.queue.schedules,
            `yearly${i + k}`,
            { cron: "0 0 1 1 *", timezone: "UTC", grace: 60_000, job: { topic: "new-year", payload: null } },
            T,
          ),
        ),
      );
    }
    await d.tick({ scheduledTime: clock.now(), windowMs: 2_000 });
    const minute = await meter(() => d.tick({ scheduledTime: clock.now(), windowMs: 60_000 }));
    expect(minute.result.claimed).toBe(0);
    perMinute[count] = minute.commands;
    report[`schedule_idle_asleep_${count}schedules_commandsPerMinute`] = minute.commands;
    report[`schedule_idle_asleep_${count}schedules_requestsPerMinute`] = minute.requests;
  }
  expect(perMinute[10_000]!).toBeLessThanOrEqual(1.1 * perMinute[0]!);
});

it("a steady trickle through the tick: what the tick adds per job at 200 and 1,000 jobs/s", { timeout: 300_000 }, async () => {
  const { tickDeployment, VirtualClock } = await import("../tick/helpers.js");
  for (const rate of [200, 1_000]) {
    const clock = new VirtualClock(1_900_000_000_000);
    const d = tickDeployment({ UPSTASH_REDIS_REST_URL: inject("meterBridgeUrl"), UPSTASH_REDIS_REST_TOKEN: inject("meterBridgeToken") }, clock);
    const topic = `trickle${crypto.randomUUID().slice(0, 6)}`;
    const late: number[] = [];
    d.handlers.define(topic, (job) => void late.push(clock.now() - job.dueAt));
    // Due evenly over 10 s from 2 s on, enqueued beforehand (the enqueue is not the tick's cost).
    const n = rate * 10;
    const start = clock.now() + 2_000;
    for (let i = 0; i < n; i += 500) {
      await d.queue.enqueueBatch(
        Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ topic, payload: i + j, runAt: start + Math.floor(((i + j) * 1_000) / rate) })),
      );
    }
    const tick = await meter(() => d.tick({ scheduledTime: clock.now(), windowMs: 14_000 }));
    expect(late).toHaveLength(n);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    report[`trickle_${rate}perSec_tickCommandsPerJob`] = tick.commands / n;
    report[`trickle_${rate}perSec_tickRequestsPerJob`] = tick.requests / n;
    report[`trickle_${rate}perSec_maxLateMs`] = Math.max(...late);
    expect(tick.commands / n).toBeLessThanOrEqual(1);
    expect(tick.requests / n).toBeLessThanOrEqual(0.1);
  }
});

it("an idle minute with the wake alarm: the loop has ended, the cron only looks; Durable Object requests per idle minute and per job", {
  timeout: 120_000,
}, async () => {
  const { tickDeployment, VirtualClock } = await import("../tick/helpers.js");
  const { wakeForSoonJobs } = await import("../../../src/tick/wake.js");
  const T = 1_900_000_020_000;
  // The TICK_ALARM namespace, counting every Durable Object request (each arm is one; each alarm that fires one more).
  let doRequests = 0;
  const alarm = { idFromName: () => ({}), get: () => ({ arm: async () => void doRequests++ }) };
  for (const topicCount of [1, 10_000]) {
    const clock = new VirtualClock(T);
    const d = tickDeployment(
      {
        UPSTASH_REDIS_REST_URL: inject("meterBridgeUrl"),
        UPSTASH_REDIS_REST_TOKEN: inject("meterBridgeToken"),
        TICK_POLL_MS: "1000",
        TICK_ALARM: alarm,
      } as never,
      clock,
    );
    for (let t = 0; t < topicCount; t += 200) {
      await Promise.all(Array.from({ length: Math.min(200, topicCount - t) }, (_, i) => d.queue.configureTopic(`idle${t + i}`, { maxAttempts: 3 })));
    }
    expect((await d.tick({ scheduledTime: T, windowMs: 60_000, endWhenIdle: true })).ended).toBe("idle");
    // Loads the look script (a first EVALSHA answers NOSCRIPT), as every minute after the first finds it loaded.
    clock.t = T + 60_000;
    expect(await d.cron({ scheduledTime: T + 60_000 })).toBeNull();
    clock.t = T + 120_000;
    doRequests = 0;
    const minute = await meter(() => d.cron({ scheduledTime: T + 120_000 }));
    expect(minute.result).toBeNull();
    report[`idle_ended_${topicCount}topics_commandsPerMinute`] = minute.commands;
    report[`idle_ended_${topicCount}topics_requestsPerMinute`] = minute.requests;
    report[`idle_ended_${topicCount}topics_durableObjectRequestsPerMinute`] = doRequests;
    expect(minute.commands).toBeLessThanOrEqual(5);
    expect(minute.requests).toBeLessThanOrEqual(2);
    expect(doRequests).toBe(0);

    // A trickle into the ended tick: 10 jobs a second apart, each due 40 s after it is enqueued (past a producer's drain).
    if (topicCount !== 1) continue;
    const waits: Array<Promise<unknown>> = [];
    for (let i = 0; i < 10; i++) {
      clock.t = T + 121_000 + i * 1_000;
      const dueAt = clock.now() + 40_000;
      await d.queue.enqueue({ topic: "idle0", payload: i, runAt: dueAt });
      await wakeForSoonJobs({
        env: d.env,
        settings: d.settings,
        queue: d.queue,
        jobs: [{ topic: "idle0", dueAt }],
        waitUntil: (w) => void waits.push(w),
        clock,
      });
    }
    await Promise.all(waits);
    // The first arms the alarm; the later ones are due after it, so its loop finds them (one isolate: the arm it made is remembered).
    report.idle_ended_trickle_durableObjectRequestsPerJob = doRequests / 10;
    expect(doRequests).toBe(1);
  }
});
