/** `delayline schedules list | show | create | delete | pause | resume`. */
import type { Command } from "commander";
import type { Schedule, ScheduleRequest } from "../../client/index.js";
import { action, askCommand, durationArg, instantArg, jsonValue, UsageError, wholeNumber, type Io } from "../context.js";
import { details, duration, table, when } from "../table.js";

export function scheduleCommands(program: Command, io: Io): void {
  const schedules = program.command("schedules").description("recurring schedules: each occurrence enqueues one job");
  listCommand(schedules, io);
  showCommand(schedules, io);
  createCommand(schedules, io);
  deleteCommand(schedules, io);
  askCommand(schedules, io, "pause <id>", "skip the schedule's occurrences until it is resumed", (dl, id) => dl.schedules.pause(id), renderSchedule);
  askCommand(schedules, io, "resume <id>", "go on from the schedule's next occurrence after now", (dl, id) => dl.schedules.resume(id), renderSchedule);
}

function listCommand(schedules: Command, io: Io): void {
  schedules
    .command("list", { isDefault: true })
    .description("every schedule, in id order")
    .action(
      action(io, async (ctx) => {
        const all: Schedule[] = [];
        for await (const s of ctx.client().schedules.all()) all.push(s);
        ctx.print({ schedules: all }, (r) =>
          table(
            r.schedules,
            [
              { header: "ID", value: (s) => s.id },
              { header: "WHEN", value: (s) => (s.cron !== null ? `cron ${s.cron}` : `every ${duration(s.every ?? 0)}`) },
              { header: "ZONE", value: (s) => s.timezone },
              { header: "TOPIC", value: (s) => s.topic },
              { header: "NEXT RUN", value: (s) => s.nextRunAt },
              { header: "RUNS", value: (s) => s.runs, align: "right" },
              { header: "LAST JOB", value: (s) => (s.lastJobId ? `${s.lastJobId} (${s.lastJobState ?? "gone"})` : null) },
              { header: "PAUSED", value: (s) => (s.paused ? "yes" : "no") },
            ],
            "(no schedules)",
          ),
        );
      }),
    );
}

function showCommand(schedules: Command, io: Io): void {
  schedules
    .command("show")
    .description("a schedule with its next occurrences and last run")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) => {
        const s = await ctx.client().schedules.get(id);
        if (!s) throw new Error(`no schedule ${id}`);
        ctx.print(s, renderSchedule);
      }),
    );
}

function createCommand(schedules: Command, io: Io): void {
  schedules
    .command("create")
    .alias("set")
    .description("create a schedule, or replace the one with this id (the same timing keeps its next occurrence)")
    .argument("<id>")
    .requiredOption("--topic <topic>", "the topic of the jobs it enqueues")
    .option("--cron <expression>", 'a cron expression, 5 fields or 6 with seconds: "0 9 * * 1-5"')
    .option("--every <duration>", 'an interval: "30s", "1h" (at least 1 s)', durationArg)
    .option("--timezone <zone>", "the IANA time zone the cron expression is read in (default UTC)")
    .option("--payload <json>", "the jobs' payload, as JSON", jsonValue)
    .option("--target <url>", "deliver the jobs to this URL instead of the topic's")
    .option("--start-at <instant>", "no occurrence before this: ISO 8601 or epoch ms", instantArg)
    .option("--end-at <instant>", "no occurrence after this", instantArg)
    .option("--limit <n>", "most occurrences in all", wholeNumber(1, 1_000_000_000))
    .option("--grace <duration>", 'occurrences missed by more than this collapse into one (default "1m")', durationArg)
    .option("--max-attempts <n>", "the jobs' attempts before they are dead letters", wholeNumber(1, 100))
    .action(
      action(io, async (ctx, id: string, o: Record<string, unknown>) => {
        if ((o.cron === undefined) === (o.every === undefined)) throw new UsageError("give exactly one of --cron or --every");
        const body: Record<string, unknown> = { topic: o.topic };
        for (const key of ["cron", "every", "timezone", "payload", "startAt", "endAt", "limit", "grace", "maxAttempts"])
          if (o[key] !== undefined) body[key] = o[key];
        if (o.target !== undefined) body.target = { url: o.target };
        ctx.print(await ctx.client().schedules.upsert(id, body as ScheduleRequest), renderSchedule);
      }),
    );
}

function deleteCommand(schedules: Command, io: Io): void {
  schedules
    .command("delete")
    .description("delete a schedule (the jobs it enqueued stay)")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) => {
        if (!(await ctx.client().schedules.delete(id))) throw new Error(`no schedule ${id}`);
        ctx.print({ id, deleted: true }, () => `deleted schedule ${id}`);
      }),
    );
}

function renderSchedule(s: Schedule): string {
  return details([
    ["id", s.id],
    ["when", s.cron !== null ? `cron ${s.cron} (${s.timezone})` : `every ${duration(s.every ?? 0)}`],
    ["topic", s.topic],
    ["payload", s.payload],
    ["target", s.target?.url],
    ["paused", s.paused ? "yes" : "no"],
    ["start at", s.startAt],
    ["end at", s.endAt],
    ["limit", s.limit],
    ["grace", duration(s.grace)],
    ["next runs", s.nextRuns.join(", ")],
    ["runs", s.runs],
    ["last run", s.lastRunAt],
    ["last job", s.lastJobId ? `${s.lastJobId} (${s.lastJobState ?? "past retention"})` : null],
    ["created", s.createdAt],
    ["updated", when(s.updatedAt)],
  ]);
}
