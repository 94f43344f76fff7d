import { decodeTime, monotonicFactory } from "ulidx";
import { SUBSCRIPTION_NAME_MAX_LENGTH, TOPIC_NAME_MAX_LENGTH } from "../limits.js";

const TOPIC_CHARS = `[A-Za-z0-9._-]{1,${TOPIC_NAME_MAX_LENGTH}}`;
const SUBSCRIPTION_CHARS = `[A-Za-z0-9][A-Za-z0-9._-]{0,${SUBSCRIPTION_NAME_MAX_LENGTH - 1}}`;
/** The derived name of a topic's callbacks: a leading `_` is no subscription's, so it can never be taken. */
export const CALLBACKS_NAME = "_callbacks";
const DERIVED_CHARS = `${TOPIC_CHARS}@(?:${SUBSCRIPTION_CHARS}|${CALLBACKS_NAME})`;
/**
 * The one rule for topic names: 1–{@link TOPIC_NAME_MAX_LENGTH} of
 * `A–Z a–z 0–9 . _ -`, but not `.` or `..`: those are dot segments, which a
 * URL path cannot carry, so such a topic could take jobs but never be
 * configured, paused or drained over the API. The API's schema uses it too.
 */
export const TOPIC_NAME_PATTERN = new RegExp(`^(?!\\.\\.?$)${TOPIC_CHARS}$`);
/**
 * A topic the API may name where it reads or manages one: a topic, or one
 * derived from a topic, `<topic>@<subscription>` (the deliveries of a
 * subscription) or `<topic>@_callbacks` (its jobs' callbacks). A derived
 * topic is an ordinary topic in Redis, with keys, settings, limits,
 * retries and dead letters of its own; jobs reach it only from its root
 * (fanned out, or made by a settle), never by an enqueue. `@` is in no
 * topic's or shard's name, so a derived name parses one way.
 */
export const TOPIC_REF_PATTERN = new RegExp(`^(?!\\.\\.?(?:@|$))(?:${TOPIC_CHARS}|${DERIVED_CHARS})$`);
/** The one rule for shard names (src/settings/shards.ts declares them): 1–32 of `a–z 0–9 -`. */
export const SHARD_NAME_PATTERN = /^[a-z0-9-]{1,32}$/;
/** The shard that holds today's keys and every id without a shard in it. */
export const MAIN_SHARD = "main";
const JOB_ID = new RegExp(`^(?:([a-z0-9-]{1,32})~)?(${TOPIC_CHARS}|${DERIVED_CHARS})\\.([0-9A-HJKMNP-TV-Z]{26})$`);

/** The topic a derived topic was derived from; a topic is its own root. */
export function rootOf(topic: string): string {
  const at = topic.indexOf("@");
  return at === -1 ? topic : topic.slice(0, at);
}

/** What a derived topic was derived as (a subscription's name, or {@link CALLBACKS_NAME}); null for a topic. */
export function derivedNameOf(topic: string): string | null {
  const at = topic.indexOf("@");
  return at === -1 ? null : topic.slice(at + 1);
}

/** The topic holding subscription `name`'s deliveries of `root`'s jobs. */
export function subscriptionTopic(root: string, name: string): string {
  return `${root}@${name}`;
}

/** The topic holding the callbacks of `root`'s jobs and of its subscriptions' deliveries. */
export function callbacksTopic(root: string): string {
  return `${rootOf(root)}@${CALLBACKS_NAME}`;
}

/**
 * crypto's random bytes, drawn a kilobyte at a time. ulidx asks its random
 * source once per character, and its default source made each ask a call
 * into the runtime with an array of its own: sixteen per job id, a share of
 * a single enqueue's CPU. A byte / 256 is also uniform over the 32
 * characters (ulidx's default, / 255, made the last one twice as likely).
 */
const pool = new Uint8Array(1_024);
let drawn = pool.length;
function pooledRandom(): number {
  if (drawn === pool.length) {
    crypto.getRandomValues(pool);
    drawn = 0;
  }
  return pool[drawn++]! / 256;
}

// Monotonic within an isolate: ids minted in the same millisecond still sort
// in minting order, and a sorted set orders equal due times by member. A
// clock that goes back (an injected `now`, a test's virtual clock) starts a
// new sequence, so an id's time is always its `now`: ulidx's monotonic ids
// keep the latest time they saw, which would make a job's createdAt (and an
// upsert's maxWait, counted from it) later than its enqueue.
let ulid = monotonicFactory(pooledRandom);
let lastMinted = Number.NEGATIVE_INFINITY;
function mint(now: number): string {
  if (now < lastMinted) ulid = monotonicFactory(pooledRandom);
  lastMinted = now;
  return ulid(now);
}

/**
 * A new job id: `<topic>.<ULID>` on the main shard, `<shard>~<topic>.<ULID>`
 * on any other (`topic` may be a derived one: `orders@billing.<ULID>`). The shard sends every by-id call to one database without a
 * lookup, and the topic finds its keys there; the ULID keeps jobs due at the
 * same millisecond in enqueue order, and its time is the job's createdAt
 * (`now`), so a listing can tell it without reading the record. Ids of the
 * main shard carry no shard, so the ids of a deployment from before shards
 * stay valid byte for byte.
 */
export function newJobId(topic: string, now: number, shard: string = MAIN_SHARD): string {
  return shard === MAIN_SHARD ? `${topic}.${mint(now)}` : `${shard}~${topic}.${mint(now)}`;
}

/** The topic of a well-formed job id (derived topics included), or null for anything else. */
export function topicOfJobId(id: string): string | null {
  const m = JOB_ID.exec(id);
  return m && TOPIC_REF_PATTERN.test(m[2]!) && m[1] !== MAIN_SHARD ? m[2]! : null;
}

/** The shard a well-formed job id names (`main` when it names none), or null for anything else. */
export function shardOfJobId(id: string): string | null {
  return topicOfJobId(id) === null ? null : (JOB_ID.exec(id)![1] ?? MAIN_SHARD);
}

/** When a well-formed job id was minted (its job's createdAt), epoch ms, or null for anything else. */
export function createdAtOfJobId(id: string): number | null {
  const m = JOB_ID.exec(id);
  return m ? decodeTime(m[3]!) : null;
}
