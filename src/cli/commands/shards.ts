/** `delayline shards plan --add <name>`: what adding a shard would move, and the pins that keep everything in place. */
import { type Command, InvalidArgumentError } from "commander";
import { SHARD_NAME_PATTERN } from "../../queue/ids.js";
import { planShardAdd } from "../../queue/placement.js";
import { action, UsageError, type Io } from "../context.js";
import { table } from "../table.js";

/** commander parser: a shard's name. */
function shardName(value: string): string {
  if (!SHARD_NAME_PATTERN.test(value)) throw new InvalidArgumentError("1–32 characters of a–z 0–9 -");
  return value;
}

/** The shards' names in a `DELAYLINE_SHARDS` value, or `main` alone when there is none. */
function shardNames(setting: string | undefined): string[] {
  if (!setting) return ["main"];
  try {
    return (JSON.parse(setting) as Array<{ name: string }>).map((s) => shardName(s.name));
  } catch (err) {
    throw new UsageError(`DELAYLINE_SHARDS (or --shards) is not a JSON array of shards: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function pinsOf(setting: string | undefined): Record<string, string> {
  if (!setting) return {};
  try {
    return JSON.parse(setting) as Record<string, string>;
  } catch {
    throw new UsageError("DELAYLINE_SHARD_PINS (or --pins) is not a JSON object of topic → shard");
  }
}

export function shardCommands(program: Command, io: Io): void {
  const shards = program.command("shards").description("the deployment's shards (DELAYLINE_SHARDS)");
  shards
    .command("plan")
    .description(
      "the topics adding a shard would move (rendezvous hashing gives it about 1/n of them) and the DELAYLINE_SHARD_PINS that keep every topic where it is: set them, then add the shard",
    )
    .requiredOption("--add <name>", "the shard to add", shardName)
    .option("--shards <json>", "the deployment's DELAYLINE_SHARDS (default: $DELAYLINE_SHARDS, else one shard, main)")
    .option("--pins <json>", "the deployment's DELAYLINE_SHARD_PINS (default: $DELAYLINE_SHARD_PINS, else none)")
    .action(
      action(io, async (ctx, o: { add: string; shards?: string; pins?: string }) => {
        const names = shardNames(o.shards ?? io.env.DELAYLINE_SHARDS);
        if (names.includes(o.add)) throw new UsageError(`shard ${o.add} is one of the deployment's already`);
        const topics: string[] = [];
        for await (const t of ctx.client().topics.all({ limit: 500 })) topics.push(t.topic);
        const plan = planShardAdd(topics, names, o.add, pinsOf(o.pins ?? io.env.DELAYLINE_SHARD_PINS));
        ctx.print({ topics: topics.length, ...plan }, (r) =>
          [
            `${r.moves.length} of ${r.topics} topics would move to ${o.add}:`,
            table(r.moves, [
              { header: "TOPIC", value: (m) => m.topic },
              { header: "FROM", value: (m) => m.from },
              { header: "TO", value: (m) => m.to },
            ]),
            "",
            "Set these pins before adding the shard, so that adding it moves nothing (drop a pin to move its topic):",
            `DELAYLINE_SHARD_PINS='${JSON.stringify(r.pins)}'`,
          ].join("\n"),
        );
      }),
    );
}
