import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the receiver got for a job. */
export interface Delivery {
  attempt: number;
  at: number;
  ok: boolean;
}

/**
 * Whether the receiver fails this attempt of this job: a hash of id and
 * attempt under `percent`, so a run's failures are decided by the ids alone
 * and every count that follows from them can be predicted exactly.
 */
export function failsAttempt(id: string, attempt: number, percent: number): boolean {
  if (percent <= 0) return false;
  if (percent >= 100) return true;
  const h = createHash("sha256").update(`${id}:${attempt}`).digest().readUInt32BE(0);
  return h % 10_000 < percent * 100;
}

/**
 * Where the chaos runs deliver: records every request per job id
 * (Delayline-Job-Id) and answers by its path, `/<anything>?fail=<percent>&delay=<ms>`:
 * 500 for the attempts {@link failsAttempt} picks, else 200, after `delay` ms.
 */
export class ChaosReceiver {
  readonly byId = new Map<string, Delivery[]>();
  private server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://receiver");
    const id = String(req.headers["delayline-job-id"] ?? "");
    const attempt = Number(req.headers["delayline-attempt"] ?? 0);
    const fail = Number(url.searchParams.get("fail") ?? 0);
    const delay = Number(url.searchParams.get("delay") ?? 0);
    req.resume();
    req.on("end", () => {
      const ok = !failsAttempt(id, attempt, fail);
      const answer = () => {
        // Recorded as answered: a delivery the Worker may or may not have seen settle.
        const list = this.byId.get(id) ?? [];
        list.push({ attempt, at: Date.now(), ok });
        this.byId.set(id, list);
        res.statusCode = ok ? 200 : 500;
        res.end(ok ? "ok" : "chaos says no");
      };
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  url = "";

  async start(): Promise<this> {
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
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
    return new Promise((r) => {
      this.server.close(() => r());
      this.server.closeAllConnections();
    });
  }
}
