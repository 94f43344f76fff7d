/**
 * Jobs: `enqueue`, `jobs upsert` (also `upsert`), `get`, `cancel`, `bulk-cancel`, and `jobs` (a topic's scheduled
 * jobs, jobs in flight or dead letters).
 */
import { Option, type Command } from "commander";
import type { Attempt, Job, JobRequest, ListedJob, UpsertRequest } from "../../client/index.js";
import { MAX_LABELS, MAX_LIST_LIMIT, MAX_MAX_ATTEMPTS, MAX_PRIORITY, MAX_TIMEOUT_MS, MIN_MAX_ATTEMPTS, MIN_TIMEOUT_MS } from "../../limits.js";
import { readFile } from "node:fs/promises";
import { action, bulkTarget, durationArg, instantArg, jsonValue, rowLimit, UsageError, wholeNumber, type Io } from "../context.js";
import { first } from "../collect.js";
import { details, dryIds, duration, table, when } from "../table.js";

export function jobCommands(program: Command, io: Io): void {
  enqueueCommand(program, io);
  upsertCommand(program, io);
  getCommand(program, io);
  cancelCommand(program, io);
  bulkCancelCommand(program, io);
  // `jobs upsert` is the name the docs give; `jobs <topic>` still lists any topic but one named "upsert".
  upsertCommand(listCommand(program, io), io);
}

/** The options `enqueue` and `upsert` share: the payload, when, the delivery and the flow key. */
function jobOptions(command: Command): Command {
  return command
    .argument("[payload]", "the payload, as JSON", jsonValue)
    .option("--payload-file <path>", 'read the payload (JSON) from this file; "-" reads it from standard input')
    .option("--delay <duration>", 'run after this long: "90s", "1h", or ms', durationArg)
    .option("--run-at <instant>", "run at this time: ISO 8601 or epoch ms", instantArg)
    .option("--expires-at <instant>", "expire (never start) unless started by this time: ISO 8601 or epoch ms", instantArg)
    .option("--ttl <duration>", 'the same as --expires-at, from now: "10m", "1h", or ms', durationArg)
    .option("--max-attempts <n>", "attempts before the job is a dead letter", wholeNumber(MIN_MAX_ATTEMPTS, MAX_MAX_ATTEMPTS))
    .option("--timeout-ms <ms>", "the delivery's timeout", wholeNumber(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS))
    .option("--target <url>", "deliver to this URL instead of the topic's")
    .option("--flow-key <key>", "the flow key (a tenant, customer or host) whose turns and limits the job goes by")
    .option(
      "--priority <n>",
      `0 (default) to ${MAX_PRIORITY}: a head start over its key's other due jobs (priority × the topic's flow.priorityStepMs)`,
      wholeNumber(0, MAX_PRIORITY),
    )
    .option(
      "--label <label>",
      `a label of the job (repeat it for more, up to ${MAX_LABELS}): listings and bulk calls filter by it`,
      (label: string, labels: string[]) => [...labels, label],
      [],
    );
}

function enqueueCommand(program: Command, io: Io): void {
  jobOptions(program.command("enqueue").description("enqueue one job").argument("<topic>", "the job's topic"))
    .option("--idempotency-key <key>", "a repeat of this key within the window returns the first job")
    .addOption(
      new Option(
        "--idempotency-until <until>",
        "how long the key holds: its window (default), or until its job has finished (succeeded, dead, cancelled)",
      ).choices(["window", "finished"]),
    )
    .action(
      action(io, async (ctx, topic: string, payload: unknown, o: Record<string, unknown>) => {
        const r = await ctx.client().jobs.enqueue(await jobOf(ctx.io, topic, payload, o));
        ctx.print(r, (r) =>
          details([
            ["id", r.id],
            ["topic", r.topic],
            ["due", when(r.dueAt)],
            ["deduplicated", r.deduplicated ? "yes (an earlier job with this key or content)" : "no"],
          ]),
        );
      }),
    );
}

