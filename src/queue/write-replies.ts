// What the scripts that store jobs answer (enqueue.lua, upsert.lua): their
// ids and due times, the caps they found, or the limit or cap that refused
// them; decoded as replies.ts decodes the others, which spreads these into
// its `replies`.
import { z } from "zod";
import { coded, time } from "./reply-parts.js";
import { Code } from "./codes.js";
import { malformed } from "./malformed.js";
import { intReply, numericReply } from "./types.js";

const repeat = coded(Code.Repeat, { Repeat: "key", ContentRepeat: "content", New: "new" } as const);
const overflow = coded(Code.Overflow, { None: "none", Reject: "reject", DropOldest: "dropOldest" } as const);
const capKinds = coded(Code.Caps, {
  None: { topic: false, keys: false },
  Topic: { topic: true, keys: false },
  Keys: { topic: false, keys: true },
  Both: { topic: true, keys: true },
} as const);

/** The rest of `{ Code.Write.TopicLimit, topics registered, the cap }`. */
export const topicLimitOf = (reply: ReadonlyArray<unknown>) =>
  ({ result: "topic-limit", count: intReply.parse(reply[1]), limit: intReply.parse(reply[2]) }) as const;

/** The rest of `{ Code.Write.TopicFull, topic, its pending jobs, its maxLength, jobs the call adds to it }`. */
function topicFullOf(reply: ReadonlyArray<unknown>) {
  const [pending, maxLength, adding] = reply.slice(2, 5).map((v) => intReply.parse(v));
  return { result: "topic-full", topic: String(reply[1]), pending: pending!, maxLength: maxLength!, adding: adding! } as const;
}

/** A flow key's cap refusing the jobs: { -4, topic, key, its pending jobs, its maxKeyLength, jobs the call adds to it }. */
function flowKeyFullOf(reply: ReadonlyArray<unknown>) {
  const [pending, maxKeyLength, adding] = reply.slice(3, 6).map((v) => intReply.parse(v));
  return {
    result: "flow-key-full",
    topic: String(reply[1]),
    flowKey: String(reply[2]),
    pending: pending!,
    maxKeyLength: maxKeyLength!,
    adding: adding!,
  } as const;
}

/**
 * enqueue.lua: per job its id, whether it repeats an idempotency key (or a
 * content key) and its due time, then each checked topic's cap, which caps it
 * has and its content dedup window (0 none); or the topic
 * limit, a topic's or a flow key's cap refusing the call, or the topics and
 * keys whose oldest jobs to drop were not all among the candidates (how many
 * to read; key "" the topic's own). `n` jobs were sent.
 */
function enqueueReply(raw: unknown, n: number) {
  const reply = z.array(z.union([z.string(), z.number()])).parse(raw);
  const [head] = reply;
  if (head === Code.Write.TopicLimit) return topicLimitOf(reply);
  if (head === Code.Write.TopicFull) return topicFullOf(reply);
  if (head === Code.Write.FlowKeyFull) return flowKeyFullOf(reply);
  if (head === Code.Write.FewCandidates) {
    const short: Array<{ topic: string; flowKey: string; count: number }> = [];
    for (let i = 1; i + 2 < reply.length; i += 3) short.push({ topic: String(reply[i]), flowKey: String(reply[i + 1]), count: intReply.parse(reply[i + 2]) });
    return { result: "few-candidates", short } as const;
  }
  if (reply.length < 3 * n || (reply.length - 3 * n) % 4 !== 0) return malformed("enqueue", `the reply to ${n} jobs`, raw);
  const jobs: Array<{ id: string; deduplicated: boolean; deduplicatedBy?: "content"; dueAt: number | null }> = [];
  for (let i = 0; i < 3 * n; i += 3) {
    const by = repeat.parse(reply[i + 1]);
    jobs.push({ id: String(reply[i]), deduplicated: by !== "new", ...(by === "content" ? { deduplicatedBy: by } : {}), dueAt: time.parse(reply[i + 2]) });
  }
  const caps: Array<{ topic: string; cap: "none" | "reject" | "dropOldest"; kinds: { topic: boolean; keys: boolean }; contentDedupMs: number }> = [];
  for (let i = 3 * n; i + 3 < reply.length; i += 4) {
    caps.push({
      topic: String(reply[i]),
      cap: overflow.parse(reply[i + 1]),
      kinds: capKinds.parse(reply[i + 2]),
      contentDedupMs: intReply.parse(reply[i + 3]),
    });
  }
  return { result: "written", jobs, caps } as const;
}

const upsertCode = coded(Code.Upsert, { Moved: "moved", Created: "created", Replaced: "replaced", Ignored: "ignored", Labels: "labels" } as const);

/**
 * upsert.lua: what became of the job key's job — its id and due time, and
 * for a new one the topic's cap when the call checked it — or that the key's
 * pointer moved (read it again), the labels of the pending job the caller
 * did not name (call again naming them), the topic limit, or the topic's cap refusing the job.
 */
function upsertReply(raw: unknown) {
  const reply = z.array(z.union([z.string(), z.number()])).parse(raw);
  const [head] = reply;
  if (head === Code.Write.TopicLimit) return topicLimitOf(reply);
  if (head === Code.Write.TopicFull) return topicFullOf(reply);
  if (head === Code.Write.FlowKeyFull) return flowKeyFullOf(reply);
  const result = upsertCode.parse(head);
  if (result === "moved") return { result } as const;
  if (result === "labels") return { result, labels: reply.slice(1).map(String) } as const;
  if (reply.length < 3) return malformed("upsert", "the reply", raw);
  const cap = reply[3] === undefined ? undefined : overflow.parse(reply[3]);
  const kinds = reply[4] === undefined ? undefined : capKinds.parse(reply[4]);
  return { result, id: String(reply[1]), dueAt: numericReply.parse(reply[2]), cap, kinds } as const;
}

export const writeReplies = {
  /** enqueue.lua: see {@link enqueueReply}. */
  enqueue: { parse: enqueueReply },

  /** upsert.lua: see {@link upsertReply}. */
  upsert: { parse: upsertReply },
};
