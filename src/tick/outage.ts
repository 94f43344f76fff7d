import { RedisLimitError } from "../queue/errors.js";
import { RedisUnavailableError } from "../queue/redis.js";
import type { Clock } from "./clock.js";
import type { Log } from "./settle.js";

/**
 * While Redis is unreachable, or refuses commands at one of its limits
 * (RedisLimitError: full, or out of requests), the loop waits and tries again
 * (1 s, doubling up to 5 s) keeping its lock rather than ending: jobs it held
 * stay leased and come back after their lease, so nothing is lost, and the
 * loop resumes on its own once Redis takes commands again.
 */
export class OutageBackoff {
  private waitMs = 1_000;

  constructor(
    private readonly clock: Clock,
    private readonly log: Log,
    /** No wait runs past this time (the loop's window end). */
    private readonly until: number,
  ) {}

  /** Waits out `err` if it is an outage; rethrows anything else. */
  async wait(err: unknown): Promise<void> {
    if (!(err instanceof RedisUnavailableError)) throw err;
    const msg =
      err instanceof RedisLimitError
        ? `Redis refused a command at its ${err.limit} limit; the tick waits and retries`
        : "Redis unreachable; the tick waits and retries";
    this.log({ level: "error", msg, retryInMs: this.waitMs, error: err.message });
    await this.clock.sleep(Math.min(this.waitMs, Math.max(0, this.until - this.clock.now())));
    this.waitMs = Math.min(this.waitMs * 2, 5_000);
  }

  /** Redis answered: the next outage starts from 1 s again. */
  reset(): void {
    this.waitMs = 1_000;
  }
}
