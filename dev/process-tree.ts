import { spawnSync } from "node:child_process";

/** Every live descendant of `root` (children, their children, …), read from `ps`. */
export function descendantsOf(root: number): Array<{ pid: number; args: string }> {
  const ps = spawnSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" });
  const rows = ps.stdout
    .split("\n")
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }));
  const found: Array<{ pid: number; args: string }> = [];
  const walk = (pid: number) => {
    for (const r of rows) {
      if (r.ppid !== pid) continue;
      found.push({ pid: r.pid, args: r.args });
      walk(r.pid);
    }
  };
  walk(root);
  return found;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Signals `root` and every descendant (read before signalling, so orphans are not missed). */
export function signalTree(root: number, signal: NodeJS.Signals): void {
  for (const pid of [root, ...descendantsOf(root).map((p) => p.pid)]) {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}
