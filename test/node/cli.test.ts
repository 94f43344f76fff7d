/**
 * The `delayline` CLI against the whole local stack as `npm start` runs it
 * (redis-server, the bridge, the Worker in workerd, the cron driver), run
 * as an operator would: its own process, DELAYLINE_URL and DELAYLINE_TOKEN
 * in the environment, tables on stdout, JSON with --json, the problem's
 * detail on stderr and a non-zero exit on errors.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command, Option } from "commander";
import { afterAll, beforeAll, expect, it } from "vitest";
import { requestLog, startReceiver, type ReceiverPart } from "../../harness/receiver.js";
import { until } from "../../harness/util.js";
import { GlobalOption } from "../../src/cli/context.js";
import { buildProgram } from "../../src/cli/program.js";
import { Delayline } from "../../src/client/index.js";
import { TopicSettingsBody } from "../../src/producer/schemas.js";
import { placeTopic } from "../../src/queue/placement.js";
import { startLocalStack, type LocalStack } from "../local-stack.js";

let stack: LocalStack;
let dl: Delayline;

beforeAll(async () => {
  stack = await startLocalStack({ TICK_POLL_MS: "100" });
  dl = new Delayline({ baseUrl: stack.url, token: stack.token });
}, 150_000);

afterAll(async () => {
  await stack?.stop();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI from source, as `npm run cli -- …` does, with the stack's URL and token in its environment;
 * `stdin` is piped to it (else its standard input is empty). A run still going after `killAfterMs` is stopped.
 */
function cli(args: string[], env: Record<string, string> = {}, stdin = "", killAfterMs = 0): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", ...args],
      {
        cwd: join(import.meta.dirname, "../.."),
        env: { ...process.env, DELAYLINE_URL: stack.url, DELAYLINE_TOKEN: stack.token, ...env },
        timeout: killAfterMs,
      },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });
}

