/**
 * One `npm start` per data directory. Two stacks on one directory would run
 * two redis-servers appending to one append-only file (and replay both
 * stacks' jobs into one after a restart), so `npm start` takes a lock file in
 * the directory before it starts anything and gives it up when it exits.
 *
 * The lock file is created with `wx` (O_CREAT | O_EXCL): of two starts at
 * once, exactly one creates it. It holds the pids of the stack (dev/start.ts
 * and, once they run, its redis-servers: one per local shard). A lock whose pids are all gone — the
 * stack was killed with SIGKILL, the machine rebooted — is stale and is taken
 * over; a pid that is alive but runs something else (reused after a reboot)
 * does not count as the stack.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isAlive } from "./process-tree.js";

/** The lock file's name inside the data directory. */
export const LOCK_FILE = "npm-start.lock";

/** What the lock file holds. */
interface LockContent {
  /** dev/start.ts's pid: the stack to stop. */
  pid: number;
  /** The Worker's port, to say where the running stack answers. */
  port: number;
  /** The stack's redis-servers (one per local shard), which would outlive a SIGKILLed dev/start.ts. */
  redisPids?: number[];
  /** What a lock of an npm start from before local shards holds instead of `redisPids`. */
  redisPid?: number;
  since: string;
}

/** The lock a running `npm start` holds; `release` is idempotent. */
export interface DataDirLock {
  path: string;
  /** Records one of the stack's redis-servers, so a start after a SIGKILL sees it still running on the directory. */
  recordRedis(pid: number): void;
  release(): void;
}

/** A lock file that is being written right now is empty for a moment: only an empty file older than this is stale. */
const EMPTY_GRACE_MS = 10_000;

/** Whether `pid` is alive and its command line still looks like `pattern` (ps may be missing: then alive is enough). */
function runs(pid: number, pattern: RegExp): boolean {
  if (!isAlive(pid)) return false;
  const ps = spawnSync("ps", ["-o", "args=", "-p", String(pid)], { encoding: "utf8" });
  if (ps.error || ps.status === null) return true;
  return pattern.test(ps.stdout);
}

function read(path: string): LockContent | "empty" | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as LockContent;
    return typeof parsed.pid === "number" ? parsed : "empty";
  } catch {
    return "empty";
  }
}

/**
 * Takes the data directory's lock for this process, or throws, naming the
 * directory and the pid of the stack that holds it. Creates the directory.
 */
export function lockDataDir(dataDir: string, port: number): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  const mine: LockContent = { pid: process.pid, port, since: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(mine), { flag: "wx" });
      return held(path, mine);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const other = read(path);
    if (other === undefined) continue; // removed meanwhile: try again
    if (other === "empty") {
      let age = Number.POSITIVE_INFINITY;
      try {
        age = Date.now() - statSync(path).mtimeMs;
      } catch {
        continue;
      }
      if (age < EMPTY_GRACE_MS) throw new Error(`the data directory ${dataDir} is being locked by another npm start right now`);
    } else if (runs(other.pid, /start\.ts/)) {
      throw new Error(
        `the data directory ${dataDir} is in use by another npm start (pid ${other.pid}, PORT ${other.port}, since ${other.since}): stop that one (kill ${other.pid}), or give this one a directory of its own with DELAYLINE_DATA_DIR=…`,
      );
    } else {
      const live = [...(other.redisPids ?? []), ...(other.redisPid === undefined ? [] : [other.redisPid])].filter((pid) => runs(pid, /redis-server/));
      if (live.length > 0) {
        throw new Error(
          `the data directory ${dataDir} is still used by the redis-server${live.length > 1 ? "s" : ""} (pid ${live.join(", ")}) of an npm start that is gone (pid ${other.pid}): stop ${live.length > 1 ? "them" : "it"} (kill ${live.join(" ")}) before starting another`,
        );
      }
    }
    // Stale: its stack is gone. Remove it and take it with wx again (a start racing us for it may win).
    try {
      unlinkSync(path);
    } catch {
      /* the other start removed it first */
    }
  }
  throw new Error(`could not lock the data directory ${dataDir} (${path}): another npm start keeps taking it`);
}

function held(path: string, mine: LockContent): DataDirLock {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off("exit", release);
    // Only our own lock: never one a later start took after ours was judged stale.
    const current = read(path);
    if (current !== undefined && current !== "empty" && current.pid !== mine.pid) return;
    try {
      unlinkSync(path);
    } catch {
      /* already gone */
    }
  };
  // process.exit() (every way npm start stops, signals included) and an uncaught error both run "exit" handlers.
  process.on("exit", release);
  return {
    path,
    recordRedis(pid) {
      if (released) return;
      mine.redisPids = [...(mine.redisPids ?? []), pid];
      writeFileSync(path, JSON.stringify(mine));
    },
    release,
  };
}
