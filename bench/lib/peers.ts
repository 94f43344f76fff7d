/**
 * The two hand-rolled designs delayline is compared with, written the way
 * their usual write-ups describe them, over ioredis (TCP).
 *
 * - {@link NaiveQueue}: one sorted set scored by due time; a poll reads up
 *   to 200 due members with ZRANGEBYSCORE and ZREMs each one, dispatching the
 *   jobs whose ZREM removed something (that worker won the job). A job lives
 *   only in its member, so a crash after the ZREM loses it: at most once.
 * - {@link MigrateQueue}: Laravel's Redis queue design. A script moves every
 *   due job from the delayed set to a ready list (RPUSH in chunks of 100);
 *   a pop script takes one job from the list and reserves it (a sorted set
 *   scored by when the reservation lapses) with its attempt count bumped;
 *   the worker deletes it from the reserved set when done. Expired
 *   reservations are migrated back like due jobs: at least once.
 *
 * Both sleep `pollMs` when a poll finds nothing, retry by re-adding the job
 * with a due time, and dead-letter to a list.
 */
import type IORedis from "ioredis";
import { pool, sleep } from "../../harness/util.js";

/** A job as the peers store it: the member of their sorted set and list. */
interface PeerJob {
  id: string;
  due: number;
  attempts: number;
  payload: unknown;
}

/** What a handler's failure does: retry after `retryInMs`, or dead when attempts are used up. */
interface PeerPolicy {
  maxAttempts: number;
  retryInMs: number;
}

type PeerHandler = (job: PeerJob) => void | Promise<void>;

/** Options of a peer's consumer loop. */
export interface PeerRunOptions {
  handler: PeerHandler;
  /** Sleep when a poll finds nothing. */
  pollMs: number;
  /** Handlers running at once. */
  concurrency: number;
  policy: PeerPolicy;
}

export interface PeerConsumer {
  /** Stops polling and waits for the loop to end. */
  stop(): Promise<void>;
}

let counter = 0;
const newId = () => `${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** The common interface of the two peers. */
export interface Peer {
  readonly name: "naive" | "migrate";
  add(due: number, payload: unknown): Promise<void>;
  addMany(jobs: Array<{ due: number; payload: unknown }>): Promise<void>;
  run(options: PeerRunOptions): PeerConsumer;
  /** Jobs not yet finished (scheduled, ready or reserved). */
  pending(): Promise<number>;
  dead(): Promise<number>;
}

/** Where both peers keep scheduled jobs: each job's JSON in a sorted set scored by its due time. */
abstract class ScheduledJobs {
  constructor(
    protected readonly scheduledRedis: IORedis,
    protected readonly delayedKey: string,
  ) {}

  async add(due: number, payload: unknown): Promise<void> {
    await this.addMany([{ due, payload }]);
  }

  async addMany(jobs: Array<{ due: number; payload: unknown }>): Promise<void> {
    const args = jobs.flatMap((j) => [j.due, JSON.stringify({ id: newId(), due: j.due, attempts: 0, payload: j.payload } satisfies PeerJob)]);
    await this.scheduledRedis.zadd(this.delayedKey, ...args);
  }
}

async function settleFailure(redis: IORedis, job: PeerJob, policy: PeerPolicy, readd: (job: PeerJob) => Promise<unknown>, deadKey: string) {
  if (job.attempts >= policy.maxAttempts) await redis.lpush(deadKey, JSON.stringify(job));
  else await readd({ ...job, due: Date.now() + policy.retryInMs });
}

/** The classic sorted-set loop: ZRANGEBYSCORE … LIMIT 0 200, then ZREM per job. */
export class NaiveQueue extends ScheduledJobs implements Peer {
  readonly name = "naive" as const;
  private readonly key: string;
  private readonly deadKey: string;

  constructor(
    private readonly redis: IORedis,
    prefix = "naive",
  ) {
    super(redis, `${prefix}:delayed`);
    this.key = this.delayedKey;
    this.deadKey = `${prefix}:dead`;
  }

  run(options: PeerRunOptions): PeerConsumer {
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        const members = await this.redis.zrangebyscore(this.key, 0, Date.now(), "LIMIT", 0, 200);
        if (members.length === 0) {
          await sleep(options.pollMs);
          continue;
        }
        // ZREM decides who owns a job when several workers poll; the ZREMs go out together.
        await pool(members.length, options.concurrency, async (i) => {
          const member = members[i]!;
          if ((await this.redis.zrem(this.key, member)) !== 1) return;
          const job = JSON.parse(member) as PeerJob;
          job.attempts++;
          try {
            await options.handler(job);
          } catch {
            await settleFailure(this.redis, job, options.policy, (j) => this.redis.zadd(this.key, j.due, JSON.stringify(j)), this.deadKey);
          }
        });
      }
    })();
    return {
      async stop() {
        stopped = true;
        await loop;
      },
    };
  }

  async pending(): Promise<number> {
    return this.redis.zcard(this.key);
  }

  async dead(): Promise<number> {
    return this.redis.llen(this.deadKey);
  }
}

// Moves members of a sorted set scored at or before ARGV[1] to the end of a
// list, RPUSH in chunks of 100, and returns how many moved.
//   KEYS[1] from (sorted set)   KEYS[2] to (list)   ARGV[1] now ms
const MIGRATE_LUA = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if #due > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, #due - 1)
  for i = 1, #due, 100 do
    redis.call('RPUSH', KEYS[2], unpack(due, i, math.min(i + 99, #due)))
  end
end
return #due`;

