/** The `delayline` command line: global options, then one module per command group. */
import { Command } from "commander";
import { deadCommands } from "./commands/dead.js";
import { flowKeyCommands } from "./commands/flow-keys.js";
import { jobCommands } from "./commands/jobs.js";
import { listenCommand } from "./commands/listen.js";
import { pullCommands } from "./commands/pull.js";
import { scheduleCommands } from "./commands/schedules.js";
import { shardCommands } from "./commands/shards.js";
import { statusCommand } from "./commands/status.js";
import { topicCommands } from "./commands/topics.js";
import { versionCommand } from "./commands/version.js";
import { globalOptions, spreadGlobalOptions, type Io } from "./context.js";
import { packageVersion } from "./version.js";

export function buildProgram(io: Io): Command {
  const version = packageVersion();
  const program = new Command("delayline")
    .description("Operate a delayline deployment: health, jobs, topics, flow keys, schedules, dead letters, shards.")
    // Each command parses only its own options up to its subcommand, so a command's option may share a global
    // option's name (`topics set --url` is the topic's URL) without the global one taking it. Set before any
    // subcommand is made: they inherit it.
    .enablePositionalOptions()
    .version(version, "-V, --version", "print the package's version")
    .showHelpAfterError()
    .configureHelp({ showGlobalOptions: true })
    .addHelpText(
      "after",
      "\nThe options above go before or after a command; where a command has an option of the same name\n" +
        "(topics set --url, the topic's URL), after it they are the command's: give the Worker's before the command, or in DELAYLINE_URL.",
    )
    .configureOutput({ writeOut: (s) => io.stdout(s.replace(/\n$/, "")), writeErr: (s) => io.stderr(s.replace(/\n$/, "")) });
  for (const option of globalOptions(true)) program.addOption(option);

  statusCommand(program, io);
  jobCommands(program, io);
  pullCommands(program, io);
  topicCommands(program, io);
  flowKeyCommands(program, io);
  scheduleCommands(program, io);
  deadCommands(program, io);
  shardCommands(program, io);
  listenCommand(program, io);
  versionCommand(program, io, version);

  // Last, so every command above has them: the global options may also follow a command (see globalOptions).
  spreadGlobalOptions(program);
  return program;
}
