/** `delayline topics list | show | set | pause | resume | delete` (a topic's flow keys: `flow-keys`). */
import { Option, type Command } from "commander";
import type { Topic, TopicSettingsPatch } from "../../client/index.js";
import {
  MAX_BURST,
  MAX_CONCURRENCY,
  MAX_CONTENT_DEDUP_MS,
  MAX_MAX_ATTEMPTS,
  MAX_MAX_LENGTH,
  MAX_TIMEOUT_MS,
  MAX_WEIGHT,
  MIN_MAX_ATTEMPTS,
  MIN_TIMEOUT_MS,
} from "../../limits.js";
import { action, askCommand, durationArg, jsonValue, positiveNumber, UsageError, wholeNumber, type Io } from "../context.js";
import { details, duration, table } from "../table.js";
import { flowText } from "./flow-keys.js";

/** The settings `topics set` takes, each as an option named after it, and can reset to its default with --clear. */
const SETTINGS = [
  "ratePerSec",
  "burst",
  "concurrency",
  "maxLength",
  "maxKeyLength",
  "overflow",
  "contentDedupMs",
  "maxLateness",
  "keepExpired",
  "weight",
  "maxAttempts",
  "backoff",
  "url",
  "mode",
  "timeoutMs",
  "signatureScheme",
  "signingSecret",
  "previousSigningSecrets",
  "webhookSecret",
  "flow",
] as const;

export function topicCommands(program: Command, io: Io): void {
  const topics = program.command("topics").description("topics: their settings, backlog and counters");
  listCommand(topics, io);
  askCommand(topics, io, "show <topic>", "a topic's settings and stats", (dl, topic) => dl.topics.get(topic), renderTopic);
  setCommand(topics, io);
  askCommand(topics, io, "pause <topic>", "stop dispatching and claiming the topic's jobs", (dl, topic) => dl.topics.pause(topic), renderTopic);
  askCommand(topics, io, "resume <topic>", "resume a paused topic", (dl, topic) => dl.topics.resume(topic), renderTopic);
  topics
    .command("delete")
    .description("delete an empty topic with its settings and metrics")
    .argument("<topic>")
    .option("--purge", "also drop its scheduled jobs and dead letters")
    .action(
      action(io, async (ctx, topic: string, o: { purge?: boolean }) => {
        const r = await ctx.client().topics.delete(topic, { purge: o.purge === true });
        ctx.print(r, (r) => `deleted ${r.topic} (purged ${r.purged.scheduled} scheduled, ${r.purged.dead} dead letters)`);
      }),
    );
}

function listCommand(topics: Command, io: Io): void {
  topics
    .command("list", { isDefault: true })
    .description("every registered topic (the API pages them; this follows every page)")
    .action(
      action(io, async (ctx) => {
        const list: Topic[] = [];
        for await (const t of ctx.client().topics.all({ limit: 500 })) list.push(t);
        ctx.print({ topics: list }, (r) =>
          table(
            r.topics,
            [
              { header: "TOPIC", value: (t) => t.topic },
              { header: "MODE", value: (t) => t.settings.mode },
              { header: "PAUSED", value: (t) => (t.settings.paused ? "yes" : "no") },
              { header: "SCHEDULED", value: (t) => t.scheduled, align: "right" },
              { header: "READY", value: (t) => t.ready, align: "right" },
              { header: "INFLIGHT", value: (t) => t.inflight, align: "right" },
              { header: "DEAD", value: (t) => t.dead, align: "right" },
              { header: "URL", value: (t) => t.settings.url },
            ],
            "(no topics)",
          ),
        );
      }),
    );
}

