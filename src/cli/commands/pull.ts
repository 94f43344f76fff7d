/**
 * Pull consumers from the command line: `claim` a pull topic's due jobs,
 * then `ack`, `nack` or `extend` each claimed attempt (a script's worker, or
 * an operator settling a job by hand). Each is one request, fenced by the
 * attempt number as the API fences it; a stale attempt is the API's 409.
 */
import type { Command } from "commander";
import { MAX_BATCH, MAX_LEASE_MS, MIN_LEASE_MS } from "../../limits.js";
import { action, wholeNumber, type Io } from "../context.js";
import { details, table, when } from "../table.js";

const attemptOption = (command: Command) =>
  command.requiredOption("--attempt <n>", "the attempt number the claim gave", wholeNumber(1, Number.MAX_SAFE_INTEGER));

export function pullCommands(program: Command, io: Io): void {
  program
    .command("claim")
    .description("lease up to --max due jobs of a pull topic (sent once: a retry would lease a second set)")
    .argument("<topic>", "the pull topic")
    .option("--max <n>", "most jobs to lease", wholeNumber(1, MAX_BATCH), 1)
    .option("--lease-ms <ms>", "how long the lease holds before the job is due again", wholeNumber(MIN_LEASE_MS, MAX_LEASE_MS))
    .action(
      action(io, async (ctx, topic: string, o: { max: number; leaseMs?: number }) => {
        const jobs = await ctx.client().jobs.claim(topic, { max: o.max, ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }) });
        ctx.print({ jobs }, (r) =>
          table(
            r.jobs,
            [
              { header: "ID", value: (j) => j.id },
              { header: "ATTEMPT", value: (j) => j.attempt, align: "right" },
              { header: "DUE", value: (j) => j.dueAt },
              { header: "LEASE UNTIL", value: (j) => j.leaseExpiresAt },
              { header: "PAYLOAD", value: (j) => j.payload },
            ],
            `(no due jobs in ${topic})`,
          ),
        );
      }),
    );

  attemptOption(program.command("ack").description("a claimed attempt succeeded").argument("<id>", "the job's id")).action(
    action(io, async (ctx, id: string, o: { attempt: number }) => {
      await ctx.client().jobs.ack(id, o.attempt);
      ctx.print({ id, attempt: o.attempt, state: "succeeded" }, (r) => `acked ${r.id} (attempt ${r.attempt})`);
    }),
  );

  attemptOption(program.command("nack").description("a claimed attempt failed: retried by the topic's policy, or dead").argument("<id>", "the job's id"))
    .requiredOption("--error <text>", "what went wrong (kept in the attempt history)")
    .option("--retry-after-ms <ms>", "retry after this long instead of the policy's backoff", wholeNumber(0, Number.MAX_SAFE_INTEGER))
    .option("--permanent", "no retry: the job is a dead letter at once")
    .action(
      action(io, async (ctx, id: string, o: { attempt: number; error: string; retryAfterMs?: number; permanent?: boolean }) => {
        const failure = {
          error: o.error,
          ...(o.retryAfterMs === undefined ? {} : { retryAfterMs: o.retryAfterMs }),
          ...(o.permanent ? { permanent: true } : {}),
        };
        const state = await ctx.client().jobs.nack(id, o.attempt, failure);
        ctx.print({ id, attempt: o.attempt, state }, (r) => `nacked ${r.id} (attempt ${r.attempt}): ${r.state}`);
      }),
    );

  attemptOption(
    program
      .command("extend")
      .description("move a claimed attempt's lease to now + --lease-ms, so long work is not claimed again")
      .argument("<id>", "the job's id"),
  )
    .requiredOption("--lease-ms <ms>", "the new lease, from now", wholeNumber(MIN_LEASE_MS, MAX_LEASE_MS))
    .action(
      action(io, async (ctx, id: string, o: { attempt: number; leaseMs: number }) => {
        const r = await ctx.client().jobs.extend(id, o.attempt, o.leaseMs);
        ctx.print(r, (r) =>
          details([
            ["id", id],
            ["attempt", o.attempt],
            ["lease until", when(r.leaseExpiresAt)],
          ]),
        );
      }),
    );
}
