/**
 * `npm start` brings the whole stack up and SIGTERM takes all of it down.
 * Runs the real command in its own process group on free ports, with its data
 * in a temp dir.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../../dev/ports.js";
import { descendantsOf, isAlive, signalTree } from "../../dev/process-tree.js";
import { startExpectingExit } from "../../harness/npm-start.js";
import { Delayline } from "../../src/client/index.js";
import { artifactDir, launchChromium } from "../browser.js";

const dataDir = mkdtempSync(join(tmpdir(), "delayline-start-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function groupMembers(pgid: number): string[] {
  const ps = spawnSync("ps", ["-eo", "pgid=,pid=,args="], { encoding: "utf8" });
  return ps.stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && Number(l.split(/\s+/)[0]) === pgid);
}

function processesUsing(dir: string): string[] {
  const ps = spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return ps.stdout.split("\n").filter((l) => l.includes(dir));
}

it("answers /healthz within 60 s and leaves nothing running after SIGTERM", { timeout: 120_000 }, async () => {
  const port = await freePort();
  const child = spawn("npm", ["start"], {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, PORT: String(port), DELAYLINE_DATA_DIR: dataDir, DELAYLINE_TOKEN: "start-test-token" },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let stack: Array<{ pid: number; args: string }> = [];
  child.stdout!.on("data", (c: Buffer) => (output += c));
  child.stderr!.on("data", (c: Buffer) => (output += c));
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));

  try {
    const started = Date.now();
    let health: { ok?: boolean; redis?: string } = {};
    while (Date.now() - started < 60_000 && health.ok !== true) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) });
        health = (await res.json()) as typeof health;
      } catch {
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    expect(health, output).toMatchObject({ ok: true, redis: "up" });
    // The banner follows the first healthy answer.
    for (let i = 0; i < 40 && !output.includes("start-test-token"); i++) await new Promise((r) => setTimeout(r, 250));
    // While running, the stack's processes are in the group: redis-server, workerd.
    const running = groupMembers(child.pid!).join("\n");
    expect(running).toMatch(/redis-server/);
    expect(processesUsing(dataDir).join("\n")).toMatch(/dev\/worker-host\.ts/);
    expect(output).toContain("start-test-token");
    // The typed client, from Node, against the Worker running in workerd.
    const dl = new Delayline({ baseUrl: `http://127.0.0.1:${port}`, token: "start-test-token" });
    const job = await dl.jobs.enqueue({ topic: "smoke", payload: { from: "node" }, delay: "1h" });
    expect(await dl.jobs.get(job.id)).toMatchObject({ state: "scheduled", payload: { from: "node" } });
    // The API reference renders in a real browser, offline: every file comes from the Worker.
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      page.on("requestfailed", (r) => problems.push(`failed: ${r.url()}`));
      page.on("request", (r) => !r.url().startsWith(`http://127.0.0.1:${port}/`) && problems.push(`off-site: ${r.url()}`));
      await page.goto(`http://127.0.0.1:${port}/docs`);
      await page.locator(".swagger-ui .info .title").filter({ hasText: "delayline" }).waitFor({ timeout: 20_000 });
      await page.locator(".opblock-summary-path", { hasText: "/v1/jobs/batch" }).first().waitFor();
      expect(await page.locator(".opblock").count()).toBeGreaterThanOrEqual(18);
      await page.screenshot({ path: join(artifactDir(), "docs.png"), fullPage: false });
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
    const spawned = descendantsOf(child.pid!);
    expect(spawned.some((p) => /workerd/.test(p.args))).toBe(true);
    expect(spawned.some((p) => /redis-server/.test(p.args))).toBe(true);
    stack = spawned;

    process.kill(child.pid!, "SIGTERM");
    // npm re-raises the signal it was stopped by once its script has exited.
    const { code, signal } = await exited;
    expect(code === 0 || signal === "SIGTERM", output).toBe(true);
  } finally {
    // Whatever happened, leave nothing behind: a clean stop first, then force.
    if (child.exitCode === null && child.signalCode === null) {
      const tree = descendantsOf(child.pid!);
      signalTree(child.pid!, "SIGTERM");
      for (let i = 0; i < 100 && tree.some((p) => isAlive(p.pid)); i++) await new Promise((r) => setTimeout(r, 100));
      for (const p of tree.filter((p) => isAlive(p.pid))) process.kill(p.pid, "SIGKILL");
    }
  }

  // Bounded wait: children get a moment to finish exiting after npm does.
  let left: string[] = [];
  for (let i = 0; i < 40; i++) {
    left = [...groupMembers(child.pid!), ...processesUsing(dataDir), ...stack.filter((p) => isAlive(p.pid)).map((p) => `${p.pid} ${p.args}`)];
    if (left.length === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(left, output).toEqual([]);
  expect(output).toMatch(/SIGTERM: stopping|parent process exited: stopping/);
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
});

it("exits at once, starting nothing, when a setting breaks its rule, naming each bad setting and its rule", { timeout: 30_000 }, async () => {
  // whsec_test123 is 13 characters (the minimum is 16); 5 ms is below TICK_POLL_MS's 50.
  // The old behaviour waited 60 s for /healthz; well short of that, the test stops waiting and cleans up.
  const { code, output } = await startExpectingExit({
    PORT: String(await freePort()),
    DELAYLINE_DATA_DIR: dataDir,
    SIGNING_SECRET: "whsec_test123",
    TICK_POLL_MS: "5",
  });
  expect(code, output).not.toBe("still running");
  expect(code, output).not.toBe(0);
  expect(output).toMatch(/SIGNING_SECRET must be at least 16 characters/);
  expect(output).toMatch(/TICK_POLL_MS must be a whole number from 50 to 60000/);
  // The secret itself is never printed.
  expect(output).not.toContain("whsec_test123");
  expect(output).not.toMatch(/redis-server on|REST bridge on/);
});