function setCommand(topics: Command, io: Io): void {
  topics
    .command("set")
    .description("change a topic's settings (creates the topic)")
    .argument("<topic>")
    .option("--url <url>", "the topic's delivery URL (not the Worker's: see below)")
    .addOption(new Option("--mode <mode>", "push (delivered by the tick) or pull (claimed by consumers)").choices(["push", "pull"]))
    .option("--rate-per-sec <n>", "most deliveries a second", positiveNumber)
    .option("--burst <n>", "deliveries the rate allows at once", wholeNumber(1, MAX_BURST))
    .option("--concurrency <n>", "most deliveries in flight", wholeNumber(1, MAX_CONCURRENCY))
    .option("--max-length <n>", "most pending jobs (scheduled and waiting; not those in flight) the topic holds", wholeNumber(1, MAX_MAX_LENGTH))
    .option(
      "--max-key-length <n>",
      "most pending jobs each flow key of the topic holds, unless the key sets its own (flow-keys set --max-key-length)",
      wholeNumber(1, MAX_MAX_LENGTH),
    )
    .addOption(
      new Option("--overflow <policy>", "at --max-length or a key's cap: reject the new jobs (429), or store them and drop the oldest pending ones").choices([
        "reject",
        "dropOldest",
      ]),
    )
    .option(
      "--content-dedup-ms <ms>",
      "content dedup: a job without an idempotency key that delivers what one enqueued within this window does (topic, target, payload) is that job",
      wholeNumber(1, MAX_CONTENT_DEDUP_MS),
    )
    .option("--max-lateness <duration>", 'a job that would start later than this after its due time expires instead: "2s", "5m", or ms', durationArg)
    .option("--keep-expired [yes|no]", "keep expired jobs as dead letters (listed, replayable) instead of finished jobs (alone: yes)", yesNo)
    .option("--weight <n>", "the topic's share of the tick when topics contend for it (default 1)", wholeNumber(1, MAX_WEIGHT))
    .option("--max-attempts <n>", "attempts before a job is a dead letter", wholeNumber(MIN_MAX_ATTEMPTS, MAX_MAX_ATTEMPTS))
    .option("--timeout-ms <ms>", "each delivery's timeout", wholeNumber(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS))
    .option(
      "--backoff <json>",
      'the wait between attempts, as JSON: \'{"type":"fixed","delay":"30s"}\', \'{"type":"exponential","delay":"1s","factor":2,"maxDelay":"1h","jitter":true}\' or \'{"type":"schedule","delays":["10s","1m","10m"]}\'',
      jsonValue,
    )
    .addOption(
      new Option("--signature-scheme <scheme>", "how deliveries are signed: delayline (Stripe's format) or standard (Standard Webhooks)").choices([
        "delayline",
        "standard",
      ]),
    )
    .option("--signing-secret <secret>", "signs deliveries (write-only; a whsec_ secret with --signature-scheme standard)")
    .option("--previous-signing-secrets <secret...>", "while rotating: old secrets deliveries are also signed with (write-only)")
    .option("--webhook-secret <secret>", "verifies signed ingest (write-only)")
    .option(
      "--flow <json>",
      'what each flow key gets unless it has settings of its own (flow-keys set), as JSON, replacing what was set: \'{"ratePerSec":5,"burst":10,"parallelism":2,"weight":1,"priorityStepMs":10000}\'',
      jsonValue,
    )
    .option("--clear <setting...>", `reset settings to their defaults: ${SETTINGS.join(", ")}`)
    .addHelpText(
      "after",
      "\nHere --url is the topic's delivery URL. The Worker's URL goes before the command (delayline --url <worker> topics set …) or in DELAYLINE_URL.",
    )
    .action(
      action(io, async (ctx, topic: string, o: Record<string, unknown>) => ctx.print(await ctx.client().topics.configure(topic, patchOf(o)), renderTopic)),
    );
}

/** A yes/no option's value. */
function yesNo(value: string): boolean {
  if (value === "yes" || value === "true") return true;
  if (value === "no" || value === "false") return false;
  throw new UsageError(`${value}: give yes or no`);
}

/** The change `topics set`'s options ask for: each setting given, and null for each one cleared. */
function patchOf(o: Record<string, unknown>): TopicSettingsPatch {
  const patch: Record<string, unknown> = {};
  for (const key of SETTINGS) if (o[key] !== undefined) patch[key] = o[key];
  for (const key of (o.clear as string[] | undefined) ?? []) {
    if (!(SETTINGS as readonly string[]).includes(key)) throw new UsageError(`--clear ${key}: not a setting (${SETTINGS.join(", ")})`);
    patch[key] = null;
  }
  if (Object.keys(patch).length === 0) throw new UsageError("nothing to set: give a setting option or --clear");
  return patch as TopicSettingsPatch;
}

function renderTopic(t: Topic): string {
  const s = t.settings;
  const backoff =
    s.backoff.type === "fixed"
      ? `fixed ${duration(s.backoff.delay)}`
      : s.backoff.type === "exponential"
        ? `exponential from ${duration(s.backoff.delay)} ×${s.backoff.factor} to ${duration(s.backoff.maxDelay)}${s.backoff.jitter ? ", jitter" : ""}`
        : `schedule ${s.backoff.delays.map(duration).join(", ")}`;
  return details([
    ["topic", t.topic],
    ["mode", s.mode],
    ["paused", s.paused ? "yes" : "no"],
    ["url", s.url],
    ["rate", s.ratePerSec === undefined ? "unlimited" : `${s.ratePerSec}/s${s.burst !== undefined ? `, burst ${s.burst}` : ""}`],
    ["concurrency", s.concurrency ?? "unlimited"],
    ["max length", s.maxLength === undefined ? "unlimited" : `${s.maxLength} pending, overflow ${s.overflow}`],
    ["max key length", s.maxKeyLength === undefined ? "unlimited" : `${s.maxKeyLength} pending a flow key, overflow ${s.overflow}`],
    ["content dedup", s.contentDedupMs === undefined ? "off" : `within ${duration(s.contentDedupMs)}`],
    ["max lateness", s.maxLateness === undefined ? "unlimited" : duration(s.maxLateness)],
    ["expired jobs", s.keepExpired ? "kept as dead letters" : "finished"],
    ["weight", s.weight],
    ["max attempts", s.maxAttempts],
    ["backoff", backoff],
    ["timeout", duration(s.timeoutMs)],
    ["signature scheme", s.signatureScheme],
    ["signing secret", s.hasSigningSecret ? (s.hasPreviousSigningSecrets ? "set, with previous ones (rotating)" : "set") : "none"],
    ["webhook secret", s.hasWebhookSecret ? "set" : "none"],
    ["flow", flowText(s.flow)],
    ["scheduled", t.scheduled],
    ["ready", t.ready],
    ["inflight", t.inflight],
    ["dead", t.dead],
    ["oldest ready due", t.oldestReadyDueAt],
    [
      "counters",
      `${t.counters.dispatched} dispatched, ${t.counters.succeeded} succeeded, ${t.counters.retried} retried, ${t.counters.dead} dead, ${t.counters.dropped} dropped, ${t.counters.expired} expired`,
    ],
  ]);
}
