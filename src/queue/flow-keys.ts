// A shaped topic's flow keys' own settings (lua/lib/flow.lua): set, read,
// listed and removed. What a key's settings say is read by the claims, in
// Lua; the topic's flow settings fill in what a key does not set.
import type { QueueContext } from "./context.js";
import * as lua from "./lua.generated.js";
import { pipelineRead, redisCall } from "./redis.js";
import { forgetRegistered } from "./registrations.js";
import { replies } from "./replies.js";
import type { FlowSettings } from "./topics.js";

/** One flow key's own settings: the topic's flow settings' fields, whether the key is paused, and its own cap. */
export interface FlowKeySettings extends Omit<FlowSettings, "priorityStepMs"> {
  /** A paused key starts no job; its jobs wait, and count against caps. Default false. */
  paused?: boolean;
  /** Most pending jobs (scheduled and waiting) the key holds, over its topic's maxKeyLength; unset: the topic's. */
  maxKeyLength?: number;
}

/** A page of a topic's keys that have settings of their own. */
export interface FlowKeyPage {
  keys: Array<{ key: string; settings: FlowKeySettings }>;
  /** Where the next page starts; null on the last page. */
  cursor: string | null;
}

/** Sets `key`'s own settings (replacing what it had), or with null removes them. Returns false when null removed nothing. */
export async function setFlowKey(ctx: QueueContext, topic: string, key: string, settings: FlowKeySettings | null): Promise<boolean> {
  const t = ctx.keys.topic(topic);
  const capped = settings?.maxKeyLength !== undefined;
  const reply = await ctx.run(
    lua.flowKey,
    [t.conf, t.flow.fkeys, t.flow.fpark, t.flow.fcal, ctx.keys.topicIndex],
    [topic, key, settings === null ? "" : JSON.stringify(settings), ctx.now(), settings?.paused ? "1" : "", capped ? "1" : ""],
  );
  // This isolate's enqueues of the topic take the script again, which reads the key's cap.
  if (capped) forgetRegistered(ctx.keys.prefix, topic);
  return replies.flowKey.parse(reply);
}

/** `key`'s own settings, or null when it has none. */
export async function flowKeySettings(ctx: QueueContext, topic: string, key: string): Promise<FlowKeySettings | null> {
  const raw = await redisCall({ name: "HGET", repeatSafe: true }, () => ctx.redis.hget<string>(ctx.keys.topic(topic).flow.fkeys, key));
  return raw === null ? null : (JSON.parse(raw) as FlowKeySettings);
}

/** A page of the keys with settings of their own, in no particular order (HSCAN: a key there the whole time is listed at least once, and may be listed again). */
export async function listFlowKeys(ctx: QueueContext, topic: string, options: { cursor?: string; limit: number }): Promise<FlowKeyPage> {
  const [next, flat] = await redisCall({ name: "HSCAN", repeatSafe: true }, () =>
    ctx.redis.hscan(ctx.keys.topic(topic).flow.fkeys, options.cursor ?? "0", { count: options.limit }),
  );
  const keys: FlowKeyPage["keys"] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) keys.push({ key: String(flat[i]), settings: JSON.parse(String(flat[i + 1])) as FlowKeySettings });
  return { keys, cursor: String(next) === "0" ? null : String(next) };
}

/**
 * Each key's length: its jobs scheduled and waiting (not in flight), counted
 * exactly in the topic's flow keys' index (lua/lib/flow.lua's fkidx), one
 * ZLEXCOUNT a key in one request.
 */
export async function flowKeyLengths(ctx: QueueContext, topic: string, keys: readonly string[]): Promise<number[]> {
  if (keys.length === 0) return [];
  const fkidx = ctx.keys.topic(topic).flow.fkidx;
  await ctx.ensureModel();
  const counts = await redisCall({ name: "ZLEXCOUNT", repeatSafe: true }, () =>
    pipelineRead(
      ctx.redis,
      keys.map((key) => ["zlexcount", fkidx, `[${key}\n`, `(${key}\v`]),
    ),
  );
  return counts.map((n) => Number(n));
}

/** One of a topic's busiest flow keys: its jobs in flight and waiting (due, for its turn), and where it stands. */
export interface BusyFlowKey {
  key: string;
  inFlight: number;
  waiting: number;
  /** `turn`: in the calendar; `rate`: its rate holds it; `parallelism`: parked at it; `paused`; `running`: none waiting. */
  state: "turn" | "rate" | "parallelism" | "paused" | "running";
}

/** Keys in flight a view looks at to find the busiest (all of them up to this many; else a random sample). */
const BUSY_SAMPLE = 1_000;

/** The topic's `n` busiest flow keys (by jobs in flight and waiting): see flow-keys-top.lua. */
export async function busiestFlowKeys(ctx: QueueContext, topic: string, n: number): Promise<BusyFlowKey[]> {
  const f = ctx.keys.topic(topic).flow;
  return replies.flowKeysTop.parse(await ctx.run(lua.flowKeysTop, [f.fin, f.fcal, f.fpark, f.fready], [ctx.now(), BUSY_SAMPLE, n]));
}