function upsertCommand(parent: Command, io: Io): void {
  jobOptions(
    parent
      .command("upsert")
      .description("upsert one job by its job key: a new job, or the key's pending job replaced (or, with --on-conflict ignore, left as it is)")
      .argument("<topic>", "the job's topic")
      .argument("<job-key>", "the job key: a topic holds at most one pending job under it"),
  )
    .addOption(
      new Option(
        "--on-conflict <what>",
        "what becomes of the key's pending job: its payload and due time replaced, its payload with its due time kept, or nothing",
      )
        .choices(["replace", "keepDue", "ignore"])
        .default("replace"),
    )
    .option("--max-wait <duration>", "with replace: how long after the pending job's first enqueue it may still be put off", durationArg)
    .action(
      action(io, async (ctx, topic: string, jobKey: string, payload: unknown, o: Record<string, unknown>) => {
        const job: UpsertRequest = { ...(await jobOf(ctx.io, topic, payload, o)), jobKey, onConflict: o.onConflict as UpsertRequest["onConflict"] };
        if (o.maxWait !== undefined) job.maxWait = o.maxWait as string | number;
        const r = await ctx.client().jobs.upsert(job);
        ctx.print(r, (r) =>
          details([
            ["id", r.id],
            ["topic", r.topic],
            ["due", when(r.dueAt)],
            ["result", r.result],
          ]),
        );
      }),
    );
}

/** The job `enqueue`'s (and `upsert`'s) arguments and options describe. */
async function jobOf(io: Io, topic: string, payload: unknown, o: Record<string, unknown>): Promise<JobRequest> {
  const job: JobRequest = { topic };
  if (payload !== undefined && o.payloadFile !== undefined) throw new UsageError("give the payload as an argument or --payload-file, not both");
  if (payload !== undefined) job.payload = payload;
  if (o.payloadFile !== undefined) job.payload = await readPayload(io, o.payloadFile as string);
  if (o.delay !== undefined) job.delay = o.delay as string | number;
  if (o.runAt !== undefined) job.runAt = o.runAt as string | number;
  if (o.expiresAt !== undefined) job.expiresAt = o.expiresAt as string | number;
  if (o.ttl !== undefined) job.ttl = o.ttl as string | number;
  if (o.maxAttempts !== undefined) job.maxAttempts = o.maxAttempts as number;
  if (o.timeoutMs !== undefined) job.timeoutMs = o.timeoutMs as number;
  if (o.target !== undefined) job.target = { url: o.target as string };
  if (o.idempotencyKey !== undefined) job.idempotencyKey = o.idempotencyKey as string;
  if (o.idempotencyUntil !== undefined) {
    if (o.idempotencyKey === undefined) throw new UsageError("--idempotency-until goes with --idempotency-key");
    job.idempotencyUntil = o.idempotencyUntil as "window" | "finished";
  }
  if (o.flowKey !== undefined) job.flowKey = o.flowKey as string;
  if (o.priority !== undefined) job.priority = o.priority as number;
  if ((o.label as string[]).length > 0) job.labels = o.label as string[];
  return job;
}

function getCommand(program: Command, io: Io): void {
  program
    .command("get")
    .description("a job's state, payload and attempt history")
    .argument("<id>", "the job's id")
    .action(
      action(io, async (ctx, id: string) => {
        const job = await ctx.client().jobs.get(id);
        if (!job) throw new Error(`no job ${id} (unknown, or finished longer ago than the retention window)`);
        ctx.print(job, renderJob);
      }),
    );
}

function cancelCommand(program: Command, io: Io): void {
  program
    .command("cancel")
    .description("cancel scheduled jobs (not those in flight)")
    .argument("<id...>", "job ids")
    .action(
      action(io, async (ctx, ids: string[]) => {
        const dl = ctx.client();
        for (const id of ids) await dl.jobs.cancel(id);
        ctx.print({ cancelled: ids }, (r) => r.cancelled.map((id) => `cancelled ${id}`).join("\n"));
      }),
    );
}