/** Runs the CLI with --json and parses what it printed; fails on a non-zero exit. */
async function json<T = any>(args: string[]): Promise<T> {
  const r = await cli([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

it("enqueues, shows, lists and cancels a job; tables by default, JSON with --json", { timeout: 60_000 }, async () => {
  const made = await json(["enqueue", "cli-mail", '{"to":"ada"}', "--delay", "1h"]);
  expect(made).toMatchObject({ topic: "cli-mail", deduplicated: false, id: expect.stringMatching(/^cli-mail\./) });

  const job = await json(["get", made.id]);
  expect(job).toMatchObject({ id: made.id, state: "scheduled", payload: { to: "ada" }, attempts: 0 });

  const listed = await json(["jobs", "cli-mail"]);
  expect(listed.jobs.map((j: { id: string }) => j.id)).toEqual([made.id]);
  // The API's own listing agrees.
  expect((await dl.jobs.list("cli-mail")).jobs.map((j) => j.id)).toEqual([made.id]);

  const table = await cli(["jobs", "cli-mail"]);
  expect(table.code).toBe(0);
  const [header, row, ...rest] = table.stdout.trim().split("\n");
  expect(header).toMatch(/^ID\s+STATE\s+DUE\s+ATTEMPTS\s+LAST ERROR$/);
  expect(row).toMatch(new RegExp(`^${made.id.replace(".", "\\.")}\\s+scheduled\\s+\\S+\\s+0\\s+-$`));
  expect(rest).toEqual([]);

  const cancelled = await cli(["cancel", made.id]);
  expect(cancelled).toMatchObject({ code: 0, stdout: `cancelled ${made.id}\n` });
  expect((await dl.jobs.get(made.id))!.state).toBe("cancelled");
  expect(await cli(["jobs", "cli-mail"])).toMatchObject({ code: 0, stdout: "(no scheduled jobs in cli-mail)\n" });
});

it("lists a dead letter and replays it: the job is scheduled again with fresh attempts", { timeout: 60_000 }, async () => {
  // A pull topic with one attempt: a consumer's nack makes the job a dead letter at once.
  const topic = await json(["topics", "set", "cli-work", "--mode", "pull", "--max-attempts", "1"]);
  expect(topic.settings).toMatchObject({ mode: "pull", maxAttempts: 1 });
  const made = await json(["enqueue", "cli-work", '"payload"']);
  const [claimed] = await dl.jobs.claim("cli-work");
  expect(claimed!.id).toBe(made.id);
  expect(await dl.jobs.nack(made.id, 1, { error: "boom from the consumer" })).toBe("dead");

  const dead = await json(["dead", "list", "cli-work"]);
  expect(dead.entries).toMatchObject([{ id: made.id, attempts: 1, lastError: "boom from the consumer" }]);
  const deadTable = await cli(["dead", "list", "cli-work"]);
  expect(deadTable.stdout).toMatch(/^ID\s+FAILED\s+ATTEMPTS\s+LAST ERROR\n/);
  expect(deadTable.stdout).toContain("boom from the consumer");

  const replayed = await cli(["dead", "replay", "cli-work", made.id]);
  expect(replayed).toMatchObject({ code: 0, stdout: "replayed 1\n" });
  expect((await json(["dead", "list", "cli-work"])).entries).toEqual([]);
  const back = await json(["jobs", "cli-work"]);
  expect(back.jobs).toMatchObject([{ id: made.id, state: "scheduled", attempts: 0 }]);

  // purge wants --all or a filter: never everything by default.
  const refused = await cli(["dead", "purge", "cli-work"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/give --all, or a filter/);
});

it("bulk-cancel, dead replay and dead purge with --dry-run say what they would take and change nothing; replay --payload --topic moves letters", {
  timeout: 60_000,
}, async () => {
  const later = Date.now() + 3_600_000;
  const ids = (await dl.jobs.enqueueBatch(Array.from({ length: 25 }, (_, i) => ({ topic: "cli-bulk", payload: i, runAt: later + i })))).map((j) => j.id);
  expect(await json(["bulk-cancel", "cli-bulk", "--all", "--dry-run"])).toEqual({ cancelled: 25, inflight: 0, dryRun: true, ids: ids.slice(0, 20) });
  const preview = await cli(["bulk-cancel", "cli-bulk", "--due-from", String(later + 20), "--dry-run"]);
  expect(preview).toMatchObject({ code: 0, stdout: `would cancel 5, first:\n${ids.slice(20).join("\n")}\nin flight (left alone): 0\n` });
  expect((await dl.jobs.list("cli-bulk")).jobs).toHaveLength(25);
  expect(await cli(["bulk-cancel", "cli-bulk", "--due-from", String(later + 20)])).toMatchObject({
    code: 0,
    stdout: "cancelled 5\nin flight (left alone): 0\n",
  });
  expect((await dl.jobs.list("cli-bulk")).jobs).toHaveLength(20);

  await json(["topics", "set", "cli-dead", "--mode", "pull", "--max-attempts", "1"]);
  await json(["topics", "set", "cli-fixed", "--mode", "pull"]);
  const made = await dl.jobs.enqueueBatch([0, 1, 2].map((i) => ({ topic: "cli-dead", payload: i })));
  for (const j of await dl.jobs.claim("cli-dead", { max: 3 })) await dl.jobs.nack(j.id, 1, { error: j.payload === 2 ? "gone" : "boom" });
  const [a, b, c] = made.map((j) => j.id) as [string, string, string];
  expect(await json(["dead", "replay", "cli-dead", "--error", "boom", "--dry-run"])).toEqual({ replayed: 2, notFound: [], dryRun: true, ids: [a, b] });
  expect(await json(["dead", "purge", "cli-dead", "--error", "gone", "--dry-run"])).toEqual({ purged: 1, dryRun: true, ids: [c] });
  expect((await dl.deadLetters.list("cli-dead")).entries).toHaveLength(3);

  const moved = await json(["dead", "replay", "cli-dead", "--error", "boom", "--payload", '{"fixed":true}', "--topic", "cli-fixed"]);
  expect(moved).toMatchObject({ replayed: 2, notFound: [] });
  expect(Object.keys(moved.movedTo)).toEqual([a, b]);
  const job = await dl.jobs.get(moved.movedTo[a]);
  expect(job).toMatchObject({ topic: "cli-fixed", payload: { fixed: true }, state: "scheduled" });
  expect((await dl.jobs.get(a))!.history.at(-1)).toMatchObject({ outcome: "moved", changes: ["payload", "topic"], movedTo: moved.movedTo[a] });
  expect(await cli(["dead", "purge", "cli-dead", "--all"])).toMatchObject({ code: 0, stdout: "purged 1\n" });
});

it("labels: enqueue and upsert --label (repeated), jobs --label with a LABELS column, bulk-cancel --label, dead list, replay and purge --label", {
  timeout: 60_000,
}, async () => {
  const a = await json(["enqueue", "cli-labels", '"a"', "--delay", "1h", "--label", "tenant:42", "--label", "invoice"]);
  const b = await json(["enqueue", "cli-labels", '"b"', "--delay", "1h", "--label", "tenant:7"]);
  const up = await json(["upsert", "cli-labels", "user-1", '"c"', "--delay", "1h", "--label", "tenant:42"]);
  expect(await dl.jobs.get(a.id)).toMatchObject({ labels: ["tenant:42", "invoice"] });
  expect((await cli(["get", a.id])).stdout).toMatch(/^labels\s+tenant:42 invoice$/m);
  expect((await json(["jobs", "cli-labels", "--label", "tenant:42"])).jobs.map((j: { id: string }) => j.id)).toEqual([a.id, up.id]);
  const table = await cli(["jobs", "cli-labels", "--label", "invoice"]);
  expect(table.stdout).toMatch(/^ID\s+STATE\s+DUE\s+ATTEMPTS\s+LAST ERROR\s+LABELS\n/);
  expect(table.stdout).toContain("tenant:42 invoice");
  expect((await cli(["jobs", "cli-labels", "--label", "nobody"])).stdout).toContain("(no scheduled jobs labelled nobody in cli-labels)");
  const bad = await cli(["enqueue", "cli-labels", "--label", "has space"]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("letters, digits and : . _ / - only");

  expect(await json(["bulk-cancel", "cli-labels", "--label", "tenant:42", "--dry-run"])).toEqual({
    cancelled: 2,
    inflight: 0,
    dryRun: true,
    ids: [a.id, up.id],
  });
  expect(await cli(["bulk-cancel", "cli-labels", "--label", "tenant:42"])).toMatchObject({ code: 0, stdout: "cancelled 2\nin flight (left alone): 0\n" });
  expect((await dl.jobs.list("cli-labels")).jobs.map((j) => j.id)).toEqual([b.id]);

  await json(["topics", "set", "cli-labels-dead", "--mode", "pull", "--max-attempts", "1"]);
  const made = await dl.jobs.enqueueBatch(["red", "red", "blue"].map((label, i) => ({ topic: "cli-labels-dead", payload: i, labels: [label] })));
  for (const j of await dl.jobs.claim("cli-labels-dead", { max: 3 })) await dl.jobs.nack(j.id, 1, { error: "boom" });
  const [r1, r2, blue] = made.map((j) => j.id) as [string, string, string];
  expect((await json(["dead", "list", "cli-labels-dead", "--label", "red"])).entries.map((e: { id: string }) => e.id)).toEqual([r1, r2]);
  expect((await cli(["dead", "list", "cli-labels-dead", "--label", "blue"])).stdout).toMatch(/^ID\s+FAILED\s+ATTEMPTS\s+LAST ERROR\s+LABELS\n.*blue$/m);
  expect(await json(["dead", "replay", "cli-labels-dead", "--label", "red", "--dry-run"])).toEqual({ replayed: 2, notFound: [], dryRun: true, ids: [r1, r2] });
  expect(await json(["dead", "replay", "cli-labels-dead", "--label", "red"])).toMatchObject({ replayed: 2 });
  expect((await dl.jobs.get(r1))!.state).toBe("scheduled");
  expect(await json(["dead", "purge", "cli-labels-dead", "--label", "blue", "--dry-run"])).toEqual({ purged: 1, dryRun: true, ids: [blue] });
  expect(await cli(["dead", "purge", "cli-labels-dead", "--label", "blue"])).toMatchObject({ code: 0, stdout: "purged 1\n" });
  expect((await dl.deadLetters.list("cli-labels-dead")).entries).toEqual([]);
});

it("status shows health, the tick's heartbeat and each topic's backlog", { timeout: 60_000 }, async () => {
  await json(["enqueue", "cli-status", "--delay", "1h"]);
  // The cron driver's first tick may not have run yet when the stack answers.
  for (let i = 0; i < 120 && (await dl.health.get()).lastTickAt === null; i++) await new Promise((r) => setTimeout(r, 250));
  const status = await json(["status"]);
  expect(status.health).toMatchObject({ ok: true, redis: "up", lastTickAt: expect.any(Number) });
  expect(status.topics.find((t: { topic: string }) => t.topic === "cli-status")).toMatchObject({ scheduled: 1, ready: 0, dead: 0 });

  const text = await cli(["status"]);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^redis\s+up$/m);
  expect(text.stdout).toMatch(/^last tick\s+\d{4}-\d\d-\d\dT.*ago\)$/m);
  expect(text.stdout).toMatch(/^TOPIC\s+MODE\s+PAUSED\s+SCHEDULED\s+READY\s+INFLIGHT\s+DEAD\s+LAG\s+PER MIN$/m);
  expect(text.stdout).toMatch(/^cli-status\s+push\s+no\s+1\s+0\s+0\s+0\s/m);
});

it("manages topics and schedules", { timeout: 60_000 }, async () => {
  expect((await json(["topics", "pause", "cli-ops"])).settings.paused).toBe(true);
  expect((await json(["topics", "show", "cli-ops"])).settings.paused).toBe(true);
  expect((await json(["topics", "resume", "cli-ops"])).settings.paused).toBe(false);
  expect((await json(["topics", "list"])).topics.map((t: { topic: string }) => t.topic)).toContain("cli-ops");
  const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
  const rotating = await json([
    "topics",
    "set",
    "cli-ops",
    "--signature-scheme",
    "standard",
    "--signing-secret",
    secret,
    "--previous-signing-secrets",
    `whsec_${Buffer.alloc(32, 8).toString("base64")}`,
  ]);
  expect(rotating.settings).toMatchObject({ signatureScheme: "standard", hasSigningSecret: true, hasPreviousSigningSecrets: true });
  expect((await json(["topics", "set", "cli-ops", "--clear", "previousSigningSecrets", "signatureScheme"])).settings).toMatchObject({
    hasPreviousSigningSecrets: false,
    signatureScheme: "delayline",
  });

  const made = await json([
    "schedules",
    "create",
    "cli-digest",
    "--cron",
    "0 9 * * 1-5",
    "--timezone",
    "Europe/Berlin",
    "--topic",
    "cli-ops",
    "--payload",
    '{"kind":"digest"}',
  ]);
  expect(made).toMatchObject({ id: "cli-digest", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", payload: { kind: "digest" }, paused: false });
  expect(made.nextRuns[0]).toMatch(/T09:00:00\+0[12]:00$/);
  expect((await json(["schedules", "list"])).schedules.map((s: { id: string }) => s.id)).toEqual(["cli-digest"]);
  expect((await json(["schedules", "pause", "cli-digest"])).paused).toBe(true);
  const shown = await cli(["schedules", "show", "cli-digest"]);
  expect(shown.stdout).toMatch(/^when\s+cron 0 9 \* \* 1-5 \(Europe\/Berlin\)$/m);
  expect(await cli(["schedules", "delete", "cli-digest"])).toMatchObject({ code: 0, stdout: "deleted schedule cli-digest\n" });
  expect(await dl.schedules.get("cli-digest")).toBeNull();
  const gone = await cli(["schedules", "show", "cli-digest"]);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toBe("error: no schedule cli-digest\n");
});

it("a wrong token exits 1 with the 401 problem's detail on stderr (and the problem document with --json)", { timeout: 60_000 }, async () => {
  const expected = (await (await fetch(`${stack.url}/v1/topics`, { headers: { authorization: "Bearer wrong-token-000" } })).json()) as {
    status: number;
    detail: string;
  };
  expect(expected.status).toBe(401);

  const r = await cli(["topics", "list"], { DELAYLINE_TOKEN: "wrong-token-000" });
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr).toContain(expected.detail);
  expect(r.stderr).toMatch(/\[401 Unauthorized\]/);

  const j = await cli(["topics", "list", "--json", "--token", "wrong-token-000"]);
  expect(j.code).toBe(1);
  expect(JSON.parse(j.stderr)).toMatchObject({ status: 401, detail: expected.detail });
});

it("a request the API refuses exits 1 with its detail and each field's rule", { timeout: 60_000 }, async () => {
  const r = await cli(["enqueue", "bad topic"]);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^error: the body does not match the schema \[422 Unprocessable Content\]\n {2}topic: /);
  const missing = await cli(["get", "cli-mail.01ARZ3NDEKTSV4RRFFQ69G5FAV"]);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/no job cli-mail\.01ARZ3NDEKTSV4RRFFQ69G5FAV/);
  const noUrl = await cli(["status"], { DELAYLINE_URL: "" });
  expect(noUrl.code).toBe(1);
  expect(noUrl.stderr).toMatch(/no Worker URL: set DELAYLINE_URL or pass --url/);
});

it("enqueue --idempotency-until finished: the live job for a repeat, a new job once it ended; topics set --content-dedup-ms: identical jobs are one", {
  timeout: 60_000,
}, async () => {
  await json(["topics", "set", "cli-finished", "--mode", "pull"]);
  const args = ["enqueue", "cli-finished", '"x"', "--idempotency-key", "order-1", "--idempotency-until", "finished"];
  const first = await json(args);
  expect(first.deduplicated).toBe(false);
  expect(await json(args)).toEqual({ ...first, deduplicated: true });
  expect((await cli(args)).stdout).toMatch(/deduplicated\s+yes/);
  expect((await cli(["cancel", first.id])).code).toBe(0);
  const next = await json(args);
  expect(next.deduplicated).toBe(false);
  expect(next.id).not.toBe(first.id);
  expect((await dl.jobs.get(next.id))!.state).toBe("scheduled");
  const bare = await cli(["enqueue", "cli-finished", "--idempotency-until", "finished"]);
  expect(bare.code).not.toBe(0);
  expect(bare.stderr).toContain("--idempotency-until goes with --idempotency-key");

  const topic = await json(["topics", "set", "cli-content", "--mode", "pull", "--content-dedup-ms", "60000"]);
  expect(topic.settings.contentDedupMs).toBe(60_000);
  expect((await cli(["topics", "show", "cli-content"])).stdout).toMatch(/content dedup\s+within/);
  const a = await json(["enqueue", "cli-content", '{"n":1}']);
  expect(await json(["enqueue", "cli-content", '{"n":1}'])).toEqual({ ...a, deduplicated: true, deduplicatedBy: "content" });
  const b = await json(["enqueue", "cli-content", '{"n":2}']);
  expect(b.deduplicated).toBe(false);
  expect((await dl.jobs.list("cli-content")).jobs.map((j) => j.id).sort()).toEqual([a.id, b.id].sort());
});

it("jobs upsert: a new job, then the key's pending job replaced, kept due or left alone; get shows its key", { timeout: 60_000 }, async () => {
  const made = await json(["jobs", "upsert", "cli-upsert", "user-1", '{"n":1}', "--delay", "1h", "--max-wait", "2h"]);
  expect(made).toMatchObject({ topic: "cli-upsert", result: "created" });
  const replaced = await json(["jobs", "upsert", "cli-upsert", "user-1", '{"n":2}', "--delay", "90m", "--max-wait", "2h"]);
  expect(replaced).toMatchObject({ id: made.id, result: "replaced" });
  expect(Date.parse(replaced.dueAt) - Date.parse(made.dueAt)).toBeGreaterThanOrEqual(30 * 60_000);
  expect(await json(["upsert", "cli-upsert", "user-1", '{"n":3}', "--on-conflict", "keepDue", "--delay", "3h"])).toMatchObject({
    id: made.id,
    dueAt: replaced.dueAt,
    result: "replaced",
  });
  const ignored = await cli(["jobs", "upsert", "cli-upsert", "user-1", '{"n":4}', "--on-conflict", "ignore"]);
  expect(ignored.stdout).toMatch(/^result\s+ignored$/m);
  expect(await dl.jobs.get(made.id)).toMatchObject({ payload: { n: 3 }, jobKey: "user-1", replacements: 2 });
  expect((await cli(["get", made.id])).stdout).toMatch(/^job key\s+user-1 \(replaced 2×\)$/m);
  const refused = await cli(["jobs", "upsert", "cli-upsert", "user-1", "--delay", "3h", "--max-wait", "2h"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("must not be longer than maxWait");
  // `jobs <topic>` still lists beside its `upsert` subcommand.
  expect((await cli(["jobs", "cli-upsert"])).stdout).toContain(made.id);
  await dl.topics.delete("cli-upsert", { purge: true });
});

it("expiry: enqueue and upsert --ttl and --expires-at, topics set --max-lateness and --keep-expired; a paused topic's job ends expired", {
  timeout: 60_000,
}, async () => {
  const topic = "cli-expiry";
  expect((await cli(["topics", "pause", topic])).code).toBe(0);
  const kept = await cli(["topics", "set", topic, "--max-lateness", "2000", "--keep-expired"]);
  expect(kept.code, kept.stderr).toBe(0);
  expect(kept.stdout).toMatch(/^expired jobs\s+kept as dead letters$/m);
  const shown = await cli(["topics", "set", topic, "--max-lateness", "2s", "--keep-expired", "no"]);
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toMatch(/^max lateness\s+2(\.0)?\s?s$/m);
  expect(shown.stdout).toMatch(/^expired jobs\s+finished$/m);
  const made = await json(["enqueue", topic, '{"n":1}', "--ttl", "1s"]);
  const upserted = await json(["upsert", topic, "k", '{"n":2}', "--delay", "1h", "--expires-at", new Date(Date.now() + 7_200_000).toISOString()]);
  expect((await cli(["get", upserted.id])).stdout).toMatch(/^expires\s+\d{4}-/m);
  // An expiry that does not come after the job's due time is refused, nothing stored.
  const refused = await cli(["enqueue", topic, "--delay", "1h", "--ttl", "30m"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("expire before it is due");
  // Paused, the job still ends expired once its ttl passed, never started.
  await until(async () => (await dl.jobs.get(made.id))?.state === "expired", 30_000, "the job to expire");
  const job = await json(["get", made.id]);
  expect(job).toMatchObject({ state: "expired", attempts: 0, history: [{ attempt: 0, outcome: "expired" }] });
  expect((await cli(["topics", "show", topic])).stdout).toMatch(/ 1 expired/);
  await dl.topics.delete(topic, { purge: true });
});

it("pull consumers: claim, extend, ack and nack a pull topic's jobs; a stale attempt exits 1 with the API's 409", { timeout: 60_000 }, async () => {
  await json(["topics", "set", "cli-pull", "--mode", "pull", "--max-attempts", "1"]);
  const a = await json(["enqueue", "cli-pull", '{"n":1}']);
  const b = await json(["enqueue", "cli-pull", '{"n":2}']);
  const claimed = (await json(["claim", "cli-pull", "--max", "2", "--lease-ms", "30000"])).jobs as Array<{ id: string; attempt: number }>;
  expect(claimed.map((j) => j.id).sort()).toEqual([a.id, b.id].sort());
  expect(claimed.map((j) => j.attempt)).toEqual([1, 1]);
  const extended = await json(["extend", a.id, "--attempt", "1", "--lease-ms", "600000"]);
  expect(extended).toMatchObject({ id: a.id, attempt: 1 });
  expect(Date.parse(extended.leaseExpiresAt)).toBeGreaterThan(Date.now() + 500_000);
  expect((await dl.jobs.get(a.id))!.leaseExpiresAt).toBe(extended.leaseExpiresAt);
  const stale = await cli(["extend", a.id, "--attempt", "2", "--lease-ms", "60000"]);
  expect(stale.code).toBe(1);
  expect(stale.stderr).toContain("[409 Conflict]");
  expect((await cli(["ack", a.id, "--attempt", "1"])).stdout).toBe(`acked ${a.id} (attempt 1)\n`);
  expect(await json(["nack", b.id, "--attempt", "1", "--error", "broken", "--permanent"])).toEqual({ id: b.id, attempt: 1, state: "dead" });
  expect((await dl.jobs.get(a.id))!.state).toBe("succeeded");
  expect(await dl.jobs.get(b.id)).toMatchObject({ state: "dead", lastError: "broken" });
  expect((await cli(["claim", "cli-pull"])).stdout).toContain("(no due jobs in cli-pull)");
  await dl.topics.delete("cli-pull", { purge: true });
});

it("flow keys: enqueue --flow-key and --priority, topics set --flow, and flow-keys set, show, list, pause, resume and delete", {
  timeout: 60_000,
}, async () => {
  const topic = await json(["topics", "set", "cli-flow", "--mode", "pull", "--flow", '{"parallelism":1,"priorityStepMs":2000}']);
  expect(topic.settings.flow).toEqual({ parallelism: 1, priorityStepMs: 2_000 });
  expect((await cli(["topics", "show", "cli-flow"])).stdout).toMatch(/^flow\s+per key: parallelism 1, priority step 2s$/m);

  const later = await json(["enqueue", "cli-flow", '"later"', "--flow-key", "tenant A", "--priority", "7", "--delay", "1h"]);
  expect(await dl.jobs.get(later.id)).toMatchObject({ state: "scheduled", flowKey: "tenant A", priority: 7 });
  const shown = await cli(["get", later.id]);
  expect(shown.stdout).toMatch(/^flow key\s+tenant A$/m);
  expect(shown.stdout).toMatch(/^priority\s+7$/m);
  const refused = await cli(["enqueue", "cli-flow", "--priority", "10"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("a whole number from 0 to 9");

  const set = await json(["flow-keys", "set", "cli-flow", "tenant A", "--rate-per-sec", "2.5", "--burst", "4", "--weight", "3"]);
  expect(set).toEqual({ topic: "cli-flow", key: "tenant A", settings: { ratePerSec: 2.5, burst: 4, weight: 3 }, length: 1 });
  expect(await dl.flowKeys.get("cli-flow", "tenant A")).toEqual(set);
  expect((await json(["jobs", "cli-flow", "--flow-key", "tenant A"])).jobs.map((j: { id: string }) => j.id)).toEqual([later.id]);
  expect((await cli(["jobs", "cli-flow", "--flow-key", "nobody"])).stdout).toContain('(no scheduled jobs of flow key "nobody" in cli-flow)');
  const text = await cli(["flow-keys", "show", "cli-flow", "tenant A"]);
  expect(text.stdout).toMatch(/^rate\s+2\.5\/s, burst 4$/m);
  expect(text.stdout).toMatch(/^parallelism\s+\(the topic's\)$/m);
  expect(text.stdout).toMatch(/^paused\s+no$/m);
  expect(text.stdout).toMatch(/^length\s+1 pending$/m);

  // Pausing keeps the key's other settings and holds its due job back; resuming lets it go.
  const due = await json(["enqueue", "cli-flow", '"now"', "--flow-key", "tenant A"]);
  expect((await json(["flow-keys", "pause", "cli-flow", "tenant A"])).settings).toEqual({ ratePerSec: 2.5, burst: 4, weight: 3, paused: true });
  expect(await dl.jobs.claim("cli-flow")).toEqual([]);
  const table = await cli(["flow-keys", "list", "cli-flow"]);
  expect(table.stdout).toMatch(/^KEY\s+PAUSED\s+RATE\s+PARALLELISM\s+WEIGHT\s+MAX LENGTH\s+LENGTH\n/);
  expect(table.stdout).toMatch(/^tenant A\s+yes\s+2\.5\/s, burst 4\s+-\s+3\s+-\s+2$/m);
  expect((await json(["flow-keys", "resume", "cli-flow", "tenant A"])).settings).toEqual({ ratePerSec: 2.5, burst: 4, weight: 3 });
  expect((await dl.jobs.claim("cli-flow")).map((j) => j.id)).toEqual([due.id]);
  expect((await json(["flow-keys", "list", "cli-flow"])).keys).toEqual([
    { topic: "cli-flow", key: "tenant A", settings: { ratePerSec: 2.5, burst: 4, weight: 3 }, length: 1 },
  ]);
  // Caps on flow keys: the topic's for every key, a key's own over it.
  expect((await json(["topics", "set", "cli-flow", "--max-key-length", "50"])).settings.maxKeyLength).toBe(50);
  expect((await cli(["topics", "show", "cli-flow"])).stdout).toMatch(/^max key length\s+50 pending a flow key, overflow reject$/m);
  expect((await json(["flow-keys", "set", "cli-flow", "capped", "--max-key-length", "5"])).settings).toEqual({ maxKeyLength: 5 });
  expect((await cli(["flow-keys", "show", "cli-flow", "capped"])).stdout).toMatch(/^max length\s+5$/m);

  expect(await cli(["flow-keys", "set", "cli-flow", "tenant A"])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: nothing to set/) });
  expect(await cli(["flow-keys", "delete", "cli-flow", "tenant A"])).toMatchObject({
    code: 0,
    stdout: 'removed the settings of flow key "tenant A" of cli-flow\n',
  });
  // The key keeps its length (its job due in an hour) and takes the topic's settings.
  expect(await dl.flowKeys.get("cli-flow", "tenant A")).toEqual({ topic: "cli-flow", key: "tenant A", settings: {}, length: 1 });
  const gone = await cli(["flow-keys", "show", "cli-flow", "nobody"]);
  expect(gone).toMatchObject({
    code: 1,
    stderr: expect.stringContaining("has no settings of its own (it takes the topic's flow settings) and no pending jobs"),
  });
  expect((await cli(["flow-keys", "delete", "cli-flow", "tenant A"])).code).toBe(1);
});

/** The CLI's commands as commander holds them: every command with no subcommands, by its path ("topics set"). */
function leafCommands(): Array<{ path: string; command: Command }> {
  const program = buildProgram({ env: {}, stdin: async () => "", stdout: () => {}, stderr: () => {} });
  const leaves: Array<{ path: string; command: Command }> = [];
  const walk = (command: Command, path: string[]) => {
    for (const sub of command.commands) {
      // A command with arguments of its own runs by itself too, though it has subcommands (`jobs <topic>` beside `jobs upsert`).
      if (sub.commands.length === 0 || sub.registeredArguments.length > 0) leaves.push({ path: [...path, sub.name()].join(" "), command: sub });
      if (sub.commands.length > 0) walk(sub, [...path, sub.name()]);
    }
  };
  walk(program, []);
  return leaves;
}

/** A command's own options: not the global ones it carries a copy of. */
function ownOptions(command: Command): Option[] {
  return command.options.filter((o) => !(o instanceof GlobalOption));
}

/** An option that takes a URL, by its name, its value's name or its description. */
function takesUrl(option: Option): boolean {
  return (option.required || option.optional) && (/url|uri|target|endpoint|host/i.test(option.flags) || /\bURL\b/.test(option.description));
}

const whsec = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString("base64")}`;

it("topics set sets every topic setting, each read back with topics show and from the API; --clear resets them", { timeout: 90_000 }, async () => {
  const log = requestLog();
  const receiver = await startReceiver([log]);
  try {
    const target = `${receiver.url}/every-option`;
    // Each option of `topics set` (but --clear) with a value not its default, and what the topic then shows.
    const given: Record<string, { args: string[]; shows: Record<string, unknown> }> = {
      url: { args: [target], shows: { url: target } },
      mode: { args: ["pull"], shows: { mode: "pull" } },
      ratePerSec: { args: ["12.5"], shows: { ratePerSec: 12.5 } },
      burst: { args: ["7"], shows: { burst: 7 } },
      concurrency: { args: ["3"], shows: { concurrency: 3 } },
      maxLength: { args: ["500"], shows: { maxLength: 500 } },
      maxKeyLength: { args: ["50"], shows: { maxKeyLength: 50 } },
      overflow: { args: ["dropOldest"], shows: { overflow: "dropOldest" } },
      contentDedupMs: { args: ["60000"], shows: { contentDedupMs: 60_000 } },
      maxLateness: { args: ["2s"], shows: { maxLateness: 2_000 } },
      keepExpired: { args: ["yes"], shows: { keepExpired: true } },
      weight: { args: ["4"], shows: { weight: 4 } },
      maxAttempts: { args: ["9"], shows: { maxAttempts: 9 } },
      timeoutMs: { args: ["4321"], shows: { timeoutMs: 4321 } },
      backoff: { args: ['{"type":"schedule","delays":["10s","1m"]}'], shows: { backoff: { type: "schedule", delays: [10_000, 60_000] } } },
      signatureScheme: { args: ["standard"], shows: { signatureScheme: "standard" } },
      signingSecret: { args: [whsec(1)], shows: { hasSigningSecret: true } },
      previousSigningSecrets: { args: [whsec(2), whsec(3)], shows: { hasPreviousSigningSecrets: true } },
      webhookSecret: { args: ["an-ingest-secret-of-some-length"], shows: { hasWebhookSecret: true } },
      flow: { args: ['{"parallelism":2,"weight":3,"priorityStepMs":5000}'], shows: { flow: { parallelism: 2, weight: 3, priorityStepMs: 5_000 } } },
    };
    const set = leafCommands().find((c) => c.path === "topics set")!.command;
    const options = ownOptions(set).filter((o) => o.long !== "--clear");
    // Every option the command has is given here, and every setting the API takes has an option (paused: topics pause / resume).
    expect(options.map((o) => o.attributeName()).sort()).toEqual(Object.keys(given).sort());
    expect(
      Object.keys(TopicSettingsBody.shape)
        .filter((k) => k !== "paused")
        .sort(),
    ).toEqual(Object.keys(given).sort());

    const args = options.flatMap((o) => [o.long!, ...given[o.attributeName()]!.args]);
    const made = await json(["topics", "set", "cli-every", ...args]);
    const expected = Object.assign({}, ...Object.values(given).map((g) => g.shows)) as Record<string, unknown>;
    expect(made.settings).toMatchObject(expected);
    expect((await json(["topics", "show", "cli-every"])).settings).toMatchObject(expected);
    expect((await dl.topics.get("cli-every")).settings).toMatchObject(expected);
    // The target is a setting, never an address the CLI talks to.
    expect(log.deliveries).toEqual([]);

    // The URL alone is a setting too (it used to be "nothing to set").
    expect((await json(["topics", "set", "cli-url-only", "--url", target])).settings.url).toBe(target);
    // With the Worker's URL and token as flags: before the command, where `topics set` has a --url of its own.
    const before = await cli(["--url", stack.url, "--token", stack.token, "topics", "set", "cli-before", "--url", target, "--json"], {
      DELAYLINE_URL: "",
      DELAYLINE_TOKEN: "",
    });
    expect(before.code, before.stderr).toBe(0);
    expect((await dl.topics.get("cli-before")).settings.url).toBe(target);
    // After a command with no option of that name, the global ones still work.
    const after = await cli(["topics", "list", "--url", stack.url, "--token", stack.token, "--json"], { DELAYLINE_URL: "", DELAYLINE_TOKEN: "" });
    expect(after.code, after.stderr).toBe(0);
    expect(JSON.parse(after.stdout).topics.map((t: { topic: string }) => t.topic)).toContain("cli-before");
    expect(log.deliveries).toEqual([]);

    const cleared = await json(["topics", "set", "cli-every", "--clear", ...Object.keys(given)]);
    expect(cleared.settings).toMatchObject({
      mode: "push",
      overflow: "reject",
      keepExpired: false,
      weight: 1,
      signatureScheme: "delayline",
      hasSigningSecret: false,
      hasPreviousSigningSecrets: false,
    });
    expect(cleared.settings).not.toHaveProperty("maxLength");
    expect(cleared.settings).not.toHaveProperty("contentDedupMs");
    expect(cleared.settings).not.toHaveProperty("maxLateness");
    expect(cleared.settings).not.toHaveProperty("url");
    expect(cleared.settings).not.toHaveProperty("ratePerSec");
    expect(cleared.settings).not.toHaveProperty("flow");
  } finally {
    await receiver.close();
  }
});

it("shards plan --add lists the topics the new shard would take and the pins that keep them where they are", { timeout: 60_000 }, async () => {
  const mine = Array.from({ length: 12 }, (_, i) => `cli-shard-${i}`);
  await dl.jobs.enqueueBatch(mine.map((topic) => ({ topic, delay: "1h" })));
  const plan = await json(["shards", "plan", "--add", "b"]);
  const all: string[] = [];
  for await (const t of dl.topics.all({ limit: 500 })) all.push(t.topic);
  expect(all).toEqual(expect.arrayContaining(mine));
  expect(plan.topics).toBe(all.length);
  const moving = all.filter((t) => placeTopic(t, ["main", "b"]) === "b").sort();
  expect(moving.length).toBeGreaterThan(0);
  expect(plan.moves.map((m: { topic: string }) => m.topic).sort()).toEqual(moving);
  expect(plan.moves.every((m: { from: string; to: string }) => m.from === "main" && m.to === "b")).toBe(true);
  expect(plan.pins).toEqual(Object.fromEntries(moving.map((t) => [t, "main"])));
  // With those pins set, adding the shard moves nothing.
  const again = await cli(["shards", "plan", "--add", "b", "--json"], { DELAYLINE_SHARD_PINS: JSON.stringify(plan.pins) });
  expect(JSON.parse(again.stdout).moves).toEqual([]);
  const text = await cli(["shards", "plan", "--add", "b"]);
  expect(text.stdout).toContain(`DELAYLINE_SHARD_PINS='${JSON.stringify(plan.pins)}'`);
  expect((await cli(["shards", "plan", "--add", "main"])).stderr).toContain("error: shard main is one of the deployment's already");
});

it("the API token reaches no host but the Worker's: every command, with a receiver's URL in every option that takes a URL", { timeout: 300_000 }, async () => {
  const log = requestLog();
  const receiver = await startReceiver([log]);
  try {
    // What a command needs beyond its arguments to get past its own checks, and to enqueue nothing due now
    // (a due job would be delivered to the receiver: a delivery, not the CLI talking to it).
    const extra: Record<string, string[]> = {
      enqueue: ["--delay", "1h"],
      upsert: ["--delay", "1h"],
      "jobs upsert": ["--delay", "1h"],
      // A setting besides the URL: with the URL alone, the old CLI said "nothing to set" and sent nothing.
      "topics set": ["--max-attempts", "5"],
      "flow-keys set": ["--weight", "2"],
      "schedules create": ["--every", "1h", "--start-at", String(Date.now() + 86_400_000)],
      "dead replay": ["--all"],
      "dead purge": ["--all"],
      // An unknown id: the jobs enqueued above stay, so the topic's delete finds it not empty and its URL stays to be read.
      "bulk-cancel": ["cli-leak.01ARZ3NDEKTSV4RRFFQ69G5FAV"],
    };
    const sample = (path: string, name: string) =>
      name === "topic"
        ? "cli-leak"
        : path.startsWith("schedules")
          ? "cli-leak-schedule"
          : /^ids?$/.test(name)
            ? "cli-leak.01ARZ3NDEKTSV4RRFFQ69G5FAV"
            : "cli-leak";
    // Required options that take a number (a pull consumer's attempt and lease).
    const numericSamples: Record<string, string> = { "--attempt": "1", "--lease-ms": "60000" };
    const urlOptions: string[] = [];
    const runs: Array<{ args: string[]; run: Run }> = [];
    for (const { path, command } of leafCommands()) {
      const args = path.split(" ");
      for (const a of command.registeredArguments) if (a.required) args.push(sample(path, a.name()));
      for (const option of ownOptions(command)) {
        if (takesUrl(option)) {
          urlOptions.push(`${path} ${option.long}`);
          args.push(option.long!, `${receiver.url}/${path.replace(" ", "-")}${option.long}`);
        } else if (option.mandatory) args.push(option.long!, numericSamples[option.long!] ?? "cli-leak");
      }
      args.push(...(extra[path] ?? []));
      // A command that keeps running (one that listens) is stopped after 30 s; what it sent until then counts.
      runs.push({ args, run: await cli(args, {}, "", 30_000) });
    }
    // The options that take a URL were found (a new one is by the same rule).
    expect(urlOptions).toEqual(expect.arrayContaining(["enqueue --target", "topics set --url", "schedules create --target"]));
    for (const { args, run } of runs) {
      // Each ran as given: commander took every option, and the CLI had its Worker and token.
      expect(run.stderr, args.join(" ")).not.toMatch(
        /error: (unknown option|missing required|required option|too many arguments|option '|no Worker URL|no API token)/,
      );
    }
    expect(log.deliveries.filter((d) => Object.values(d.headers).some((v) => v.includes(stack.token)))).toEqual([]);
    // Not only no token: no request at all.
    expect(log.deliveries.map((d) => `${d.method} ${d.path}`)).toEqual([]);
    // And the receiver's URL did reach the option it was given to.
    expect((await dl.topics.get("cli-leak")).settings.url).toBe(`${receiver.url}/topics-set--url`);
  } finally {
    await receiver.close();
    await dl.schedules.delete("cli-leak-schedule");
    await dl.topics.delete("cli-leak", { purge: true });
  }
});

it("an answer from something that is not the Worker is an error saying so, not a crash", { timeout: 60_000 }, async () => {
  const json200: ReceiverPart = {
    answer(arrival, res) {
      if (!arrival.url.pathname.startsWith("/json/")) return false;
      res.setHeader("content-type", "application/json");
      res.end("{}");
      return true;
    },
  };
  const elsewhere = await startReceiver([json200]);
  try {
    const env = { DELAYLINE_URL: elsewhere.url, DELAYLINE_TOKEN: "not-the-stack-token" };
    const text = await cli(["topics", "show", "t"], env);
    expect(text.code).toBe(1);
    expect(text.stderr).toBe(
      `error: GET ${elsewhere.url}/v1/topics/t answered "ok", not a JSON object as delayline's API does: is the base URL the Worker's? [Not delayline's API]\n`,
    );
    for (const args of [
      ["topics", "show", "t"],
      ["topics", "set", "t", "--mode", "pull"],
    ]) {
      const r = await cli(args, { ...env, DELAYLINE_URL: `${elsewhere.url}/json` });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: the answer is not one delayline's API gives \(.*backoff.*\): is http:\/\/127\.0\.0\.1:\d+\/json the Worker's URL\?\n$/);
    }
  } finally {
    await elsewhere.close();
  }
});

it("--version and version print the package's version", { timeout: 60_000 }, async () => {
  const { version } = JSON.parse(readFileSync(join(import.meta.dirname, "../../package.json"), "utf8")) as { version: string };
  expect(await cli(["--version"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  expect(await cli(["-V"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  expect(await cli(["version"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  expect(await json(["version"])).toEqual({ version });
});

it("enqueue reads the payload from standard input with --payload-file -, or from a file", { timeout: 60_000 }, async () => {
  const piped = await cli(["enqueue", "cli-stdin", "--payload-file", "-", "--delay", "1h", "--json"], {}, '{"from":"stdin","n":[1,2]}\n');
  expect(piped.code, piped.stderr).toBe(0);
  const { id } = JSON.parse(piped.stdout) as { id: string };
  expect((await dl.jobs.get(id))!.payload).toEqual({ from: "stdin", n: [1, 2] });

  const file = join(mkdtempSync(join(tmpdir(), "delayline-cli-")), "payload.json");
  writeFileSync(file, '"a file"');
  const fromFile = await json(["enqueue", "cli-stdin", "--payload-file", file, "--delay", "1h"]);
  expect((await dl.jobs.get(fromFile.id))!.payload).toBe("a file");

  const notJson = await cli(["enqueue", "cli-stdin", "--payload-file", "-"], {}, "not json");
  expect(notJson.code).toBe(1);
  expect(notJson.stderr).toMatch(/^error: --payload-file: standard input is not JSON \(/);
  const empty = await cli(["enqueue", "cli-stdin", "--payload-file", "-"]);
  expect(empty).toMatchObject({ code: 1, stderr: "error: --payload-file: standard input is empty: give the payload as JSON\n" });
  const both = await cli(["enqueue", "cli-stdin", '"arg"', "--payload-file", "-"], {}, '"stdin"');
  expect(both).toMatchObject({ code: 1, stderr: "error: give the payload as an argument or --payload-file, not both\n" });
  await dl.jobs.cancel(id);
  await dl.jobs.cancel(fromFile.id);
});
