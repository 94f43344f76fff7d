/**
 * `delayline listen`, run as a user runs it (`npm run listen` runs the same
 * command from source): its own process on a free loopback port, deliveries
 * POSTed to it as the http handler sends them (signed with the client's
 * signPayload / signStandard), and what it prints and answers; and the
 * README's first job, from `npm start` to the listener.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, expect, it } from "vitest";
import { startNpmStart } from "../../harness/npm-start.js";
import { signPayload, signStandard } from "../../src/client/index.js";

const root = join(import.meta.dirname, "../..");
const SECRET = "listen-test-secret-0123456789";
let running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  running = [];
});

interface Listener {
  url: string;
  child: ChildProcess;
  /** Everything printed on stdout so far. */
  output(): string;
  /** Resolves once stdout holds `text`. */
  printed(text: string): Promise<void>;
  exited: Promise<number | null>;
}

/** Starts `delayline listen --port 0 …` and resolves with the URL it printed. */
async function listen(args: string[], env: Record<string, string> = {}): Promise<Listener> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "listen", "--port", "0", ...args], {
    cwd: root,
    env: { ...process.env, SIGNING_SECRET: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let output = "";
  let stderr = "";
  const waiters: Array<() => void> = [];
  child.stderr!.on("data", (c: Buffer) => (stderr += c));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const firstLine = new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`listen exited (${code}): ${stderr}`)));
  });
  child.stdout!.on("data", (c: Buffer) => {
    output += c;
    for (const w of waiters.splice(0)) w();
  });
  const line = await firstLine;
  const url = /listening on (http:\/\/\S+)|"listening":"(http:\/\/[^"]+)"/.exec(line);
  if (!url) throw new Error(`no URL in ${line}`);
  const printed = async (text: string) => {
    while (!output.includes(text)) await new Promise<void>((r) => waiters.push(r));
  };
  return { url: (url[1] ?? url[2])!, child, output: () => output, printed, exited };
}

/** POSTs `body` with `headers`, as the http handler sends a delivery. */
function deliver(url: string, body: string, headers: Record<string, string>): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", "user-agent": "delayline", ...headers }, body });
}

it("prints each delivery (method, path, delayline's headers, body) and answers 200; with the secret, says whether its signature verifies", async () => {
  const l = await listen(["--secret", SECRET]);
  expect(l.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(l.output()).toContain("signatures checked with the secret given");
  const body = JSON.stringify({ hello: "listener" });
  const job = { "delayline-job-id": "job-listen-1", "delayline-topic": "listen-demo", "delayline-attempt": "1" };

  const good = await deliver(`${l.url}/hooks/demo?x=1`, body, { ...job, "delayline-signature": await signPayload(SECRET, body) });
  expect(good.status).toBe(200);
  await l.printed("verified");
  const bad = await deliver(`${l.url}/hooks/demo`, body, { ...job, "delayline-signature": await signPayload("another-secret-0123456789", body) });
  expect(bad.status).toBe(200);
  await l.printed("NOT verified");
  const standardBody = JSON.stringify({ scheme: "standard" });
  const secret = `whsec_${Buffer.from("0123456789abcdef01234567").toString("base64")}`;
  const t = Math.floor(Date.now() / 1000);
  await deliver(`${l.url}/std`, standardBody, {
    ...job,
    "webhook-id": "job-listen-1",
    "webhook-timestamp": String(t),
    "webhook-signature": await signStandard(secret, "job-listen-1", t, standardBody),
  });
  await l.printed("standard, NOT verified (mismatch)");

  const out = l.output();
  expect(out).toMatch(/ POST \/hooks\/demo\?x=1 {2}→ 200\n/);
  expect(out).toContain("  delayline-job-id: job-listen-1\n");
  expect(out).toContain("  delayline-topic: listen-demo\n");
  expect(out).toContain("  delayline-attempt: 1\n");
  expect(out).toContain('  body: {"hello":"listener"}\n');
  expect(out).toContain("  signature: delayline, verified\n");
  expect(out).toContain("  signature: delayline, NOT verified (mismatch)\n");
  // Headers that are not delayline's own or the body's are left out.
  expect(out).not.toContain("host:");

  l.child.kill("SIGTERM");
  expect(await l.exited).toBe(0);
});

it("without a secret says whether a delivery is signed; --json prints one JSON line per delivery", async () => {
  const l = await listen(["--json"]);
  await deliver(`${l.url}/plain`, "{}", { "delayline-job-id": "job-listen-2", "delayline-topic": "t", "delayline-attempt": "1" });
  await deliver(`${l.url}/signed`, "{}", { "delayline-signature": await signPayload(SECRET, "{}") });
  await l.printed("/signed");
  const lines = l
    .output()
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(lines[0]).toEqual({ listening: l.url });
  expect(lines[1]).toMatchObject({
    method: "POST",
    path: "/plain",
    headers: { "delayline-job-id": "job-listen-2", "delayline-topic": "t", "delayline-attempt": "1" },
    body: "{}",
    signature: "none (unsigned)",
    answered: 200,
  });
  expect(lines[2]).toMatchObject({ path: "/signed", signature: expect.stringMatching(/^delayline, not checked/) });
});

it("--status answers another status; with --fail-attempts only a job's first attempts get it", async () => {
  const l = await listen(["--status", "503", "--fail-attempts", "2"]);
  expect(l.output()).toContain("answering 503 to the first 2 attempt(s), then 200");
  const statuses: number[] = [];
  for (const attempt of ["1", "2", "3"]) {
    const res = await deliver(`${l.url}/retry`, "{}", { "delayline-job-id": "job-listen-3", "delayline-attempt": attempt });
    statuses.push(res.status);
  }
  expect(statuses).toEqual([503, 503, 200]);
  await l.printed("→ 200");
  expect(l.output().match(/POST \/retry {2}→ 503/g)).toHaveLength(2);
});

it("says when its port is taken, and exits 1", async () => {
  const first = await listen([]);
  const port = new URL(first.url).port;
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "listen", "--port", port], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  running.push(child);
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c));
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  expect(code).toBe(1);
  expect(stderr).toContain(`127.0.0.1:${port} is in use: pick another with --port`);
});

it("the README's first job: enqueued against npm start with the listener as its target, its delivery is printed", { timeout: 150_000 }, async () => {
  const stack = await startNpmStart({ name: "listen" });
  try {
    const l = await listen([]);
    // The README's curl, as a request: topic, payload, a short delay, the listener as the target.
    const res = await fetch(`${stack.url}/v1/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/json" },
      body: JSON.stringify({ topic: "listen-first-job", payload: { hi: "there" }, delay: "1s", target: { url: `${l.url}/hooks/hello` } }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    await l.printed(`delayline-job-id: ${id}`);
    await l.printed('body: {"hi":"there"}');
    const out = l.output();
    expect(out).toMatch(/ POST \/hooks\/hello {2}→ 200\n/);
    expect(out).toContain("  delayline-topic: listen-first-job\n");
    expect(out).toContain("  user-agent: delayline\n");
    // The stack names the dashboard and the docs in its banner.
    expect(stack.output()).toContain(`dashboard  ${stack.url}/dashboard`);
    expect(stack.output()).toContain(`docs       ${stack.url}/docs`);
  } finally {
    await stack.stop();
  }
});
