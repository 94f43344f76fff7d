/**
 * The `delayline` CLI against the whole local stack as `npm start` runs it
 * (redis-server, the bridge, the Worker in workerd, the cron driver), run
 * as an operator would: its own process, DELAYLINE_URL and DELAYLINE_TOKEN
 * in the environment, tables on stdout, JSON with --json, the problem's
 * detail on stderr and a non-zero exit on errors.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Delayline } from "../../src/client/index.js";
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

/** Runs the CLI from source, as `npm run cli -- …` does, with the stack's URL and token in its environment. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", ...args],
      { cwd: join(import.meta.dirname, "../.."), env: { ...process.env, DELAYLINE_URL: stack.url, DELAYLINE_TOKEN: stack.token, ...env } },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
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
  expect((await dl.listJobs("cli-mail")).jobs.map((j) => j.id)).toEqual([made.id]);

  const table = await cli(["jobs", "cli-mail"]);
  expect(table.code).toBe(0);
  const [header, row, ...rest] = table.stdout.trim().split("\n");
  expect(header).toMatch(/^ID\s+STATE\s+DUE\s+ATTEMPTS\s+LAST ERROR$/);
  expect(row).toMatch(new RegExp(`^${made.id.replace(".", "\\.")}\\s+scheduled\\s+\\S+\\s+0\\s+-$`));
  expect(rest).toEqual([]);

  const cancelled = await cli(["cancel", made.id]);
  expect(cancelled).toMatchObject({ code: 0, stdout: `cancelled ${made.id}\n` });
  expect((await dl.get(made.id))!.state).toBe("cancelled");
  expect(await cli(["jobs", "cli-mail"])).toMatchObject({ code: 0, stdout: "(no scheduled jobs in cli-mail)\n" });
});

it("lists a dead letter and replays it: the job is scheduled again with fresh attempts", { timeout: 60_000 }, async () => {
  // A pull topic with one attempt: a consumer's nack makes the job a dead letter at once.
  const topic = await json(["topics", "set", "cli-work", "--mode", "pull", "--max-attempts", "1"]);
  expect(topic.settings).toMatchObject({ mode: "pull", maxAttempts: 1 });
  const made = await json(["enqueue", "cli-work", '"payload"']);
  const [claimed] = await dl.claim("cli-work");
  expect(claimed!.id).toBe(made.id);
  expect(await dl.nack(made.id, 1, { error: "boom from the consumer" })).toBe("dead");

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

it("status shows health, the tick's heartbeat and each topic's backlog", { timeout: 60_000 }, async () => {
  await json(["enqueue", "cli-status", "--delay", "1h"]);
  // The cron driver's first tick may not have run yet when the stack answers.
  for (let i = 0; i < 120 && (await dl.health()).lastTickAt === null; i++) await new Promise((r) => setTimeout(r, 250));
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