// Takes the first ready job, bumps its attempts and reserves it until ARGV[1].
//   KEYS[1] ready (list)   KEYS[2] reserved (sorted set)   ARGV[1] reservation deadline ms
const POP_LUA = `
local member = redis.call('LPOP', KEYS[1])
if not member then return false end
local job = cjson.decode(member)
job.attempts = job.attempts + 1
local reserved = cjson.encode(job)
redis.call('ZADD', KEYS[2], ARGV[1], reserved)
return reserved`;

// Puts a reserved job back on the delayed set (a retry).
//   KEYS[1] reserved   KEYS[2] delayed   ARGV[1] reserved member   ARGV[2] due ms   ARGV[3] new member
const RELEASE_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1`;

type MigrateCommands = IORedis & {
  dlMigrate(from: string, to: string, now: number): Promise<number>;
  dlPop(ready: string, reserved: string, until: number): Promise<string | null>;
  dlRelease(reserved: string, delayed: string, member: string, due: number, next: string): Promise<number>;
};

/** Laravel's design: migrate due jobs to a ready list in chunks of 100, then a pop per job. */
export class MigrateQueue extends ScheduledJobs implements Peer {
  readonly name = "migrate" as const;
  private readonly redis: MigrateCommands;
  private readonly delayed: string;
  private readonly ready: string;
  private readonly reserved: string;
  private readonly deadKey: string;

  /** `reserveMs`: how long a popped job is reserved before it is handed out again (Laravel's retry_after, 90 s). */
  constructor(
    redis: IORedis,
    prefix = "migrate",
    private readonly reserveMs = 90_000,
  ) {
    super(redis, `${prefix}:delayed`);
    this.redis = redis as MigrateCommands;
    for (const [name, lua] of [
      ["dlMigrate", MIGRATE_LUA],
      ["dlPop", POP_LUA],
      ["dlRelease", RELEASE_LUA],
    ] as const) {
      if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: 2, lua });
    }
    this.delayed = `${prefix}:delayed`;
    this.ready = `${prefix}:ready`;
    this.reserved = `${prefix}:reserved`;
    this.deadKey = `${prefix}:dead`;
  }

  run(options: PeerRunOptions): PeerConsumer {
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        const now = Date.now();
        // Due jobs, then reservations that lapsed (their worker died), to the ready list.
        const moved = (await this.redis.dlMigrate(this.delayed, this.ready, now)) + (await this.redis.dlMigrate(this.reserved, this.ready, now));
        if (moved === 0) {
          await sleep(options.pollMs);
          continue;
        }
        // No more poppers than jobs moved: an empty pop is a wasted command.
        let empty = false;
        await Promise.all(
          Array.from({ length: Math.min(options.concurrency, moved) }, async () => {
            while (!empty && !stopped) {
              const member = await this.redis.dlPop(this.ready, this.reserved, Date.now() + this.reserveMs);
              if (member === null) {
                empty = true;
                return;
              }
              const job = JSON.parse(member) as PeerJob;
              try {
                await options.handler(job);
                await this.redis.zrem(this.reserved, member);
              } catch {
                if (job.attempts >= options.policy.maxAttempts) {
                  await this.redis.pipeline().zrem(this.reserved, member).lpush(this.deadKey, member).exec();
                } else {
                  const due = Date.now() + options.policy.retryInMs;
                  await this.redis.dlRelease(this.reserved, this.delayed, member, due, JSON.stringify({ ...job, due }));
                }
              }
            }
          }),
        );
      }
    })();
    return {
      async stop() {
        stopped = true;
        await loop;
      },
    };
  }

  async pending(): Promise<number> {
    const [a, b, c] = await Promise.all([this.redis.zcard(this.delayed), this.redis.llen(this.ready), this.redis.zcard(this.reserved)]);
    return a + b + c;
  }

  async dead(): Promise<number> {
    return this.redis.llen(this.deadKey);
  }
}
