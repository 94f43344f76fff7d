/**
 * What every command shares: the global options (where the Worker is, the
 * token, --json), the client built from them, printing a result as a table
 * or as JSON, and turning any failure into a message on stderr and exit 1.
 */
import { InvalidArgumentError, Option, type Command } from "commander";
import { Delayline, DelaylineError } from "../client/index.js";

export interface GlobalOptions {
  url?: string;
  token?: string;
  json?: boolean;
  timeout?: number;
  retries?: number;
}

/**
 * An option of the program as a whole (the Worker's URL, the token, --json, …). Only an option of this class is
 * ever read as a global one: a command's own option of the same name (`topics set --url`, the topic's URL) is a
 * plain {@link Option} and never reaches the connection.
 */
export class GlobalOption extends Option {}

/**
 * The global options, made fresh for each command that carries them: the root program (with the environment
 * variables), and a hidden copy on every command that has no option of that name itself, so that a global option may
 * follow the command too (`delayline topics list --json`). Options are parsed positionally (each command reads only its
 * own until its subcommand), so where a command has an option of the same name, after that command it means the
 * command's option, and the global one goes before the command (or in DELAYLINE_URL / DELAYLINE_TOKEN).
 */
export function globalOptions(root: boolean): GlobalOption[] {
  const options = [
    new GlobalOption("--url <url>", "the Worker's URL"),
    new GlobalOption("--token <token>", "an API token"),
    new GlobalOption("--json", "print JSON instead of tables (errors: the problem document on stderr)"),
    new GlobalOption("--timeout <ms>", "each request attempt's timeout (default 10000)").argParser(wholeNumber(0, 600_000)),
    new GlobalOption(
      "--retries <n>",
      "retries of a request that is safe to repeat, after a 503, 429, network error or timeout (default 5; 0 for none)",
    ).argParser(wholeNumber(0, 100)),
  ];
  if (root) {
    options[0]!.env("DELAYLINE_URL");
    options[1]!.env("DELAYLINE_TOKEN");
  } else {
    for (const o of options) o.hideHelp();
  }
  return options;
}

/** Gives every command below `root` a hidden copy of each global option it has no option of the same name for. */
export function spreadGlobalOptions(root: Command): void {
  for (const command of root.commands) {
    for (const option of globalOptions(false)) {
      if (!command.options.some((o) => o.long === option.long)) command.addOption(option);
    }
    spreadGlobalOptions(command);
  }
}

/** The global options in effect for `command`: the root's (flags or environment), then any copy given after a command (the last wins). */
function globalValues(command: Command): GlobalOptions {
  const chain: Command[] = [];
  for (let c: Command | null = command; c; c = c.parent) chain.unshift(c);
  const values: Record<string, unknown> = {};
  for (const [i, c] of chain.entries()) {
    for (const option of c.options) {
      if (!(option instanceof GlobalOption)) continue;
      const key = option.attributeName();
      const value = c.getOptionValue(key);
      // The root's value may come from the environment; a copy's only from the command line.
      if (value !== undefined && (i === 0 || c.getOptionValueSource(key) === "cli")) values[key] = value;
    }
  }
  return values as GlobalOptions;
}

/** A mistake in how the CLI was called that the API never saw. */
export class UsageError extends Error {}

/** The process's streams and environment, passed in so that nothing below reaches for globals. */
export interface Io {
  env: Record<string, string | undefined>;
  /** All of standard input, as text (read when a command is given `-` for a file). */
  stdin: () => Promise<string>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export class Context {
  constructor(
    readonly io: Io,
    private readonly command: Command,
  ) {}

  /** Only the global options ({@link globalValues}): never a command's own option that shares a name with one. */
  get options(): GlobalOptions {
    return globalValues(this.command);
  }

  get json(): boolean {
    return this.options.json === true;
  }

  /** The client for --url/--token, else DELAYLINE_URL/DELAYLINE_TOKEN. */
  client(): Delayline {
    const o = this.options;
    const baseUrl = this.workerUrl;
    const token = o.token ?? this.io.env.DELAYLINE_TOKEN;
    if (!baseUrl) throw new UsageError("no Worker URL: set DELAYLINE_URL or pass --url");
    if (!token) throw new UsageError("no API token: set DELAYLINE_TOKEN or pass --token");
    return new Delayline({
      baseUrl,
      token,
      ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}),
      ...(o.retries !== undefined ? { retry: o.retries === 0 ? false : { retries: o.retries } } : {}),
    });
  }

  /** The Worker's URL in effect (--url, else DELAYLINE_URL), for messages. */
  get workerUrl(): string | undefined {
    return this.options.url ?? this.io.env.DELAYLINE_URL;
  }

  /**
   * Prints `data` as JSON with --json, else the text `render` makes of it. An answer a renderer cannot read (a 2xx
   * from something that is not the Worker: a wrong --url) is reported as such, not as a crash.
   */
  print<T>(data: T, render: (data: T) => string): void {
    if (this.json) {
      this.io.stdout(JSON.stringify(data, null, 2));
      return;
    }
    let text: string;
    try {
      text = render(data);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      throw new Error(`the answer is not one delayline's API gives (${err.message}): is ${this.workerUrl} the Worker's URL?`);
    }
    this.io.stdout(text);
  }
}

