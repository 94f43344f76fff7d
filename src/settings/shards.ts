/**
 * The shards of a deployment (`DELAYLINE_SHARDS`) and the topics pinned to
 * one (`DELAYLINE_SHARD_PINS`): their schemas, the checks across entries,
 * and the resolution of each shard to what a Redis client needs. A shard is
 * one Redis database with a key prefix of its own; see docs/ARCHITECTURE.md.
 */
import { z } from "zod";
import { MAIN_SHARD, SHARD_NAME_PATTERN, TOPIC_NAME_PATTERN } from "../queue/ids.js";

const HASH_TAG = /^[^\s{}]*\{([^\s{}]+)\}[^\s{}]*$/;

/** The hash tag of a prefix that carries exactly one (`dl:{b}` → `b`), or null. */
const hashTagOf = (prefix: string): string | null => HASH_TAG.exec(prefix)?.[1] ?? null;

/** One entry of `DELAYLINE_SHARDS`, as written. */
interface ShardEntry {
  name: string;
  /** Its REST URL; `main` may leave it out (then UPSTASH_REDIS_REST_URL). */
  url?: string | undefined;
  /** The name of the Worker secret holding its REST token; `main` may leave it out (then UPSTASH_REDIS_REST_TOKEN). */
  tokenBinding?: string | undefined;
  /** Its key prefix, with a hash tag no other shard's has. Default `dl:{<name>}` (`main`: DELAYLINE_PREFIX). */
  prefix?: string | undefined;
}

/** A shard as its clients need it: name, REST URL and token, key prefix. */
export interface Shard {
  name: string;
  redisUrl: string;
  redisToken: string;
  prefix: string;
}

const Entry = z.strictObject({
  name: z.string().regex(SHARD_NAME_PATTERN, "must be 1–32 characters of a–z 0–9 -"),
  url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
  tokenBinding: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "must be the name of a Worker secret")
    .optional(),
  prefix: z
    .string()
    .refine((v) => hashTagOf(v) !== null, "must contain exactly one {hash tag}")
    .optional(),
});

/** JSON text of `schema`, a refusal naming what does not parse. */
const jsonOf = <T extends z.ZodType>(schema: T) =>
  z.string().transform((text, ctx): z.output<T> => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "is not JSON" });
      return z.NEVER;
    }
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const i of parsed.error.issues) ctx.addIssue({ code: "custom", message: `${i.path.length ? `at ${i.path.join(".")}: ` : ""}${i.message}` });
    return z.NEVER;
  });

/** `DELAYLINE_SHARDS`: a JSON array of shard entries with names of their own; unset, an empty list (one shard, `main`). */
export const ShardsSetting = jsonOf(
  z
    .array(Entry)
    .min(1, "must list at least one shard")
    // A transform, not a refinement: it runs only once every entry parsed, so one bad entry is one problem.
    .transform((entries, ctx) => {
      const seen = new Set<string>();
      for (const [i, e] of entries.entries()) {
        if (seen.has(e.name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: `names shard "${e.name}" twice` });
        seen.add(e.name);
        if (e.name !== MAIN_SHARD && (e.url === undefined || e.tokenBinding === undefined))
          ctx.addIssue({ code: "custom", path: [i], message: `shard "${e.name}" needs a url and a tokenBinding (only "main" may leave them out)` });
      }
      if (!seen.has(MAIN_SHARD)) ctx.addIssue({ code: "custom", message: `must list a shard named "main" (ids without a shard, and today's keys, are its)` });
      return entries;
    }),
).optional();

/** `DELAYLINE_SHARD_PINS`: a JSON object of topic → shard name. */
export const ShardPinsSetting = jsonOf(
  z.record(z.string().regex(TOPIC_NAME_PATTERN, "is not a topic name"), z.string().regex(SHARD_NAME_PATTERN, "is not a shard name")),
).default({});

/** A shard setting's problem that only the settings together show (src/env.ts reports it as it does the others). */
interface ShardProblem {
  setting: "DELAYLINE_SHARDS" | "DELAYLINE_SHARD_PINS";
  message: string;
}

interface ShardSettings {
  redisUrl: string;
  redisToken: string;
  prefix: string;
  shards?: ShardEntry[] | undefined;
  shardPins: Record<string, string>;
}

/**
 * Every shard of the deployment, resolved: its URL, its token (read from the
 * binding its entry names) and its prefix; or the problems that stop it,
 * each naming its entry. Without `DELAYLINE_SHARDS`, the one shard `main`
 * with today's URL, token and prefix.
 */
export function resolveShards(s: ShardSettings, secret: (binding: string) => unknown): { shards: Shard[]; problems: ShardProblem[] } {
  const main: Shard = { name: MAIN_SHARD, redisUrl: s.redisUrl, redisToken: s.redisToken, prefix: s.prefix };
  if (!s.shards) return { shards: [main], problems: pinProblems(s.shardPins, [MAIN_SHARD]) };
  const problems: ShardProblem[] = [];
  const refuse = (message: string) => problems.push({ setting: "DELAYLINE_SHARDS", message });
  const shards = s.shards.map((e): Shard => {
    if (e.name === MAIN_SHARD && e.tokenBinding === undefined) return { ...main, redisUrl: e.url ?? main.redisUrl, prefix: e.prefix ?? main.prefix };
    const token = e.tokenBinding === undefined ? undefined : secret(e.tokenBinding);
    if (typeof token !== "string" || token === "") refuse(`shard "${e.name}": its tokenBinding ${e.tokenBinding} names no secret of the Worker`);
    const prefix = e.prefix ?? (e.name === MAIN_SHARD ? main.prefix : `dl:{${e.name}}`);
    return { name: e.name, redisUrl: e.url ?? main.redisUrl, redisToken: typeof token === "string" ? token : "", prefix };
  });
  const byTag = new Map<string, string>();
  for (const shard of shards) {
    const tag = hashTagOf(shard.prefix)!;
    const other = byTag.get(tag);
    if (other) refuse(`shard "${shard.name}": its prefix's hash tag {${tag}} is shard "${other}"'s too; every shard needs a hash tag of its own`);
    byTag.set(tag, shard.name);
  }
  problems.push(
    ...pinProblems(
      s.shardPins,
      shards.map((sh) => sh.name),
    ),
  );
  return { shards, problems };
}

const pinProblems = (pins: Record<string, string>, names: string[]): ShardProblem[] =>
  Object.entries(pins)
    .filter(([, shard]) => !names.includes(shard))
    .map(([topic, shard]) => ({
      setting: "DELAYLINE_SHARD_PINS" as const,
      message: `pins topic "${topic}" to shard "${shard}", which DELAYLINE_SHARDS does not list`,
    }));
