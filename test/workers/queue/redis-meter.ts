/**
 * What a Redis of a test's own was made to do, read from Redis itself: every
 * command it ran, those inside scripts included, as Upstash bills them (INFO
 * commandstats), and each script call with its argument count (SLOWLOG,
 * threshold 0). Tests that count must each have a Redis of their own
 * (test/global-setup.ts), or another file's work would be counted too.
 */

/** The metering's own commands, and the bridge's record-size measure (MEMORY USAGE), which Upstash does not bill. */
const METERING = /^(config|slowlog|info|memory)/;

/**
 * A script that hashes every key with its value in a canonical form and
 * whether it expires (EVAL it with no keys): the state of a Redis of a test's
 * own, to compare before and after. Not DUMP: a read can move a large hash's
 * fields between the tables of an incremental rehash, which changes DUMP's
 * order but no value.
 */
export const STATE_DIGEST = `
local keys = redis.call("KEYS", "*")
table.sort(keys)
local parts = {}
local function sorted(t) table.sort(t) return table.concat(t, "\\0") end
for _, k in ipairs(keys) do
  local kind = redis.call("TYPE", k).ok
  local value
  if kind == "hash" then
    local flat, pairs_ = redis.call("HGETALL", k), {}
    for i = 1, #flat, 2 do pairs_[#pairs_ + 1] = flat[i] .. "=" .. flat[i + 1] end
    value = sorted(pairs_)
  elseif kind == "set" then
    value = sorted(redis.call("SMEMBERS", k))
  elseif kind == "zset" then
    value = table.concat(redis.call("ZRANGE", k, 0, -1, "WITHSCORES"), "\\0")
  elseif kind == "list" then
    value = table.concat(redis.call("LRANGE", k, 0, -1), "\\0")
  else
    value = redis.call("DUMP", k)
  end
  parts[#parts + 1] = k
  parts[#parts + 1] = kind
  parts[#parts + 1] = value
  parts[#parts + 1] = redis.call("PTTL", k) >= 0 and "expires" or "stays"
end
return { #keys, redis.sha1hex(table.concat(parts, "\\n")) }`;

/** What one step made Redis do. */
export interface StepWork {
  /** The scripts it called (by name), each with its argument count (keys and ARGV). */
  scripts: Array<{ name: string; args: number }>;
  /** Commands Redis ran, those inside the scripts included (Upstash bills each), by name. */
  commands: Record<string, number>;
}

export const totalCommands = (work: Pick<StepWork, "commands">) => Object.values(work.commands).reduce((a, b) => a + b, 0);

/** Script names by the digests Redis may know them by (see nameScripts()). */
const SCRIPTS = new Map<string, string>();

/**
 * The bridge takes the first line's `#!lua flags=allow-key-locking` out
 * (Redis 7.0 refuses it), which leaves that line empty, so Redis knows a
 * script by the stripped text's digest; a first EVALSHA, before the bridge
 * has seen the text, goes out with the flagged digest.
 */
export async function nameScripts(scripts: Record<string, { source: string; sha1: string }>): Promise<void> {
  for (const [name, script] of Object.entries(scripts)) {
    const stripped = script.source.slice(script.source.indexOf("\n"));
    const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(stripped));
    SCRIPTS.set([...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join(""), name);
    SCRIPTS.set(script.sha1, name);
  }
}

/** A meter on the Redis behind one bridge; `fetcher` sends its own requests (a test counting the others passes the unwrapped fetch). */
export function redisMeter(url: string, token: string, fetcher: typeof fetch = (input, init) => fetch(input, init)) {
  /** One command over the REST protocol (also those the client has no method for). */
  async function command(args: Array<string | number>): Promise<unknown> {
    const res = await fetcher(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(args.map(String)) });
    const body = (await res.json()) as { result?: unknown; error?: string };
    if (body.error !== undefined) throw new Error(body.error);
    return body.result;
  }

  /** Commands Redis ran since the last reset, by name, the metering's own left out. */
  async function commandsSoFar(): Promise<Record<string, number>> {
    const commands: Record<string, number> = {};
    for (const m of String(await command(["INFO", "commandstats"])).matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
      if (!METERING.test(m[1]!)) commands[m[1]!] = Number(m[2]);
    }
    return commands;
  }

  /** Logs every call from now on (SLOWLOG threshold 0) and counts commands afresh. */
  async function fromHere(): Promise<void> {
    await command(["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    await command(["CONFIG", "SET", "slowlog-max-len", "100000"]);
    await command(["SLOWLOG", "RESET"]);
    await command(["CONFIG", "RESETSTAT"]);
  }

  /**
   * The work since the last fromHere(), then meters afresh. SLOWLOG keeps
   * 32 arguments of a call: the 31 first and "... (N more arguments)".
   */
  async function workSoFar(): Promise<StepWork> {
    const commands = await commandsSoFar();
    const log = (await command(["SLOWLOG", "GET", "100000"])) as Array<[number, number, number, string[]]>;
    await fromHere();
    const scripts = log
      .map((e) => e[3])
      .filter((argv) => argv[0]!.toUpperCase() === "EVALSHA")
      .reverse()
      .map((argv) => {
        const more = /^\.\.\. \((\d+) more arguments\)$/.exec(argv.at(-1)!);
        const argc = more ? argv.length - 1 + Number(more[1]) : argv.length;
        return { name: SCRIPTS.get(argv[1]!) ?? argv[1]!, args: argc - 3 };
      });
    return { scripts, commands };
  }

  /** Runs `work` and counts the commands it made Redis run. */
  async function meter<T>(work: () => Promise<T>): Promise<{ commands: number; byCommand: Record<string, number>; result: T }> {
    await command(["CONFIG", "RESETSTAT"]);
    const result = await work();
    const byCommand = await commandsSoFar();
    return { commands: totalCommands({ commands: byCommand }), byCommand, result };
  }

  /** Those of `names` (commands as INFO commandstats names them) that Redis flags as writes (COMMAND INFO). */
  async function writesAmong(names: string[]): Promise<string[]> {
    const info = (await command(["COMMAND", "INFO", ...names.map((n) => n.split("|")[0]!)])) as Array<[string, number, string[]] | null>;
    return names.filter((_, i) => info[i]?.[2].includes("write"));
  }

  return { command, fromHere, workSoFar, meter, writesAmong };
}
