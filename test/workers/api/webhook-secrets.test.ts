/**
 * The isolate's memory of topic webhook secrets (src/producer/webhook-secrets.ts),
 * on its own clock, against a real Redis: reads are counted where the queue
 * makes them.
 */
import { expect, it } from "vitest";
import { settings } from "../../../src/env.js";
import { forgetWebhookSecret, SECRET_TTL_MS, webhookSecret } from "../../../src/producer/webhook-secrets.js";
import { queueFromSettings } from "../../../src/queue/from-settings.js";
import { isolatedEnv } from "./helpers.js";

function countedQueue() {
  const s = settings(isolatedEnv());
  const queue = queueFromSettings(s);
  const counter = { reads: 0 };
  const read = queue.topicSettings.bind(queue);
  queue.topicSettings = (topic) => {
    counter.reads++;
    return read(topic);
  };
  return { s, queue, counter };
}

it("reads a topic's secret once per interval, remembers that a topic has none, and forgets on request", async () => {
  const { s, queue, counter } = countedQueue();
  const clock = { t: 1_000_000 };
  const now = () => clock.t;
  await queue.configureTopic("a", { webhookSecret: "webhook-secret-0123456789" });

  expect(await webhookSecret(queue, s, "a", now)).toBe("webhook-secret-0123456789");
  clock.t += SECRET_TTL_MS - 1;
  expect(await webhookSecret(queue, s, "a", now)).toBe("webhook-secret-0123456789");
  expect(counter.reads).toBe(1);
  clock.t += 1;
  expect(await webhookSecret(queue, s, "a", now)).toBe("webhook-secret-0123456789");
  expect(counter.reads).toBe(2);

  expect(await webhookSecret(queue, s, "none", now)).toBeUndefined();
  expect(await webhookSecret(queue, s, "none", now)).toBeUndefined();
  expect(counter.reads).toBe(3);

  await queue.configureTopic("a", { webhookSecret: "rotated-secret-9876543210" });
  forgetWebhookSecret(s, "a");
  expect(await webhookSecret(queue, s, "a", now)).toBe("rotated-secret-9876543210");
  expect(counter.reads).toBe(4);

  // Another deployment's topic of the same name is another secret.
  const other = countedQueue();
  expect(await webhookSecret(other.queue, other.s, "a", now)).toBeUndefined();
});

it("remembers at most 1,000 topics, dropping the oldest: made-up topic names cannot grow it", async () => {
  const { s, queue, counter } = countedQueue();
  const now = () => 1_000_000;
  await webhookSecret(queue, s, "first", now);
  await webhookSecret(queue, s, "second", now);
  await Promise.all(Array.from({ length: 999 }, (_, i) => webhookSecret(queue, s, `made-up-${i}`, now)));
  expect(counter.reads).toBe(1_001);
  // The newest are remembered; "first" made room.
  await webhookSecret(queue, s, "made-up-998", now);
  await webhookSecret(queue, s, "second", now);
  expect(counter.reads).toBe(1_001);
  await webhookSecret(queue, s, "first", now);
  expect(counter.reads).toBe(1_002);
});
