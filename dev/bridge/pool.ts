import Redis, { type RedisOptions } from "ioredis";
import type { Reply } from "./encoding.js";

/** Options of the bridge's connection pool. */
export interface PoolOptions {
  /** Redis URL, e.g. `redis://127.0.0.1:6379/0`. */
  redisUrl: string;
  /** Connections shared round-robin by single commands and pipelines. Default 4. */
  sharedConnections?: number;
  /** Most connections held at once by transactions, each by one request alone. Default 16. */
  maxTransactionConnections?: number;
  /** A command with no reply after this long fails instead of hanging. Default 15,000 ms. */
  commandTimeoutMs?: number;
  /** Connecting gives up after this long. Default 2,000 ms. */
  connectTimeoutMs?: number;
}

/** Raised when Redis cannot be reached; the HTTP layer answers 503. */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/** One command's reply or Redis' error for it. */
export type Outcome = { result: Reply } | { error: string };

/**
 * How replies come back: `bytes` as Buffers (binary values survive, for
 * base64 replies), `text` as UTF-8 strings (what a reply without base64
 * becomes anyway, without a Buffer per value on the way).
 */
export type ReplyForm = "bytes" | "text";

/** Where the bridge runs commands: one Redis ({@link RedisPool}) or a Redis Cluster (cluster-pool.ts). */
export interface CommandPool {
  /** One command; a Redis error is returned as `{ error }`, a connection failure throws {@link RedisUnavailableError}. */
  command(name: string, args: string[], form?: ReplyForm): Promise<Outcome>;
  /** Commands in order; each gets its own result or error. */
  pipeline(commands: Array<{ name: string; args: string[] }>, form?: ReplyForm): Promise<Outcome[]>;
  /** MULTI … EXEC; a transaction Redis discards throws {@link TransactionDiscardedError}. */
  transaction(commands: Array<{ name: string; args: string[] }>, form?: ReplyForm): Promise<Outcome[]>;
  /** Resolves once connected, or after `ms`: a bridge in front of a Redis that is down still starts and answers 503. */
  waitReady(ms: number): Promise<boolean>;
  /** Closes every connection; pending commands finish first. */
  close(): Promise<void>;
}

/** Queues or sends `name` on `target` (a connection, pipeline or transaction) with replies in `form`. */
export function send<T>(
  target: { call(name: string, ...args: string[]): T; callBuffer(name: string, ...args: string[]): T },
  form: ReplyForm,
  name: string,
  args: string[],
): T {
  return form === "text" ? target.call(name, ...args) : target.callBuffer(name, ...args);
}

/**
 * Commands the bridge refuses: they block a shared connection, change its
 * state for every other request, or never return.
 */
const REFUSED = new Set([
  "BLPOP",
  "BRPOP",
  "BRPOPLPUSH",
  "BLMOVE",
  "BLMPOP",
  "BZPOPMIN",
  "BZPOPMAX",
  "BZMPOP",
  "SUBSCRIBE",
  "PSUBSCRIBE",
  "SSUBSCRIBE",
  "UNSUBSCRIBE",
  "PUNSUBSCRIBE",
  "MONITOR",
  "SELECT",
  "QUIT",
  "RESET",
  "AUTH",
  "HELLO",
  "MULTI",
  "EXEC",
  "DISCARD",
  "WATCH",
  "UNWATCH",
  "WAIT",
  "SYNC",
  "PSYNC",
  "SHUTDOWN",
  "CLIENT",
  "DEBUG",
]);

export function refusal(name: string): string | undefined {
  return REFUSED.has(name.toUpperCase()) ? `ERR ${name.toUpperCase()} is not supported over the REST bridge` : undefined;
}

export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "ReplyError") return false;
  return true;
}