function bulkCancelCommand(program: Command, io: Io): void {
  bulkTarget(
    program
      .command("bulk-cancel")
      .description("cancel a topic's scheduled jobs (not those in flight): given ids, a due window and/or a label, or --all")
      .argument("<topic>", "the topic"),
    "scheduled jobs",
  )
    .option("--due-from <instant>", "only jobs due at or after this: ISO 8601 or epoch ms", instantArg)
    .option("--due-to <instant>", "only jobs due at or before this", instantArg)
    .option("--label <label>", "only jobs carrying this label (walked in enqueue order)")
    .action(
      action(io, async (ctx, topic: string, ids: string[], o: BulkCancelOptions) => {
        const window = {
          ...(o.dueFrom !== undefined ? { dueFrom: o.dueFrom } : {}),
          ...(o.dueTo !== undefined ? { dueTo: o.dueTo } : {}),
          ...(o.label !== undefined ? { label: o.label } : {}),
        };
        const picked = [ids.length > 0, o.all === true, Object.keys(window).length > 0].filter(Boolean).length;
        if (picked !== 1) throw new UsageError("give ids, or --due-from/--due-to and/or --label, or --all");
        const what = ids.length > 0 ? { ids } : o.all ? { all: true as const } : window;
        const r = await ctx.client().jobs.bulkCancel(topic, { ...what, ...(o.dryRun ? { dryRun: true } : {}) });
        ctx.print(r, (r) =>
          [
            r.dryRun ? `would cancel ${r.cancelled}${dryIds(r.ids)}` : `cancelled ${r.cancelled}`,
            `in flight (left alone): ${r.inflight}`,
            ...(r.notScheduled ? [`neither scheduled nor in flight: ${r.notScheduled}`] : []),
          ].join("\n"),
        );
      }),
    );
}

/** What `bulk-cancel <topic>` takes besides ids. */
interface BulkCancelOptions {
  dueFrom?: string | number;
  dueTo?: string | number;
  label?: string;
  all?: boolean;
  dryRun?: boolean;
}

/** What `jobs <topic>` takes. */
interface ListOptions {
  state: "scheduled" | "inflight" | "dead";
  from?: string | number;
  to?: string | number;
  limit: number;
  payload?: boolean;
  flowKey?: string;
  label?: string;
}

/** `jobs <topic>`; returns the command, under which `jobs upsert` goes. */
function listCommand(program: Command, io: Io): Command {
  return program
    .command("jobs")
    .description("a topic's scheduled jobs (due order), jobs in flight or dead letters (newest first)")
    .argument("<topic>", "the topic")
    .addOption(new Option("--state <state>", "which jobs").choices(["scheduled", "inflight", "dead"]).default("scheduled"))
    .option("--from <instant>", "earliest due time / lease deadline / failed time: ISO 8601 or epoch ms", instantArg)
    .option("--to <instant>", "latest due time / lease deadline / failed time", instantArg)
    .addOption(rowLimit("jobs"))
    .option("--payload", "include payloads")
    .option("--flow-key <key>", "only this flow key's jobs (scheduled: exactly, in due order; in flight and dead: each page filtered)")
    .option("--label <label>", "only jobs carrying this label (in enqueue order; not with --flow-key)")
    .action(
      action(io, async (ctx, topic: string, o: ListOptions) => {
        const { state, from, to, limit, flowKey, label } = o;
        const listed = ctx.client().jobs.all(topic, {
          state,
          from,
          to,
          limit: Math.min(limit, MAX_LIST_LIMIT),
          payload: o.payload === true,
          ...(flowKey === undefined ? {} : { flowKey }),
          ...(label === undefined ? {} : { label }),
        });
        const jobs = await first(listed, limit);
        ctx.print({ jobs }, (r) => jobsTable(r.jobs, topic, o));
      }),
    );
}

