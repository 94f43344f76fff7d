import { z } from "zod";
import { whsecProblem } from "./protocol/whsec.js";
import { SETTING_DECLARATIONS } from "./settings/declarations.js";
import { resolveShards, type Shard } from "./settings/shards.js";

/** How a chunk's (or a loop's) settled jobs ended: acked, retried, dead, or settled by someone else first. */
export interface Outcomes {
  ack: number;
  retry: number;
  dead: number;
  stale: number;
}

/** No outcomes yet. */
export const noOutcomes = (): Outcomes => ({ ack: 0, retry: 0, dead: 0, stale: 0 });

/** Adds `more` into `into`. */
export function addOutcomes(into: Outcomes, more: Outcomes): void {
  into.ack += more.ack;
  into.retry += more.retry;
  into.dead += more.dead;
  into.stale += more.stale;
}

/** What a TickChunk invocation reports (src/tick/chunk.ts). */
export interface TickChunkReport {
  claimed: number;
  outcomes: Outcomes;
  subrequests: number;
  /** The topic still had a full chunk's worth ready: more work remains. */
  more: boolean;
  /** The topic's earliest due job after the last chunk, or null. */
  nextDueAt?: number | null;
  /** When the topic can next make progress (its next due job, a retry the chunk scheduled, a freed slot, the rate's next token), or null for never. */
  nextLookAt?: number | null;
  /** What held ready jobs back in the last claim (see Queue.claim). */
  heldBy?: "concurrency" | "rate" | "paused" | "mode" | "bytes" | null;
  /** The topic's weight as its claim read it (absent when the claim gave no settings: a pull or a paused topic's). */
  weight?: number;
}

type Declarations = typeof SETTING_DECLARATIONS;

/** A setting's name: the binding it is read from. */
type SettingName = keyof Declarations;

type FieldOf<N extends SettingName> = Declarations[N]["field"];
type ValueOf<N extends SettingName> = Declarations[N] extends { derive: (parsed: never) => infer R } ? R : z.output<Declarations[N]["schema"]>;
type Present = { [N in SettingName as undefined extends ValueOf<N> ? never : FieldOf<N>]: ValueOf<N> };
type Absent = { [N in SettingName as undefined extends ValueOf<N> ? FieldOf<N> : never]?: Exclude<ValueOf<N>, undefined> };
type SettingBindings = { [N in SettingName]?: string };

/**
 * The Worker's bindings as Cloudflare hands them over: `[vars]` from
 * wrangler.toml and secrets, all strings, one per setting of
 * src/settings/declarations.ts. Read them through {@link settings}, never directly.
 */
export interface Env extends SettingBindings {
  /** Static files (the API reference at /docs), from `[assets]` in wrangler.toml. */
  ASSETS?: { fetch(request: Request): Promise<Response> };
  /** This Worker's TickChunk entrypoint (service binding), for fanning chunks out to invocations of their own. */
  TICK_RUNNER?: {
    /** `shard` (default `main`): which shard's queue each call works on. */
    run(topic: string, max: number, shard?: string): Promise<TickChunkReport>;
    drain(topic: string, horizonMs: number, handovers?: number, shard?: string): Promise<TickChunkReport>;
    /** Goes on with a tick loop whose invocation ran out of subrequests: the rest of its window, with a budget of its own. */
    continueTick(scheduledTime: number, windowEnd: number, handovers: number, shard?: string): Promise<{ ended: string }>;
    /** The tick of a shard other than `main`, in an invocation of its own. */
    tickShard(shard: string, scheduledTime: number): Promise<{ ended: string }>;
    /** Starts a tick loop of the deployment with key prefix `prefix` now, until the next cron's look (the wake alarm's), unless one runs. */
    wakeTick(prefix: string): Promise<{ ended: string }>;
  };
  /**
   * The tick's wake alarm (Durable Object namespace of the TickAlarm class,
   * src/tick/alarm-object.ts). With it the tick ends its loop when idle and the
   * cron only looks; without it the loop sleeps through its minute.
   */
  TICK_ALARM?: {
    idFromName(name: string): object;
    get(id: object): { arm(at: number, prefix: string): Promise<void> };
  };
}