/**
 * How long a connection waits before its `attempt`-th try to reconnect: 50 ms
 * more each time up to 500 ms, so a restart is noticed at once; past
 * {@link QUICK_RECONNECTS} tries (about 8 s down), 5 s, as the tick's own
 * outage wait: a Redis that stays down (a local shard stopped) is not knocked
 * on ten times a second by every connection, which cost the bridge's process
 * a per cent of a core.
 */
const reconnectDelay = (attempt: number) => (attempt <= QUICK_RECONNECTS ? Math.min(50 * attempt, 500) : 5_000);
const QUICK_RECONNECTS = 20;

/**
 * Redis connections behind the bridge: a few shared connections for single
 * commands and pipelines (a pipeline's commands go out back to back on one
 * connection, so they run in order), and a bounded pool of connections that a
 * MULTI/EXEC request holds alone, so concurrent transactions cannot interleave.
 */
export class RedisPool implements CommandPool {
  private readonly options: Required<PoolOptions>;
  private readonly shared: Redis[];
  private next = 0;
  private readonly idleTx: Redis[] = [];
  private txOpen = 0;
  private readonly txWaiters: Array<{ resolve: (conn: Redis) => void; reject: (err: Error) => void }> = [];
  private closed = false;

  constructor(options: PoolOptions) {
    this.options = {
      sharedConnections: 4,
      maxTransactionConnections: 16,
      commandTimeoutMs: 15_000,
      connectTimeoutMs: 2_000,
      ...options,
    };
    this.shared = Array.from({ length: this.options.sharedConnections }, () => this.connect());
  }

  private connect(): Redis {
    const opts: RedisOptions = {
      // Fail fast while disconnected instead of queueing: a caller gets an
      // error it can retry rather than a request that hangs.
      enableOfflineQueue: false,
      // Never resend a command whose reply was lost: it may have run, and a
      // second run of a non-idempotent script would duplicate its effect.
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      commandTimeout: this.options.commandTimeoutMs,
      connectTimeout: this.options.connectTimeoutMs,
      retryStrategy: reconnectDelay,
      lazyConnect: false,
    };
    const conn = new Redis(this.options.redisUrl, opts);
    // Errors surface on the commands; an unhandled 'error' event would crash the process.
    conn.on("error", () => {});
    return conn;
  }

  private sharedConnection(): Redis {
    const conn = this.shared[this.next]!;
    this.next = (this.next + 1) % this.shared.length;
    return conn;
  }

  private ensureOpen(conn: Redis): void {
    if (this.closed) throw new RedisUnavailableError("the bridge is shutting down");
    if (conn.status !== "ready") throw new RedisUnavailableError(`Redis is unreachable (connection ${conn.status})`);
  }

  /** One command; a Redis error is returned as `{ error }`, a connection failure throws. */
  async command(name: string, args: string[], form: ReplyForm = "bytes"): Promise<Outcome> {
    const refused = refusal(name);
    if (refused) return { error: refused };
    const conn = this.sharedConnection();
    this.ensureOpen(conn);
    try {
      return { result: (await send(conn, form, name, args)) as Reply };
    } catch (err) {
      if (isConnectionError(err)) throw new RedisUnavailableError(`Redis is unreachable: ${(err as Error).message}`);
      return { error: (err as Error).message };
    }
  }

  /** Commands in order on one connection; each gets its own result or error. */
  async pipeline(commands: Array<{ name: string; args: string[] }>, form: ReplyForm = "bytes"): Promise<Outcome[]> {
    const conn = this.sharedConnection();
    this.ensureOpen(conn);
    const pipe = conn.pipeline();
    const refusals = commands.map((c) => refusal(c.name));
    for (const [i, c] of commands.entries()) {
      // A refused command still occupies its slot so results line up.
      if (refusals[i]) pipe.callBuffer("ECHO", "");
      else send(pipe, form, c.name, c.args);
    }
    const replies = await pipe.exec();
    if (!replies) throw new RedisUnavailableError("Redis is unreachable");
    return replies.map(([err, result], i) => {
      if (refusals[i]) return { error: refusals[i]! };
      if (err) {
        if (isConnectionError(err)) throw new RedisUnavailableError(`Redis is unreachable: ${err.message}`);
        return { error: err.message };
      }
      return { result: result as Reply };
    });
  }

