// A claim: a topic's due jobs taken under a lease (the tick, its fan-out,
// producers' drains, pull consumers). A plain topic's claim reads its due
// set's head and expired leases, then runs claim.lua with them; a shaped
// topic's (lua/lib/flow.lua) has flow-read.lua name its keys' turns and their
// jobs first. Either way two calls, and the script checks what the read named.
import { FLOW_PROMOTE_BATCH } from "../limits.js";
import { CLAIM_CANDIDATES, MAX_BATCH } from "./bounds.js";
import type { QueueContext } from "./context.js";
import { flowKeyList } from "./keys.js";
import * as lua from "./lua.generated.js";
import { migrateOrphans } from "./model.js";
import { pipelineRead, redisCall } from "./redis.js";
import { replies } from "./replies.js";
import { expiringTopics, shapedTopics } from "./shaped-topics.js";
import { decodeTopicConf } from "./topics.js";
import type { ClaimedJob, ClaimOptions, ClaimResult } from "./views.js";

/** A lease outlasts the handler's timeout by this much, so a slow settle is not mistaken for a dead worker. */
const LEASE_MARGIN_MS = 30_000;

/** Most jobs past their expiresAt one claim ends (lua/lib/expire.lua); a claim that ends this many leaves the topic due at once for the rest. */
const EXPIRE_BATCH = 500;

export async function claim(ctx: QueueContext, topic: string, options: ClaimOptions): Promise<ClaimResult> {
  const max = Number.isFinite(options.max) ? Math.min(Math.max(0, Math.floor(options.max)), MAX_BATCH) : 0;
  const now = options.now ?? ctx.now();
  const mode = options.mode ?? "push";
  const lead = Math.max(0, Math.floor(options.leadMs ?? 0));
  const asked: ClaimAsk = { now, max, mode, lead, leaseMs: options.leaseMs };
  await ctx.ensureModel();
  const shaped = shapedTopics(ctx.keys.prefix);
  const expiring = expiringTopics(ctx.keys.prefix);
  const knewExpiring = expiring.has(topic);
  let requests = 2;
  let reply = shaped.has(topic) ? undefined : replies.claim.parse(await claimPlain(ctx, topic, asked));
  // A shaped topic answers a plain claim with nothing done: claim it as one.
  if (reply === undefined || reply.heldBy === "shaped") {
    if (reply) requests += 2;
    shaped.add(topic);
    reply = replies.claim.parse(await claimShaped(ctx, topic, { ...asked, lead: 0 }));
  }
  if (reply.conf.shaped === "1") shaped.add(topic);
  // A topic marked expiring that this isolate did not know of: its jobs past their expiresAt were not read, so a claim
  // that took nothing is made again at once with them (once an isolate): a caller that takes an empty claim asking to
  // be back now for a sign to stop (a producer's drain) would leave them to the tick's next look.
  if (reply.conf.expiring === "1" && !knewExpiring) {
    expiring.add(topic);
    if (reply.jobs.length === 0) {
      requests += 2;
      reply = replies.claim.parse(await (shaped.has(topic) ? claimShaped(ctx, topic, { ...asked, lead: 0 }) : claimPlain(ctx, topic, asked)));
    }
  }
  const { jobs, leaseDeadline, conf, sweepDone, sweepDead, orphans, heldBy, ...rest } = reply;
  if (sweepDone.length + sweepDead.length > 0) {
    await sweep(ctx, topic, now, sweepDone, sweepDead);
    requests++;
  }
  if (orphans.length > 0) {
    await migrateOrphans(ctx, topic, orphans);
    requests++;
  }
  return {
    // A job taken ahead is leased from its due time.
    jobs: jobs.map(
      (j): ClaimedJob => ({
        id: j.id,
        topic,
        attempt: j.attempt,
        dueAt: j.dueAt,
        leaseExpiresAt: leaseDeadline + Math.max(0, j.dueAt - now),
        record: j.record,
      }),
    ),
    ...rest,
    heldBy: heldBy === "shaped" ? null : heldBy,
    topic: mode === "push" && heldBy !== "mode" ? decodeTopicConf(conf, ctx.defaults) : null,
    requests,
  };
}

/** What a claim asks for, as claim.lua takes it. */
interface ClaimAsk {
  now: number;
  max: number;
  mode: "push" | "pull";
  lead: number;
  leaseMs: number | undefined;
}

