import { Cluster, type Redis } from "ioredis";
import type { Reply } from "./encoding.js";
import { hashedPart, keySlot } from "./key-slot.js";
import { type CommandPool, isConnectionError, type Outcome, RedisUnavailableError, type ReplyForm, refusal, send, TransactionDiscardedError } from "./pool.js";

/** Options of the bridge's Redis Cluster client. */
export interface ClusterPoolOptions {
  /** Some of the cluster's nodes, e.g. `["redis://127.0.0.1:7000"]`; the client learns the others from them. */
  redisCluster: string[];
  /** A command with no reply after this long fails instead of hanging. Default 15,000 ms. */
  commandTimeoutMs?: number;
  /** Connecting gives up after this long. Default 2,000 ms. */
  connectTimeoutMs?: number;
}

/** Redis' own answer to a command or transaction whose keys are in more than one slot. */
const CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot";

type Command = { name: string; args: string[] };

/** Commands that hold no key but a node's state: they go to every master. */
const EVERY_MASTER = new Set(["FLUSHDB", "FLUSHALL", "DBSIZE", "KEYS"]);

/**
 * The bridge's commands on a Redis Cluster, through ioredis' cluster client,
 * which routes a command by its first key (EVAL and EVALSHA by their first
 * KEYS) and follows MOVED and ASK. What it cannot route is routed here: a
 * script without keys to the master of slot 0;
 * `MEMORY USAGE <key>` (the record cap's measure) by its key, sparing the
 * MOVED a random node would answer; `SCAN … MATCH`
 * by the pattern's hash tag; SCRIPT LOAD, FLUSH and EXISTS, FLUSHDB,
 * FLUSHALL, DBSIZE and KEYS on every master, their replies merged (a script
 * loaded is then found by an EVALSHA on whichever node owns its keys).
 *
 * A pipeline's commands are routed one by one (Upstash pipelines are not
 * atomic) and sent in order, so those of one node run in order. A
 * transaction must stay in one slot, as on any cluster; one that spans slots
 * is refused with Redis' CROSSSLOT error. So is any single command whose keys
 * span slots, by the node that gets it.
 */
export class ClusterPool implements CommandPool {
  private readonly cluster: Cluster;
  private closed = false;

  constructor(options: ClusterPoolOptions) {
    const nodes = options.redisCluster.map((url) => {
      const u = new URL(url);
      return { host: u.hostname, port: Number(u.port || 6379) };
    });
    this.cluster = new Cluster(nodes, {
      // As the single-server pool: fail fast while disconnected, never resend a command that may have run.
      enableOfflineQueue: false,
      scaleReads: "master",
      redisOptions: {
        autoResendUnfulfilledCommands: false,
        maxRetriesPerRequest: 0,
        commandTimeout: options.commandTimeoutMs ?? 15_000,
        connectTimeout: options.connectTimeoutMs ?? 2_000,
      },
    });
    // Errors surface on the commands; an unhandled 'error' event would crash the process.
    this.cluster.on("error", () => {});
  }

  private ensureOpen(): void {
    if (this.closed) throw new RedisUnavailableError("the bridge is shutting down");
    if (this.cluster.status !== "ready") throw new RedisUnavailableError(`Redis is unreachable (cluster ${this.cluster.status})`);
  }