/**
 * Settings parsed from {@link Env}, with defaults applied: one field per
 * declaration of src/settings/declarations.ts, where each field's meaning,
 * default and bounds are written (and docs/configuration.md states them).
 */
export interface Settings extends Omit<Present, "shards">, Absent {
  /** Every shard, resolved (URL, token from its binding, prefix); one, `main`, without `DELAYLINE_SHARDS`. */
  shards: Shard[];
}

const declared = Object.entries(SETTING_DECLARATIONS) as Array<[SettingName, Declarations[SettingName]]>;

const SettingsSchema = z
  .object(Object.fromEntries(declared.map(([name, d]) => [name, d.schema])) as { [N in SettingName]: Declarations[N]["schema"] })
  .superRefine((s, ctx) => {
    const problem = s.SIGNING_SCHEME === "standard" && s.SIGNING_SECRET !== undefined ? whsecProblem(s.SIGNING_SECRET) : null;
    if (problem) ctx.addIssue({ code: "custom", path: ["SIGNING_SECRET"], message: `with SIGNING_SCHEME=standard, must be ${problem}` });
  });

/** Every setting's name; `npm start` passes any of them found in its environment to the Worker. */
export const SETTING_NAMES = declared.map(([name]) => name);

/** Bad deployment settings; the message names each offending setting. */
export class SettingsError extends Error {
  override name = "SettingsError";
}

const cache = new WeakMap<object, Settings>();

/** A setting that breaks its rule, e.g. `{ setting: "SIGNING_SECRET", message: "must be at least 16 characters" }`. */
export interface SettingProblem {
  setting: string;
  message: string;
}

// Empty strings mean "unset" so `[vars]` can list a setting without a value.
const present = (env: Env) => Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string" && v !== ""));

/**
 * Checks `env` against the Worker's settings schema without building
 * anything: every bad setting with its rule, or an empty list. `npm start`
 * calls it before it starts a process, so a bad value fails there at once.
 */
export function validateSettings(env: Env): SettingProblem[] {
  const parsed = SettingsSchema.safeParse(present(env));
  return parsed.success ? withShards(settingsOf(parsed.data as Record<SettingName, unknown>), env).problems : problemsOf(parsed.error);
}

/** The settings with their shards resolved (a token is read from the binding its shard names), and what stops that. */
function withShards(parsed: Record<string, unknown>, env: Env): { settings: Settings; problems: SettingProblem[] } {
  const p = parsed as unknown as Settings & Parameters<typeof resolveShards>[0];
  const { shards, problems } = resolveShards(p, (binding) => (env as Record<string, unknown>)[binding]);
  return { settings: { ...p, shards }, problems };
}

const problemsOf = (error: z.ZodError): SettingProblem[] => error.issues.map((i) => ({ setting: i.path.join("."), message: i.message }));

/**
 * Parses and caches the settings of one `env`. Throws {@link SettingsError}
 * naming every bad setting, so a misconfigured deployment fails loudly on its
 * first request instead of misbehaving later.
 */
export function settings(env: Env): Settings {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = SettingsSchema.safeParse(present(env));
  if (!parsed.success) {
    const problems = problemsOf(parsed.error).map((p) => `${p.setting} ${p.message}`);
    throw new SettingsError(`invalid delayline settings: ${problems.join("; ")}`);
  }
  const { settings: result, problems } = withShards(settingsOf(parsed.data as Record<SettingName, unknown>), env);
  if (problems.length > 0) throw new SettingsError(`invalid delayline settings: ${problems.map((p) => `${p.setting} ${p.message}`).join("; ")}`);
  cache.set(env, result);
  return result;
}

/** Each declaration's value under its field; a derived default once the values it needs are known. */
function settingsOf(parsed: Record<SettingName, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [name, d] of declared) {
    const value = parsed[name] ?? ("derive" in d ? (d.derive as (p: Record<SettingName, unknown>) => unknown)(parsed) : undefined);
    if (value !== undefined) result[d.field] = value;
  }
  return result;
}
