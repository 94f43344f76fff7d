import { failingAttempts, startReceiver, type Receiver } from "../harness/receiver.js";

export { failsAttempt } from "../harness/receiver.js";

/**
 * Where the chaos runs deliver (harness/receiver.ts, {@link failingAttempts}): records every request per job id
 * (Delayline-Job-Id) and answers by its path, `/<anything>?fail=<percent>&delay=<ms>`.
 */
export class ChaosReceiver {
  private readonly attempts = failingAttempts();
  readonly byId = this.attempts.byId;
  private receiver: Receiver | undefined;
  url = "";

  async start(): Promise<this> {
    this.receiver = await startReceiver([this.attempts], { keepAliveTimeoutMs: 30_000 });
    this.url = this.receiver.url;
    return this;
  }

  /** Successful deliveries of `id`. */
  okCount(id: string): number {
    return (this.byId.get(id) ?? []).filter((d) => d.ok).length;
  }

  /** Every request recorded after `since`. */
  countSince(since: number, ids?: Set<string>): number {
    let n = 0;
    for (const [id, list] of this.byId) {
      if (ids && !ids.has(id)) continue;
      for (const d of list) if (d.at >= since) n++;
    }
    return n;
  }

  close(): Promise<void> {
    return this.receiver?.close() ?? Promise.resolve();
  }
}