  /** The master serving `slot`, when the client knows it. */
  private masterOf(slot: number): Redis | undefined {
    const owner = this.cluster.slots[slot]?.[0];
    return this.cluster.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === owner);
  }

  /** Where a command the cluster client cannot route goes: one master, every master, or the client's own choice. */
  private target(name: string, args: string[]): Redis | Redis[] | undefined {
    const upper = name.toUpperCase();
    const sub = args[0]?.toUpperCase();
    if (upper === "MEMORY" && sub === "USAGE" && args[1] !== undefined) return this.masterOf(keySlot(args[1]));
    if (EVERY_MASTER.has(upper) || (upper === "SCRIPT" && (sub === "LOAD" || sub === "FLUSH" || sub === "EXISTS"))) {
      return this.cluster.nodes("master");
    }
    // A script without keys always runs on one master, so an EVALSHA finds what its EVAL cached.
    if (/^EVAL(SHA)?(_RO)?$/.test(upper) && Number(args[1]) === 0) return this.masterOf(0);
    if (upper === "SCAN") {
      const match = args.findIndex((a, i) => i > 0 && a.toUpperCase() === "MATCH");
      const pattern = match === -1 ? undefined : args[match + 1];
      // A pattern whose hash tag has no glob character names one slot: its keys are all on that slot's master.
      if (pattern !== undefined && hashedPart(pattern) !== pattern && !/[*?[\\]/.test(hashedPart(pattern))) {
        return this.masterOf(keySlot(pattern));
      }
    }
    return undefined;
  }

  async command(name: string, args: string[], form: ReplyForm = "bytes"): Promise<Outcome> {
    const refused = refusal(name);
    if (refused) return { error: refused };
    this.ensureOpen();
    const target = this.target(name, args);
    try {
      if (!Array.isArray(target)) return { result: (await send(target ?? this.cluster, form, name, args)) as Reply };
      const replies = (await Promise.all(target.map((node) => send(node, form, name, args)))) as Reply[];
      return { result: merged(name, args, replies) };
    } catch (err) {
      if (isConnectionError(err)) throw new RedisUnavailableError(`Redis is unreachable: ${(err as Error).message}`);
      return { error: (err as Error).message };
    }
  }

  /** Each command on its own node, all sent before any reply is awaited, so a node gets its commands in request order. */
  async pipeline(commands: Command[], form: ReplyForm = "bytes"): Promise<Outcome[]> {
    this.ensureOpen();
    return Promise.all(commands.map((c) => this.command(c.name, c.args, form)));
  }

  async transaction(commands: Command[], form: ReplyForm = "bytes"): Promise<Outcome[]> {
    for (const c of commands) {
      const refused = refusal(c.name);
      if (refused) throw new TransactionDiscardedError(`EXECABORT ${refused}`);
    }
    this.ensureOpen();
    const multi = this.cluster.multi();
    for (const c of commands) send(multi, form, c.name, c.args);
    let replies: Array<[Error | null, unknown]> | null;
    try {
      replies = await multi.exec();
    } catch (err) {
      const message = (err as Error).message;
      // ioredis checks the slots itself before sending (its words, not Redis'): the answer is Redis' own.
      if (/should belong to the same slot/.test(message)) throw new TransactionDiscardedError(`EXECABORT ${CROSSSLOT}`);
      if (isConnectionError(err)) throw new RedisUnavailableError(`Redis is unreachable: ${message}`);
      throw new TransactionDiscardedError(message);
    }
    if (!replies) throw new TransactionDiscardedError("EXECABORT Transaction discarded");
    return replies.map(([err, result]) => (err ? { error: err.message } : { result: result as Reply }));
  }

  async waitReady(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.cluster.status !== "ready" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return this.cluster.status === "ready";
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.cluster.quit().then(
      () => undefined,
      () => this.cluster.disconnect(),
    );
  }
}

/**
 * One reply from every master's: a sum (DBSIZE), all keys (KEYS), else the
 * first. SCRIPT EXISTS finds a script any master holds, as one database
 * would: one run by EVAL is cached on its keys' master only, and an EVALSHA
 * that reaches another still has NOSCRIPT and its EVAL to fall back on.
 */
function merged(name: string, args: string[], replies: Reply[]): Reply {
  const upper = name.toUpperCase();
  if (upper === "DBSIZE") return replies.reduce<number>((sum, r) => sum + Number(r), 0);
  if (upper === "KEYS") return replies.flatMap((r) => r as Reply[]);
  if (upper === "SCRIPT" && args[0]?.toUpperCase() === "EXISTS") {
    return (replies[0] as number[]).map((_, i) => (replies.some((r) => (r as number[])[i] === 1) ? 1 : 0));
  }
  return replies[0]!;
}
