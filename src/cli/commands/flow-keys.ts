/** `delayline flow-keys list | show | set | delete | pause | resume`: a topic's flow keys' own settings, and each key's length. */
import type { Command } from "commander";
import type { FlowKey, FlowKeySettings, FlowSettings } from "../../client/index.js";
import { DEFAULT_PRIORITY_STEP_MS, MAX_BURST, MAX_CONCURRENCY, MAX_FLOW_WEIGHT, MAX_LIST_LIMIT, MAX_MAX_LENGTH } from "../../limits.js";
import { first } from "../collect.js";
import { action, askCommand, positiveNumber, rowLimit, UsageError, wholeNumber, type Io } from "../context.js";
import { details, duration, table } from "../table.js";

export function flowKeyCommands(program: Command, io: Io): void {
  const keys = program
    .command("flow-keys")
    .description("a topic's flow keys' own settings (limits, weight, paused, cap) over the topic's flow settings (topics set --flow), and their lengths");
  listCommand(keys, io);
  askCommand(
    keys,
    io,
    "show <topic> <key>",
    "a key's own settings and its length",
    async (dl, t, k) => (await dl.flowKeys.get(t, k)) ?? unknownKey(t, k),
    renderKey,
  ).alias("get");
  setCommand(keys, io);
  askCommand(
    keys,
    io,
    "delete <topic> <key>",
    "remove a key's own settings: it takes the topic's flow settings again, unpaused",
    async (dl, t, k) => ((await dl.flowKeys.delete(t, k)) ? { topic: t, key: k, deleted: true } : noSettings(t, k)),
    (r) => `removed the settings of flow key ${JSON.stringify(r.key)} of ${r.topic}`,
  );
  askCommand(
    keys,
    io,
    "pause <topic> <key>",
    "start none of the key's jobs until it is resumed (its other settings stay)",
    (dl, t, k) => dl.flowKeys.pause(t, k),
    renderKey,
  );
  askCommand(keys, io, "resume <topic> <key>", "resume a paused key (its other settings stay)", (dl, t, k) => dl.flowKeys.resume(t, k), renderKey);
}

function listCommand(keys: Command, io: Io): void {
  keys
    .command("list <topic>")
    .description("the topic's keys that have settings of their own (the API pages them; this follows every page)")
    .addOption(rowLimit("keys"))
    .action(
      action(io, async (ctx, topic: string, o: { limit: number }) => {
        const listed = await first(ctx.client().flowKeys.all(topic, { limit: Math.min(o.limit, MAX_LIST_LIMIT) }), o.limit);
        // A key a later page lists again is shown once.
        const byKey = new Map(listed.map((k) => [k.key, k]));
        ctx.print({ keys: [...byKey.values()] }, (r) =>
          table(
            r.keys,
            [
              { header: "KEY", value: (k) => k.key },
              { header: "PAUSED", value: (k) => (k.settings.paused ? "yes" : "no") },
              { header: "RATE", value: (k) => rateText(k.settings) },
              { header: "PARALLELISM", value: (k) => k.settings.parallelism, align: "right" },
              { header: "WEIGHT", value: (k) => k.settings.weight, align: "right" },
              { header: "MAX LENGTH", value: (k) => k.settings.maxKeyLength, align: "right" },
              { header: "LENGTH", value: (k) => k.length, align: "right" },
            ],
            `(no flow keys with settings of their own in ${topic})`,
          ),
        );
      }),
    );
}

function setCommand(keys: Command, io: Io): void {
  keys
    .command("set")
    .description("set a key's own settings, replacing those it had: a setting not given takes the topic's")
    .argument("<topic>")
    .argument("<key>")
    .option("--rate-per-sec <n>", "jobs a second the key may start", positiveNumber)
    .option("--burst <n>", "jobs the key may start at once after idling", wholeNumber(1, MAX_BURST))
    .option("--parallelism <n>", "most jobs of the key in flight at once", wholeNumber(1, MAX_CONCURRENCY))
    .option("--weight <n>", "jobs the key starts per turn while keys compete", wholeNumber(1, MAX_FLOW_WEIGHT))
    .option("--paused", "start none of the key's jobs")
    .option("--max-key-length <n>", "most pending jobs the key holds, over the topic's --max-key-length", wholeNumber(1, MAX_MAX_LENGTH))
    .action(
      action(io, async (ctx, topic: string, key: string, o: FlowKeySettings) => {
        const { ratePerSec, burst, parallelism, weight, paused, maxKeyLength } = o;
        const given = { ratePerSec, burst, parallelism, weight, paused, maxKeyLength };
        const settings = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
        if (Object.keys(settings).length === 0) {
          throw new UsageError(
            "nothing to set: give --rate-per-sec, --burst, --parallelism, --weight, --paused or --max-key-length (flow-keys delete removes a key's settings)",
          );
        }
        ctx.print(await ctx.client().flowKeys.set(topic, key, settings), renderKey);
      }),
    );
}

/** The error for a key that has neither settings of its own nor pending jobs. */
function unknownKey(topic: string, key: string): never {
  throw new Error(`flow key ${JSON.stringify(key)} of ${topic} has no settings of its own (it takes the topic's flow settings) and no pending jobs`);
}

/** The error for a key that has no settings of its own. */
function noSettings(topic: string, key: string): never {
  throw new Error(`flow key ${JSON.stringify(key)} of ${topic} has no settings of its own (it takes the topic's flow settings)`);
}

const THE_TOPICS = "(the topic's)";

/** The rate and burst a key's settings or a topic's flow settings give (null when neither is set). */
function rateText(s: FlowSettings): string | null {
  if (s.ratePerSec === undefined) return s.burst === undefined ? null : `burst ${s.burst}`;
  return `${s.ratePerSec}/s${s.burst !== undefined ? `, burst ${s.burst}` : ""}`;
}

function renderKey(k: FlowKey): string {
  const s = k.settings;
  return details([
    ["topic", k.topic],
    ["key", k.key],
    ["paused", s.paused ? "yes" : "no"],
    ["rate", rateText(s) ?? THE_TOPICS],
    ["parallelism", s.parallelism ?? THE_TOPICS],
    ["weight", s.weight ?? THE_TOPICS],
    ["max length", s.maxKeyLength ?? THE_TOPICS],
    ["length", `${k.length} pending`],
  ]);
}

/** A topic's flow settings in one line, for `topics show`: what each of its keys gets unless it has its own. */
export function flowText(f: FlowSettings | undefined): string {
  if (f === undefined) return `none (no per-key limits, weight 1, priority step ${duration(DEFAULT_PRIORITY_STEP_MS)})`;
  const parts = [
    rateText(f) === null ? null : `rate ${rateText(f)}`,
    f.parallelism === undefined ? null : `parallelism ${f.parallelism}`,
    f.weight === undefined ? null : `weight ${f.weight}`,
    f.priorityStepMs === undefined ? null : `priority step ${duration(f.priorityStepMs)}`,
  ].filter((p) => p !== null);
  return parts.length === 0 ? "set, all defaults" : `per key: ${parts.join(", ")}`;
}
