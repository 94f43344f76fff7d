import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { wakeForSoonJobs, wakeForSoonSchedule } from "../tick/wake.js";
import type { Env, Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";
import type { Shards } from "../queue/shards.js";
import { shardsFromSettings } from "../queue/from-settings.js";
import { shardOfJobId } from "../queue/ids.js";
import { SHARD_READ_DEADLINE_MS } from "../limits.js";
import { ApiProblem, validationProblem } from "./problem.js";

/** A request's settings, its deployment's shards, and `queue`: the `main` shard's, for what is not placed by topic or id (schedules, health). */
export type AppEnv = { Bindings: Env; Variables: { settings: Settings; queue: Queue; shards: Shards } };

// The writes' queues hold nothing of a request (the isolate's shared clients
// and the settings), so they are built once per settings, not per request; apps
// share them, as two deployments with the same settings share their Redis keys.
const writeShards = new WeakMap<Settings, Shards>();

/** The deployment's shards on the isolate's shared clients, for a request that makes its calls one after another (built once per settings). */
export function oneCallShards(s: Settings): Shards {
  let shards = writeShards.get(s);
  if (!shards) {
    shards = shardsFromSettings(s, { oneCallAtATime: true });
    writeShards.set(s, shards);
  }
  return shards;
}

/** A router whose validation failures are 422 problem documents. */
export function router(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) return validationProblem(result.error, result.target === "json" ? "body" : result.target);
    },
  });
}

/** A JSON response body with this schema, for the OpenAPI document. */
export const json = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } } });

/** Error responses every authenticated route may give, for the OpenAPI document. */
export const problemResponses = (codes: number[]) =>
  Object.fromEntries(
    codes.map((code) => [
      code,
      { description: DESCRIPTIONS[code] ?? "Error", content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } } },
    ]),
  );

const DESCRIPTIONS: Record<number, string> = {
  400: "Malformed request",
  401: "Missing or wrong token",
  404: "Not found",
  409: "Conflict with the job's state",
  413: "Body too large",
  415: "Not JSON",
  422: "Schema violation",
  429: "A topic's maxLength or a flow key's maxKeyLength refused the jobs (nothing stored)",
  431: "A header kept with the job is too large",
  503: "Redis unreachable; retry with the same Idempotency-Key (the write may have happened before the answer was lost)",
};

/** The invocation's waitUntil, or null when there is no execution context (not running as a Worker). */
function waitUntilOf(c: Context<AppEnv>): ((work: Promise<unknown>) => void) | null {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work);
  } catch {
    return null;
  }
}

/** After writing a schedule on `queue`'s shard: while that shard's tick sleeps, fire its occurrences due soon from this invocation (see src/tick/wake.ts). */
export async function wakeSoonSchedule(c: Context<AppEnv>, queue: Queue, nextAt: number | null): Promise<void> {
  const waitUntil = waitUntilOf(c);
  if (!waitUntil) return;
  await wakeForSoonSchedule({ env: c.env, settings: c.get("settings"), queue, nextAt, waitUntil });
}

/**
 * After storing jobs: while the tick sleeps, start the ones due soon from
 * this invocation (see src/tick/wake.ts), on each one's shard — `queue`'s
 * when given (a job by id stays on the shard its id names), else its topic's.
 */
export async function wakeSoonJobs(c: Context<AppEnv>, stored: Array<{ topic: string; dueAt: number | null }>, queue?: Queue): Promise<void> {
  const jobs = stored.filter((j): j is { topic: string; dueAt: number } => j.dueAt !== null);
  if (jobs.length === 0) return;
  const waitUntil = waitUntilOf(c);
  if (!waitUntil) return; // no execution context (not running as a Worker): nothing can outlive the response
  const shards = c.get("shards");
  const byQueue = new Map<Queue, typeof jobs>();
  for (const j of jobs) {
    const q = queue ?? shards.forTopic(j.topic);
    byQueue.set(q, [...(byQueue.get(q) ?? []), j]);
  }
  for (const [q, some] of byQueue) await wakeForSoonJobs({ env: c.env, settings: c.get("settings"), queue: q, jobs: some, waitUntil });
}

/**
 * How long a read across shards waits for each one: with a single shard, no
 * deadline of its own (its requests' own, REDIS_TIMEOUT_MS each), as there is
 * nothing to answer without it; with several, at most
 * {@link SHARD_READ_DEADLINE_MS} (or REDIS_TIMEOUT_MS when lower), so one slow
 * shard cannot hold up an answer the others can give.
 */
export function shardReadDeadline(s: Settings, shards: Shards): number | null {
  return shards.names.length === 1 ? null : Math.min(s.redisTimeoutMs, SHARD_READ_DEADLINE_MS);
}

/** The queue of the shard `topic` lives on. */
export const topicQueue = (c: Context<AppEnv>, topic: string): Queue => c.get("shards").forTopic(topic);

/** The queue of the shard job `id` names; 404 when the deployment has no such shard. */
export function jobQueue(c: Context<AppEnv>, id: string): Queue {
  const queue = c.get("shards").forJobId(id);
  if (!queue) throw new ApiProblem(404, `no job ${id} (it names shard "${shardOfJobId(id)}", which this deployment does not have)`);
  return queue;
}