/** A plain topic's claim: its due set's head and expired leases read, then claim.lua with them. */
async function claimPlain(ctx: QueueContext, topic: string, asked: ClaimAsk): Promise<unknown> {
  const t = ctx.keys.topic(topic);
  // The ids the claim may take or reap, read first: the script must be given
  // every key it touches, so it cannot look them up itself. It checks each
  // again; jobs that became due between the two calls wait for the next claim.
  // Claims of one topic run side by side (the tick's chunk and its fan-out):
  // each reads CLAIM_CANDIDATES times what it may take, so those that run at
  // once find jobs left among their candidates when the first took its own.
  // A topic known to have jobs with an expiry: those past it too (lua/lib/claim-expire.lua).
  const expiring = expiringTopics(ctx.keys.prefix).has(topic);
  const [dueIds, leaseIds, expIds = []] = (await redisCall({ name: `claim candidates (ZRANGE, ZRANGE${expiring ? ", ZRANGE" : ""})`, repeatSafe: true }, () =>
    pipelineRead(ctx.redis, [
      [
        "zrange",
        t.due,
        "-inf",
        asked.now + (asked.mode === "push" ? asked.lead : 0),
        "BYSCORE",
        "LIMIT",
        0,
        Math.min(asked.max * CLAIM_CANDIDATES, MAX_BATCH * CLAIM_CANDIDATES),
      ],
      ["zrange", t.lease, "-inf", asked.now, "BYSCORE", "LIMIT", 0, ctx.reapLimit],
      ...(expiring ? [expiredRead(ctx, topic, asked.now)] : []),
    ]),
  )) as [string[], string[], string[]?];
  const candidates = asked.max > 0 ? dueIds : [];
  return ctx.run(
    lua.claim,
    [...claimKeys(ctx, topic), ...ctx.keys.jobPairs(candidates), ...ctx.keys.jobPairs(leaseIds), ...ctx.keys.jobPairs(expIds)],
    [...claimArgs(ctx, topic, asked), candidates.length, leaseIds.length, "", 0, 0, 0, 1, expIds.length, ...candidates, ...leaseIds, ...expIds],
  );
}

/** A shaped topic's claim: flow-read.lua names its keys' turns and their jobs, then claim.lua with them. */
async function claimShaped(ctx: QueueContext, topic: string, asked: ClaimAsk): Promise<unknown> {
  const t = ctx.keys.topic(topic);
  const expiring = expiringTopics(ctx.keys.prefix).has(topic);
  const [flowRead, expIds] = await Promise.all([
    ctx.run(lua.flowRead, [t.due, t.lease, t.conf, ...flowKeyList(t.flow)], [asked.now, asked.max, ctx.reapLimit, FLOW_PROMOTE_BATCH, CLAIM_CANDIDATES]),
    expiring
      ? (redisCall({ name: "expired candidates (ZRANGE)", repeatSafe: true }, () => pipelineRead(ctx.redis, [expiredRead(ctx, topic, asked.now)])) as Promise<
          [string[]]
        >)
      : Promise.resolve([[]] as [string[]]),
  ]);
  const read = replies.flowRead.parse(flowRead);
  const expired = expIds[0];
  const jobIds: string[] = [];
  for (let i = 1; i < read.jobs.length; i += 5) jobIds.push(String(read.jobs[i]));
  return ctx.run(
    lua.claim,
    [...claimKeys(ctx, topic), ...ctx.keys.jobPairs(read.leases), ...ctx.keys.jobPairs(expired), ...flowKeyList(t.flow), ...ctx.keys.jobPairs(jobIds)],
    [
      ...claimArgs(ctx, topic, asked),
      0,
      read.leases.length,
      "1",
      read.jobs.length / 5,
      read.newly.length / 4,
      read.served.length / 2,
      read.rounds,
      expired.length,
      ...read.leases,
      ...expired,
      ...read.jobs,
      ...read.newly,
      ...read.served,
    ],
  );
}

/** claim.lua's KEYS before its candidates'. */
function claimKeys(ctx: QueueContext, topic: string): string[] {
  const t = ctx.keys.topic(topic);
  return [t.due, t.lease, t.conf, t.bucket, t.metrics, t.deadAt, t.done, ctx.keys.topicIndex, t.exp];
}

/** The read of a topic's jobs past their expiresAt, earliest first (claim.lua's expiring candidates). */
function expiredRead(ctx: QueueContext, topic: string, now: number): Array<string | number> {
  return ["zrange", ctx.keys.topic(topic).exp, "-inf", now, "BYSCORE", "LIMIT", 0, EXPIRE_BATCH];
}

/** claim.lua's ARGV[1..14]. */
function claimArgs(ctx: QueueContext, topic: string, o: ClaimAsk): Array<string | number> {
  return [
    o.now,
    o.max,
    o.leaseMs ?? "",
    Math.floor(Math.random() * 2 ** 31),
    ctx.defaults.maxAttempts,
    JSON.stringify(ctx.defaults.backoff),
    ctx.deadLetterCap,
    ctx.retentionMs,
    ctx.reapLimit,
    topic,
    o.mode,
    ctx.defaults.timeoutMs,
    LEASE_MARGIN_MS,
    o.lead,
  ];
}

/**
 * Drops the finished jobs and dead letters a claim named, with
 * their keys (sweep.lua checks each again). Safe to repeat; a failure only
 * leaves them for the next claim to name.
 */
async function sweep(ctx: QueueContext, topic: string, now: number, done: string[], dead: string[]): Promise<void> {
  if (done.length + dead.length === 0) return;
  const t = ctx.keys.topic(topic);
  replies.sweep.parse(
    await ctx.run(
      lua.sweep,
      [t.done, t.deadAt, ...ctx.keys.jobPairs(done), ...ctx.keys.jobPairs(dead)],
      [now - ctx.retentionMs, ctx.deadLetterCap, done.length, ...done, ...dead],
    ),
  );
}