  /**
   * MULTI … EXEC on a connection this call holds alone. A transaction Redis
   * discards (a queued command was rejected) throws {@link TransactionDiscardedError}.
   */
  async transaction(commands: Array<{ name: string; args: string[] }>, form: ReplyForm = "bytes"): Promise<Outcome[]> {
    for (const c of commands) {
      const refused = refusal(c.name);
      if (refused) throw new TransactionDiscardedError(`EXECABORT ${refused}`);
    }
    const conn = await this.acquireTx();
    let healthy = true;
    try {
      this.ensureOpen(conn);
      const multi = conn.multi();
      for (const c of commands) send(multi, form, c.name, c.args);
      let replies: Array<[Error | null, unknown]> | null;
      try {
        replies = await multi.exec();
      } catch (err) {
        if (isConnectionError(err)) {
          healthy = false;
          throw new RedisUnavailableError(`Redis is unreachable: ${(err as Error).message}`);
        }
        throw new TransactionDiscardedError((err as Error).message);
      }
      if (!replies) throw new TransactionDiscardedError("EXECABORT Transaction discarded");
      return replies.map(([err, result]) => (err ? { error: err.message } : { result: result as Reply }));
    } catch (err) {
      if (err instanceof RedisUnavailableError) healthy = false;
      throw err;
    } finally {
      this.releaseTx(conn, healthy);
    }
  }

  private acquireTx(): Promise<Redis> {
    if (this.closed) return Promise.reject(new RedisUnavailableError("the bridge is shutting down"));
    const idle = this.idleTx.pop();
    if (idle) return Promise.resolve(idle);
    if (this.txOpen < this.options.maxTransactionConnections) {
      this.txOpen++;
      const conn = this.connect();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          this.txOpen--;
          conn.disconnect();
          reject(new RedisUnavailableError("Redis is unreachable (connect timed out)"));
        }, this.options.connectTimeoutMs);
        const onReady = () => {
          cleanup();
          resolve(conn);
        };
        const cleanup = () => {
          clearTimeout(timer);
          conn.off("ready", onReady);
        };
        conn.on("ready", onReady);
      });
    }
    return new Promise((resolve, reject) => this.txWaiters.push({ resolve, reject }));
  }

  private releaseTx(conn: Redis, healthy: boolean): void {
    if (!healthy || this.closed) {
      conn.disconnect();
      this.txOpen--;
      // Whoever waits gets a fresh connection instead of the broken one.
      const waiter = this.txWaiters.shift();
      if (waiter) this.acquireTx().then(waiter.resolve, waiter.reject);
      return;
    }
    const waiter = this.txWaiters.shift();
    if (waiter) waiter.resolve(conn);
    else this.idleTx.push(conn);
  }

  /**
   * Resolves once every shared connection is ready, or after `ms` — a bridge
   * in front of a Redis that is down still starts and answers 503.
   */
  async waitReady(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.ready && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return this.ready;
  }

  /** Whether the shared connections are up. */
  get ready(): boolean {
    return this.shared.every((c) => c.status === "ready");
  }

  /** Closes every connection; pending commands finish first. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.shared, ...this.idleTx];
    this.idleTx.length = 0;
    for (const w of this.txWaiters.splice(0)) w.reject(new RedisUnavailableError("the bridge is shutting down"));
    await Promise.all(
      all.map((c) =>
        c.status === "ready"
          ? c.quit().then(
              () => undefined,
              () => c.disconnect(),
            )
          : c.disconnect(),
      ),
    );
  }
}

/** Redis discarded a transaction (EXECABORT); the HTTP layer answers 400. */
export class TransactionDiscardedError extends Error {
  override name = "TransactionDiscardedError";
}
