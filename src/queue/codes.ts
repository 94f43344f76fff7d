/**
 * The numbers the Lua scripts answer with, one map per meaning. A script's
 * header names the codes it answers in its Returns, in words, and
 * test/node/lua-codes.test.ts holds each header's numbers to these maps;
 * src/queue/replies.ts turns them into what the queue returns, once per script.
 */
export const Code = {
  /** cancel.lua, reschedule.lua: what became of a change to one scheduled job. */
  JobChange: { Changed: 1, NotScheduled: 0, InFlight: -1 },
  /** delete-topic.lua: the topic is gone, purging goes on (call again), or it holds jobs in flight or, without purging, anything. */
  TopicDeletion: { Deleted: 1, Purging: 0, InFlight: -1, NotEmpty: -2 },
  /**
   * configure-topic.lua, schedule-write.lua, enqueue.lua, upsert.lua: written; not
   * written because what the caller read changed meanwhile (schedule-write's
   * revision); or not written because registering a topic would pass
   * MAX_TOPICS (the topics registered and the cap follow); enqueue.lua: or
   * because a topic's maxLength refuses the jobs, or a flow key's
   * maxKeyLength, or because the jobs a dropOldest topic must drop were not
   * all among the ids the caller read.
   */
  Write: { Written: 1, Changed: 0, TopicLimit: -1, TopicFull: -2, FewCandidates: -3, FlowKeyFull: -4 },
  /** enqueue.lua, upsert.lua: a topic's cap (the overflow of its maxLength and its keys' caps), as the call found it. */
  Overflow: { None: 0, Reject: 1, DropOldest: 2 },
  /** enqueue.lua: which caps a topic has: its maxLength, caps on its flow keys (maxKeyLength, its own or its keys'), both. */
  Caps: { None: 0, Topic: 1, Keys: 2, Both: 3 },
  /** settle.lua, schedule-fire.lua: a write fenced on what its caller read applied, or was stale and changed nothing. */
  Fenced: { Applied: 1, Stale: 0 },
  /**
   * extend-lease.lua: the lease was extended (its new deadline follows); the
   * job is not leased at that attempt; there is no such job; or its topic is
   * push, whose leases are the tick's.
   */
  Lease: { Extended: 1, Stale: 0, Unknown: -1, Push: -2 },
  /** schedule-delete.lua, flow-key.lua: it was there and is gone (flow-key.lua: or it was set), or there was none. */
  Removed: { Removed: 1, Missing: 0 },
  /**
   * upsert.lua: what became of a job key's job: a new one was stored, the
   * pending one was replaced or left as it was; or Moved: the key's pointer
   * named another job than the caller read (nothing written: read it again);
   * or Labels: the pending job carries labels whose index the caller did not
   * name (nothing written: call again naming them).
   */
  Upsert: { Moved: 0, Created: 1, Replaced: 2, Ignored: 3, Labels: 4 },
  /** enqueue.lua: a job whose idempotency key still holds (its job's id is returned), one whose content does (a topic's content dedup), or a new one. */
  Repeat: { Repeat: 1, ContentRepeat: 2, New: 0 },
  /** lock-acquire.lua, lock-release.lua, peek.lua: the tick lock is (still) the caller's, or another loop's. */
  Lock: { Ours: 1, NotOurs: 0 },
  /** Listings and bounded steps (list-jobs, list-dead, cancel-jobs, purge-dead, replay-dead, schedules-due, peek): more may follow, or that was all. */
  More: { More: 1, Done: 0 },
  /** Times in replies (claim, peek, schedule-fire, enqueue): none (no job due, none known, removed from the topic index). */
  Time: { None: -1 },
  /** claim.lua: the topic is paused (it reaps but takes nothing), or not. */
  Paused: { Paused: 1, Active: 0 },
  /** look.lua: a loop holds the tick lock, or none does. */
  Held: { Held: 1, Free: 0 },
  /** lock-acquire.lua: the loop holding the tick lock has set its sleep mark, or not. */
  Asleep: { Asleep: 1, Awake: 0 },
  /** claim.lua: what held ready jobs back (Nothing: none did, or only `max`; Bytes: the reply's byte budget, more are takeable). */
  HeldBy: { Nothing: 0, Concurrency: 1, Rate: 2, Paused: 3, Mode: 4, Bytes: 5, Shaped: 6 },
} as const;

/** One of the maps in {@link Code}. */
export type CodeMap = Readonly<Record<string, number>>;