/** A command's action: runs `fn` with the context; a failure prints its reason and sets exit code 1. */
export function action<A extends unknown[]>(io: Io, fn: (ctx: Context, ...args: A) => Promise<void>) {
  return async function (this: Command, ...args: unknown[]): Promise<void> {
    // commander passes the positional arguments, then the options, then the command.
    const command = args[args.length - 1] as Command;
    const ctx = new Context(io, command);
    try {
      await fn(ctx, ...(args.slice(0, -1) as A));
    } catch (err) {
      report(ctx, err);
      process.exitCode = 1;
    }
  };
}

function report(ctx: Context, err: unknown): void {
  if (err instanceof DelaylineError) {
    if (ctx.json) {
      ctx.io.stderr(JSON.stringify(err.problem, null, 2));
      return;
    }
    const status = err.status === 0 ? err.problem.title : `${err.status} ${err.problem.title}`;
    const tries = err.attempts > 1 ? ` (after ${err.attempts} attempts)` : "";
    const lines = [`error: ${err.problem.detail} [${status}]${tries}`];
    for (const e of err.problem.errors ?? []) lines.push(`  ${e.path || "(body)"}: ${e.message}`);
    ctx.io.stderr(lines.join("\n"));
    return;
  }
  ctx.io.stderr(`error: ${err instanceof Error ? err.message : String(err)}`);
}

/**
 * A command that takes its arguments, asks the API one thing with them and prints the answer: `usage` is the command
 * with its arguments (`"pause <topic>"`, `"pause <topic> <key>"`), `ask` the call (given them in order), `render` the
 * answer as text (--json prints it as JSON).
 */
export function askCommand<T>(
  parent: Command,
  io: Io,
  usage: string,
  description: string,
  ask: (dl: Delayline, ...args: string[]) => Promise<T>,
  render: (answer: T) => string,
): Command {
  return (
    parent
      .command(usage)
      .description(description)
      // commander passes the arguments (strings: none is variadic), then the options object.
      .action(action(io, async (ctx, ...args: unknown[]) => ctx.print(await ask(ctx.client(), ...args.filter((a) => typeof a === "string")), render)))
  );
}

/** `--limit <n>`: how many rows of a listing (walked page by page) a command shows, 100 unless given. */
export function rowLimit(rows: string): Option {
  return new Option("--limit <n>", `${rows} to show`).argParser(wholeNumber(1, 100_000)).default(100);
}

/** What a bulk command (bulk-cancel, dead replay) picks besides a filter: given ids, or --all; and --dry-run. */
export function bulkTarget(command: Command, items: string): Command {
  return command
    .argument("[ids...]", `${items}' job ids`)
    .option("--all", `every one of the topic's ${items}`)
    .option("--dry-run", `change nothing: say how many ${items} it would take, and the first 20`);
}

/** commander parser: a whole number within bounds. */
export function wholeNumber(min: number, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`a whole number from ${min} to ${max}`);
    return Number(value);
  };
}

/** commander parser: a positive number (a rate). */
export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("a positive number");
  return n;
}

/** commander parser: any JSON value. */
export function jsonValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError("JSON (quote strings: '\"text\"')");
  }
}

/** A duration as the API takes it: digits are ms, anything else ("90s", "1h") is sent as written. */
export function durationArg(value: string): string | number {
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** An instant as the API takes it: digits are epoch ms, anything else is ISO 8601. */
export function instantArg(value: string): string | number {
  return /^\d+$/.test(value) ? Number(value) : value;
}
