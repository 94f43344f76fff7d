/**
 * One `npm start` per data directory and per PORT: a second start on a
 * directory a running stack holds, or on a PORT something listens on, exits
 * at once and says why, before it starts a redis-server or a Worker; a lock
 * left by a stack that is gone is taken over; a stopped stack frees its
 * directory.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LOCK_FILE } from "../../dev/data-dir-lock.js";
import { freePort } from "../../dev/ports.js";
import { descendantsOf, signalTree } from "../../dev/process-tree.js";
import { startExpectingExit, startNpmStart, type NpmStart } from "../../harness/npm-start.js";

let stack: NpmStart;
/** The pid of a process that has exited: the stale lock the stack found in its directory. */
let stalePid: number;

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "delayline-lock-"));
  stalePid = Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout);
  writeFileSync(join(dataDir, LOCK_FILE), JSON.stringify({ pid: stalePid, port: 1, since: "2026-01-01T00:00:00.000Z" }));
  stack = await startNpmStart({ name: "lock", dataDir });
}, 150_000);

afterAll(async () => {
  await stack?.stop();
});

/** dev/start.ts's pid in the running stack (npm runs it under a shell). */
function stackPid(): number {
  // The deepest match: npm's shell (`sh -c node … dev/start.ts`) names it too.
  const start = descendantsOf(stack.pid)
    .filter((p) => /dev\/start\.ts/.test(p.args))
    .at(-1);
  if (!start) throw new Error(`no dev/start.ts under ${stack.pid}`);
  return start.pid;
}

it("took over the lock of a stack that is gone, and holds the directory with its own pid", () => {
  const lock = JSON.parse(readFileSync(join(stack.dataDir, LOCK_FILE), "utf8")) as { pid: number; port: number; redisPids?: number[] };
  expect(lock.pid).not.toBe(stalePid);
  expect(lock).toMatchObject({ pid: stackPid(), port: stack.port });
  expect(lock.redisPids).toEqual([expect.any(Number)]);
});

it("a second npm start on the same data directory exits at once, naming the directory and the running stack's pid", { timeout: 40_000 }, async () => {
  const { code, output } = await startExpectingExit({
    DELAYLINE_DATA_DIR: stack.dataDir,
    PORT: String(await freePort()),
    REDIS_PORT: "",
    BRIDGE_PORT: "",
  });
  expect(code, output).not.toBe("still running");
  expect(code, output).not.toBe(0);
  expect(output).toContain(`the data directory ${stack.dataDir} is in use by another npm start (pid ${stackPid()}, PORT ${stack.port}`);
  expect(output).not.toMatch(/redis-server on|REST bridge on|\[delayline\] ready/);
  // The running stack still holds the directory and still answers.
  expect(JSON.parse(readFileSync(join(stack.dataDir, LOCK_FILE), "utf8"))).toMatchObject({ pid: stackPid() });
  expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
});

it("a second npm start on a PORT the first one serves says PORT and never prints ready", { timeout: 40_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "delayline-lock-port-"));
  try {
    const { code, output } = await startExpectingExit({ DELAYLINE_DATA_DIR: dataDir, PORT: String(stack.port), REDIS_PORT: "", BRIDGE_PORT: "" });
    expect(code, output).not.toBe("still running");
    expect(code, output).not.toBe(0);
    expect(output).toContain(`PORT ${stack.port} is in use`);
    expect(output).toContain("set PORT=");
    expect(output).not.toMatch(/redis-server on|\[delayline\] ready|--port/);
    // It gave its own directory back on the way out.
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

it("a PORT another server (not a stack) listens on gets the same message", { timeout: 40_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "delayline-lock-busy-"));
  const other: Server = createServer((s) => s.destroy());
  const port = await new Promise<number>((r) => other.listen(0, "127.0.0.1", () => r((other.address() as { port: number }).port)));
  try {
    const { code, output } = await startExpectingExit({ DELAYLINE_DATA_DIR: dataDir, PORT: String(port), REDIS_PORT: "", BRIDGE_PORT: "" });
    expect(code, output).not.toBe("still running");
    expect(code, output).not.toBe(0);
    expect(output).toContain(`PORT ${port} is in use`);
    expect(output).not.toMatch(/\[delayline\] ready/);
  } finally {
    other.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

it("a stopped stack frees its data directory", { timeout: 40_000 }, async () => {
  // stop() removes the directory once the stack is gone; keep a handle on the lock's path before that.
  const lockPath = join(stack.dataDir, LOCK_FILE);
  signalTree(stack.pid, "SIGTERM");
  for (let i = 0; i < 100 && existsSync(lockPath); i++) await new Promise((r) => setTimeout(r, 100));
  expect(existsSync(lockPath)).toBe(false);
  await stack.stop();
});
