/** `delayline dead list | replay | purge`: a topic's dead letters. */
import type { Command } from "commander";
import type { DeadLetter } from "../../client/index.js";
import { MAX_LIST_LIMIT } from "../../limits.js";
import { action, bulkTarget, durationArg, instantArg, jsonValue, rowLimit, UsageError, type Io } from "../context.js";
import { first } from "../collect.js";
import { dryIds, table } from "../table.js";

interface Filter {
  failedFrom?: string | number;
  failedTo?: string | number;
  error?: string;
  label?: string;
}

/** The filter options replay and purge share. */
function withFilter(command: Command): Command {
  return command
    .option("--failed-from <instant>", "only letters that failed at or after this: ISO 8601 or epoch ms", instantArg)
    .option("--failed-to <instant>", "only letters that failed at or before this", instantArg)
    .option("--error <text>", "only letters whose last error holds this text")
    .option("--label <label>", "only letters carrying this label (walked in enqueue order)");
}

function filterOf(o: Filter): Filter | null {
  const f: Filter = {};
  if (o.failedFrom !== undefined) f.failedFrom = o.failedFrom;
  if (o.failedTo !== undefined) f.failedTo = o.failedTo;
  if (o.error !== undefined) f.error = o.error;
  if (o.label !== undefined) f.label = o.label;
  return Object.keys(f).length > 0 ? f : null;
}

export function deadCommands(program: Command, io: Io): void {
  const dead = program.command("dead").description("dead letters: jobs out of attempts, or failed for good");
  listCommand(dead, io);
  replayCommand(dead, io);
  purgeCommand(dead, io);
}

function listCommand(dead: Command, io: Io): void {
  dead
    .command("list")
    .description("a topic's dead letters, newest first")
    .argument("<topic>")
    .addOption(rowLimit("letters"))
    .option("--failed-from <instant>", "only letters that failed at or after this", instantArg)
    .option("--failed-to <instant>", "only letters that failed at or before this", instantArg)
    .option("--label <label>", "only letters carrying this label (in enqueue order)")
    .action(
      action(io, async (ctx, topic: string, o: Filter & { limit: number }) => {
        const { failedFrom, failedTo, label, limit } = o;
        const options = { failedFrom, failedTo, limit: Math.min(MAX_LIST_LIMIT, limit), ...(label === undefined ? {} : { label }) };
        const entries = await first(ctx.client().deadLetters.all(topic, options), limit);
        ctx.print({ entries }, (r) =>
          table(
            r.entries,
            [
              { header: "ID", value: (e) => e.id },
              { header: "FAILED", value: (e) => e.failedAt },
              { header: "ATTEMPTS", value: (e) => e.attempts, align: "right" },
              { header: "LAST ERROR", value: (e) => e.lastError },
              ...(r.entries.some((e) => e.labels) ? [{ header: "LABELS", value: (e: DeadLetter) => e.labels?.join(" ") ?? null }] : []),
            ],
            `(no dead letters${label === undefined ? "" : ` labelled ${label}`} in ${topic})`,
          ),
        );
      }),
    );
}

/** What `dead replay` takes besides its filter. */
interface ReplayOptions extends Filter {
  all?: boolean;
  delay?: string | number;
  spread?: string | number;
  dryRun?: boolean;
  payload?: unknown;
  target?: string;
  webhookHeaders?: Record<string, string>;
  topic?: string;
}

function replayCommand(dead: Command, io: Io): void {
  withFilter(
    bulkTarget(
      dead
        .command("replay")
        .description("put dead letters back on the schedule with fresh attempts: given ids, --all, or a filter; optionally changed")
        .argument("<topic>"),
      "dead letters",
    )
      .option("--delay <duration>", "due this long from now", durationArg)
      .option("--spread <duration>", 'spread the replayed jobs at random over this long ("10m")', durationArg)
      .option("--payload <json>", "give each replayed job this payload", jsonValue)
      .option("--target <url>", "deliver each replayed job to this URL")
      .option("--webhook-headers <json>", "give each replayed job these provider headers (a JSON object)", jsonValue)
      .option("--topic <topic>", "replay into this topic: each letter becomes a new job there"),
  ).action(
    action(io, async (ctx, topic: string, ids: string[], o: ReplayOptions) => {
      const filter = filterOf(o);
      const picked = [ids.length > 0, o.all === true, filter !== null].filter(Boolean).length;
      if (picked !== 1) throw new UsageError("give ids, or --all, or a filter (--failed-from, --failed-to, --error, --label)");
      const what = ids.length > 0 ? { ids } : o.all ? { all: true as const } : filter!;
      const r = await ctx.client().deadLetters.replay(topic, { ...what, ...replayChanges(o) });
      ctx.print(r, (r) =>
        [
          r.dryRun ? `would replay ${r.replayed}${dryIds(r.ids)}` : `replayed ${r.replayed}`,
          ...Object.entries(r.movedTo ?? {}).map(([from, to]) => `${from} -> ${to}`),
          ...(r.notFound.length > 0 ? [`not dead letters of ${topic}: ${r.notFound.join(", ")}`] : []),
        ].join("\n"),
      );
    }),
  );
}

/** A replay's timing, edits and dry run, as the client takes them. */
function replayChanges(o: ReplayOptions) {
  return {
    ...(o.delay !== undefined ? { delay: o.delay } : {}),
    ...(o.spread !== undefined ? { spread: o.spread } : {}),
    ...(o.payload !== undefined ? { payload: o.payload } : {}),
    ...(o.target !== undefined ? { target: { url: o.target } } : {}),
    ...(o.webhookHeaders !== undefined ? { webhookHeaders: o.webhookHeaders } : {}),
    ...(o.topic !== undefined ? { topic: o.topic } : {}),
    ...(o.dryRun ? { dryRun: true } : {}),
  };
}

function purgeCommand(dead: Command, io: Io): void {
  withFilter(
    dead
      .command("purge")
      .description("drop dead letters for good: --all, or those a filter picks")
      .argument("<topic>")
      .option("--all", "every dead letter of the topic")
      .option("--dry-run", "change nothing: say how many letters the purge would drop, and the first 20"),
  ).action(
    action(io, async (ctx, topic: string, o: Filter & { all?: boolean; dryRun?: boolean }) => {
      const filter = filterOf(o);
      // Dropping every letter is never the default: it has to be asked for.
      if ((filter === null) === (o.all !== true)) throw new UsageError("give --all, or a filter (--failed-from, --failed-to, --error, --label), not both");
      if (o.dryRun) {
        const r = await ctx.client().deadLetters.purge(topic, { ...filter, dryRun: true });
        ctx.print(r, (r) => `would purge ${r.purged}${dryIds(r.ids)}`);
        return;
      }
      const purged = await ctx.client().deadLetters.purge(topic, filter ?? {});
      ctx.print({ purged }, (r) => `purged ${r.purged}`);
    }),
  );
}
