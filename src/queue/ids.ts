import { decodeTime, monotonicFactory } from "ulidx";
import { TOPIC_NAME_MAX_LENGTH } from "../limits.js";

const TOPIC_CHARS = `[A-Za-z0-9._-]{1,${TOPIC_NAME_MAX_LENGTH}}`;
const TOPIC = new RegExp(`^${TOPIC_CHARS}$`);
const JOB_ID = new RegExp(`^(${TOPIC_CHARS})\\.([0-9A-HJKMNP-TV-Z]{26})$`);

/** Topic names: 1–{@link TOPIC_NAME_MAX_LENGTH} of `A–Z a–z 0–9 . _ -`. */
export function isTopic(topic: string): boolean {
  return TOPIC.test(topic);
}

// Monotonic within an isolate: ids minted in the same millisecond still sort
// in minting order, and a sorted set orders equal due times by member.
const ulid = monotonicFactory();

/**
 * A new job id: `<topic>.<ULID>`. The topic makes every by-id operation able
 * to find its keys; the ULID keeps jobs due at the same millisecond in
 * enqueue order, and its time is the job's createdAt (`now`), so a listing
 * can tell it without reading the record.
 */
export function newJobId(topic: string, now: number): string {
  return `${topic}.${ulid(now)}`;
}

/** The topic of a well-formed job id, or null for anything else. */
export function topicOfJobId(id: string): string | null {
  const m = JOB_ID.exec(id);
  return m ? m[1]! : null;
}

/** When a well-formed job id was minted (its job's createdAt), epoch ms, or null for anything else. */
export function createdAtOfJobId(id: string): number | null {
  const m = JOB_ID.exec(id);
  return m ? decodeTime(m[2]!) : null;
}
