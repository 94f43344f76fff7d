import type { TickStatus } from "../queue/queue.js";

/** How often the loop records its status (with a poll it makes anyway). */
const STATUS_EVERY_MS = 10_000;
/** Most topics of the index sampled into the per-minute backlog series, earliest first. */
const SAMPLED_TOPICS = 200;

/** What rides on one poll besides the poll itself. */
export interface Riders {
  status?: TickStatus;
  sample?: { at: number; topics: string[] };
  listToSample?: number;
}

/**
 * The status and the per-minute backlog samples ride along with the loop's
 * polls, so they cost no request of their own: the status every 10 s (and
 * with any change of the sleep mark, which it reports), and per minute the
 * first poll lists the topics to sample and the next samples them.
 */
export class PollRiders {
  private statusAt = -Infinity;
  private listedMinute = -1;
  private sampledMinute = -1;
  private toSample: string[] = [];
  /** This minute's list was taken again after work began (see {@link PollRiders.worked}). */
  private relisted = false;

  /**
   * The loop started jobs at `now`: if this minute's list found nothing to
   * sample (the index was empty when the minute's first poll listed it), the
   * next poll lists again, so a minute with work gets its sample even when the
   * loop ends idle before the next minute (the topics' series would otherwise
   * show no backlog for it). At most once a minute: two commands.
   */
  worked(now: number): void {
    const minute = Math.floor(now / 60_000);
    if (this.listedMinute === minute && this.toSample.length === 0 && !this.relisted) {
      this.listedMinute = -1;
      this.relisted = true;
    }
  }

  /** What a poll at `now` carries; `done` records what it did once it succeeded. */
  next(now: number, a: { markChanges: boolean; status: () => TickStatus }): { riders: Riders; done: (toSample: string[]) => void } {
    const writeStatus = now - this.statusAt >= STATUS_EVERY_MS || a.markChanges;
    const minute = Math.floor(now / 60_000);
    const list = minute !== this.listedMinute;
    const sample = !list && this.sampledMinute !== minute && this.toSample.length > 0;
    return {
      riders: {
        ...(writeStatus ? { status: a.status() } : {}),
        ...(sample ? { sample: { at: now, topics: this.toSample } } : {}),
        ...(list ? { listToSample: SAMPLED_TOPICS } : {}),
      },
      done: (toSample) => {
        if (writeStatus) this.statusAt = now;
        if (list) {
          if (this.listedMinute !== -1) this.relisted = false;
          this.listedMinute = minute;
          this.toSample = toSample;
        }
        if (sample) this.sampledMinute = minute;
      },
    };
  }
}
