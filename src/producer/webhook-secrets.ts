import type { Settings } from "../env.js";
import type { Queue } from "../queue/queue.js";

/**
 * Topic webhook secrets, remembered per isolate for a few seconds. Checking a
 * signature needs the topic's secret, and the request is not authenticated
 * until it has been checked: without this, every forged request would cost a
 * Redis read. With it, a flood of them costs one read per topic per
 * {@link SECRET_TTL_MS} (once the first read has answered: requests arriving
 * before that each read, since a read started by one request cannot be
 * awaited by another in a Worker).
 */

/** How long a secret read is used. A changed secret takes up to this long to reach other isolates. */
export const SECRET_TTL_MS = 5_000;

/** Most topics remembered; past it the oldest entry goes, so unknown topic names cannot grow the map. */
const MAX_ENTRIES = 1_000;

const cache = new Map<string, { at: number; secret: string | undefined }>();

const keyOf = (settings: Settings, topic: string) => `${settings.redisUrl}\n${settings.prefix}\n${topic}`;

/** The topic's webhook secret (undefined when it has none), from this isolate's memory when read within {@link SECRET_TTL_MS}. */
export async function webhookSecret(queue: Queue, settings: Settings, topic: string, now: () => number = Date.now): Promise<string | undefined> {
  const key = keyOf(settings, topic);
  const hit = cache.get(key);
  if (hit && now() - hit.at < SECRET_TTL_MS) return hit.secret;
  const { secrets } = await queue.topicSettings(topic);
  cache.delete(key);
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(key, { at: now(), secret: secrets.webhookSecret });
  return secrets.webhookSecret;
}

/** Forgets a topic's remembered secret: a change made through this isolate applies to it at once. */
export function forgetWebhookSecret(settings: Settings, topic: string): void {
  cache.delete(keyOf(settings, topic));
}