function jobsTable(jobs: ListedJob[], topic: string, o: ListOptions): string {
  return table(
    jobs,
    [
      { header: "ID", value: (j) => j.id },
      { header: "STATE", value: (j) => j.state },
      {
        header: o.state === "dead" ? "FAILED" : o.state === "inflight" ? "LEASE UNTIL" : "DUE",
        value: (j) => j.failedAt ?? j.leaseExpiresAt ?? j.dueAt,
      },
      { header: "ATTEMPTS", value: (j) => j.attempts, align: "right" },
      { header: "LAST ERROR", value: (j) => j.lastError },
      // Only where some job carries labels: an unlabelled topic's table stays as narrow as it was.
      ...(jobs.some((j) => j.labels) ? [{ header: "LABELS", value: (j: ListedJob) => j.labels?.join(" ") ?? null }] : []),
      ...(o.payload ? [{ header: "PAYLOAD", value: (j: ListedJob) => j.payload }] : []),
    ],
    `(no ${o.state} jobs${o.flowKey === undefined ? "" : ` of flow key ${JSON.stringify(o.flowKey)}`}${o.label === undefined ? "" : ` labelled ${o.label}`} in ${topic})`,
  );
}

/** The JSON payload in a file, or on standard input for "-". */
async function readPayload(io: Io, path: string): Promise<unknown> {
  const text = path === "-" ? await io.stdin() : await readFile(path, "utf8");
  const where = path === "-" ? "standard input" : path;
  if (text.trim() === "") throw new UsageError(`--payload-file: ${where} is empty: give the payload as JSON`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--payload-file: ${where} is not JSON (${(err as Error).message})`);
  }
}

function renderJob(job: Job): string {
  const head = details([
    ["id", job.id],
    ["topic", job.topic],
    ["state", job.state],
    ["due", when(job.dueAt)],
    ["attempts", `${job.attempts} of ${job.maxAttempts}`],
    ["last error", job.lastError],
    ["created", job.createdAt],
    ...(job.leaseExpiresAt ? ([["lease until", job.leaseExpiresAt]] as Array<[string, unknown]>) : []),
    ...(job.finishedAt ? ([["finished", job.finishedAt]] as Array<[string, unknown]>) : []),
    ...(job.scheduleId ? ([["schedule", `${job.scheduleId} (occurrence ${job.scheduledFor})`]] as Array<[string, unknown]>) : []),
    ...(job.flowKey !== undefined ? ([["flow key", job.flowKey]] as Array<[string, unknown]>) : []),
    ...(job.labels !== undefined ? ([["labels", job.labels.join(" ")]] as Array<[string, unknown]>) : []),
    ...(job.priority !== undefined ? ([["priority", job.priority]] as Array<[string, unknown]>) : []),
    ...(job.jobKey !== undefined ? ([["job key", `${job.jobKey} (replaced ${job.replacements ?? 0}×)`]] as Array<[string, unknown]>) : []),
    ...(job.expiresAt !== undefined ? ([["expires", job.expiresAt]] as Array<[string, unknown]>) : []),
    ["payload", job.payload],
  ]);
  if (job.history.length === 0) return head;
  return `${head}\n\n${historyTable(job.history)}`;
}

/** A job's or dead letter's attempts, oldest first. */
function historyTable(history: Attempt[]): string {
  return table(history, [
    { header: "ATTEMPT", value: (a) => a.attempt, align: "right" },
    { header: "STARTED", value: (a) => a.startedAt },
    { header: "TOOK", value: (a) => (a.durationMs === null ? null : duration(a.durationMs)), align: "right" },
    { header: "OUTCOME", value: (a) => a.outcome },
    { header: "HTTP", value: (a) => a.httpStatus },
    { header: "ERROR", value: (a) => a.error },
  ]);
}
