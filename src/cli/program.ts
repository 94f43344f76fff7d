/** The `delayline` command line: global options, then one module per command group. */
import { Command, Option } from "commander";
import { deadCommands } from "./commands/dead.js";
import { jobCommands } from "./commands/jobs.js";
import { listenCommand } from "./commands/listen.js";
import { scheduleCommands } from "./commands/schedules.js";
import { statusCommand } from "./commands/status.js";
import { topicCommands } from "./commands/topics.js";
import { wholeNumber, type Io } from "./context.js";

export function buildProgram(io: Io): Command {
  const program = new Command("delayline")
    .description("Operate a delayline deployment: health, jobs, topics, schedules, dead letters.")
    .addOption(new Option("--url <url>", "the Worker's URL").env("DELAYLINE_URL"))
    .addOption(new Option("--token <token>", "an API token").env("DELAYLINE_TOKEN"))
    .option("--json", "print JSON instead of tables (errors: the problem document on stderr)")
    .option("--timeout <ms>", "each request attempt's timeout (default 10000)", wholeNumber(0, 600_000))
    .option(
      "--retries <n>",
      "retries of a request that is safe to repeat, after a 503, 429, network error or timeout (default 5; 0 for none)",
      wholeNumber(0, 100),
    )
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.stdout(s.replace(/\n$/, "")), writeErr: (s) => io.stderr(s.replace(/\n$/, "")) });
  statusCommand(program, io);
  jobCommands(program, io);
  topicCommands(program, io);
  scheduleCommands(program, io);
  deadCommands(program, io);
  listenCommand(program, io);
  return program;
}
