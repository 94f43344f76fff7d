/** `dl.health`: whether the Worker and its Redis are up, and when the tick last ran. */
import type { Requester } from "./requester.js";

/** What GET /healthz answers (200 when some shard's Redis is up, 503 when none is). */
export interface Health {
  /** True when every shard answered. */
  ok: boolean;
  /** up: every shard answered; partial: some did; down: none did. */
  redis: "up" | "partial" | "down";
  /** When the cron last started the main shard's tick (epoch ms), or null when it never has (or main did not answer). */
  lastTickAt: number | null;
  tickAgeMs: number | null;
  /** Each shard that answered, with its tick's heartbeat. */
  shards: Array<{ shard: string; lastTickAt: number | null; tickAgeMs: number | null }>;
  /** True when a shard did not answer in time. */
  partial: boolean;
  /** The shards that did not answer in time. */
  missingShards: string[];
}

/** Whether a body is GET /healthz's answer. */
function isHealth(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && "ok" in v && "redis" in v;
  } catch {
    return false;
  }
}

/** Health: `/healthz`, which needs no token. */
export class HealthResource {
  constructor(private readonly r: Requester) {}

  /** The Worker's liveness, Redis's reachability and the tick's heartbeat. Sent once: it says how things are now. */
  get(): Promise<Health> {
    // The Worker's 503 is the answer "Redis is down", in the same shape as its 200; anyone else's is an error.
    return this.r.json<Health>("GET", "/healthz", undefined, { retry: false, accept: (status, text) => status === 503 && isHealth(text) });
  }
}
