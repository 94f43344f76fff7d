/**
 * What every command shares: the global options (where the Worker is, the
 * token, --json), the client built from them, printing a result as a table
 * or as JSON, and turning any failure into a message on stderr and exit 1.
 */
import { InvalidArgumentError, type Command } from "commander";
import { Delayline, DelaylineError } from "../client/index.js";

export interface GlobalOptions {
  url?: string;
  token?: string;
  json?: boolean;
  timeout?: number;
  retries?: number;
}

/** A mistake in how the CLI was called that the API never saw. */
export class UsageError extends Error {}

/** The process's streams and environment, passed in so that nothing below reaches for globals. */
export interface Io {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export class Context {
  constructor(
    readonly io: Io,
    private readonly command: Command,
  ) {}

  get options(): GlobalOptions {
    return this.command.optsWithGlobals<GlobalOptions>();
  }

  get json(): boolean {
    return this.options.json === true;
  }

  /** The client for --url/--token, else DELAYLINE_URL/DELAYLINE_TOKEN. */
  client(): Delayline {
    const o = this.options;
    const baseUrl = o.url ?? this.io.env.DELAYLINE_URL;
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

  /** Prints `data` as JSON with --json, else the text `render` makes of it. */
  print<T>(data: T, render: (data: T) => string): void {
    this.io.stdout(this.json ? JSON.stringify(data, null, 2) : render(data));
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
