/** `delayline version`: the package's version, as `--version` prints it (with --json, `{"version": …}`). */
import type { Command } from "commander";
import { action, type Io } from "../context.js";

export function versionCommand(program: Command, io: Io, version: string): void {
  program
    .command("version")
    .description("print the package's version (as --version does)")
    .action(action(io, async (ctx) => ctx.print({ version }, (r) => r.version)));
}
