/** `delayline status`: is the Worker up, is Redis, when did the tick last run, and what each topic holds. */
import type { Command } from "commander";
import type { Delayline, Health, Stats } from "../../client/index.js";
import { action, type Io } from "../context.js";
import { details, duration, table, when } from "../table.js";

export function statusCommand(program: Command, io: Io): void {
  program
    .command("status")
    .description("health, the tick's heartbeat and every topic's backlog (exit 1 when a shard's Redis is down)")
    .action(
      action(io, async (ctx) => {
        const dl = ctx.client();
        const health = await dl.health.get();
        // With every shard down every other read is a 503: the health answer is all there is to show.
        const stats = health.redis === "down" ? null : await everyTopic(dl);
        ctx.print({ health, tick: stats?.tick ?? null, topics: stats?.topics ?? [] }, () => render(health, stats));
        if (!health.ok) process.exitCode = 1;
      }),
    );
}

/** The stats of every topic: the first page's tick, and the topics of every page (the API pages them). */
async function everyTopic(dl: Delayline): Promise<Stats> {
  let first: Stats | null = null;
  const topics: Stats["topics"] = [];
  for await (const page of dl.stats.pages({ minutes: 0, limit: 100 })) {
    first ??= page;
    topics.push(...page.topics);
  }
  return { ...first!, topics, nextCursor: null };
}

function render(health: Health, stats: Stats | null): string {
  const tick = stats?.tick?.status ?? null;
  const head = details([
    ["worker", "up"],
    ["redis", health.partial ? `${health.redis} (not answering: ${health.missingShards.join(", ")})` : health.redis],
    ["last tick", health.lastTickAt === null ? "never" : `${new Date(health.lastTickAt).toISOString()} (${duration(health.tickAgeMs ?? 0)} ago)`],
    ...(tick
      ? ([
          [
            "tick",
            `${tick.ended ? `ended (${tick.ended})` : tick.asleep ? "asleep" : "running"}, ${tick.rounds} rounds, ${tick.claimed} claimed, ${tick.subrequests}/${tick.budget} subrequests`,
          ],
          ["tick updated", when(tick.updatedAt)],
        ] as Array<[string, unknown]>)
      : []),
  ]);
  if (!stats) return head;
  const topics = table(
    stats.topics,
    [
      { header: "TOPIC", value: (t) => t.topic },
      { header: "MODE", value: (t) => t.mode },
      { header: "PAUSED", value: (t) => (t.paused ? "yes" : "no") },
      { header: "SCHEDULED", value: (t) => t.scheduled, align: "right" },
      { header: "READY", value: (t) => t.ready, align: "right" },
      { header: "INFLIGHT", value: (t) => t.inflight, align: "right" },
      { header: "DEAD", value: (t) => t.dead, align: "right" },
      { header: "LAG", value: (t) => duration(t.lagMs), align: "right" },
      { header: "PER MIN", value: (t) => Math.round(t.ratePerMinute * 10) / 10, align: "right" },
    ],
    "(no topics)",
  );
  return `${head}\n\n${topics}`;
}
