// The package.json `npm pack` / `npm publish` ship: the repository's, without
// its scripts (dev tasks over files the package does not ship; a `prepare`
// npm warns about) and devDependencies. npm packs the package.json on disk, so
//   prepack:  `strip`   keeps the repository's manifest byte for byte in
//             .package.json.packing, writes the shipped one, and leaves a
//             watcher that puts the repository's back once npm exits
//             (postpack does not run when packing fails);
//   postpack: `restore` puts it back at once.
// A `strip` that finds a copy kept by a pack that never restored puts that
// one back first, so scripts are never lost to a stripped manifest.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = join(root, "package.json");
const kept = join(root, ".package.json.packing");
/** Fields of the repository's manifest the shipped one leaves out. */
const DEV_ONLY = ["scripts", "devDependencies"];

/** Puts the kept manifest back, if there is one and (given `owner`) that pack kept it. */
function restore(owner) {
  if (!existsSync(kept)) return false;
  const copy = JSON.parse(readFileSync(kept, "utf8"));
  if (owner !== undefined && copy.owner !== owner) return false;
  writeFileSync(manifest, copy.manifest);
  rmSync(kept);
  return true;
}

/** The command line of a process, or null when it is gone or unreadable. */
function commandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return null;
  }
}

/** The parent of a process (Linux's /proc), or null. */
function parentOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

/** The npm process running this lifecycle script: the nearest ancestor that is npm itself (not the shell running the script). */
function npmProcess() {
  for (let pid = process.ppid; pid && pid > 1; pid = parentOf(pid)) {
    const args = commandLine(pid);
    if (!args) return null;
    if (/^npm\b/.test(basename(args[0] ?? "")) || /npm-cli\.js$/.test(args[1] ?? "")) return pid;
  }
  return null;
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

const [command, arg] = process.argv.slice(2);
if (command === "strip") {
  if (restore()) console.error("pack-manifest: put back the repository's package.json an earlier pack left stripped");
  const text = readFileSync(manifest, "utf8");
  const pkg = JSON.parse(text);
  for (const field of DEV_ONLY) delete pkg[field];
  const owner = npmProcess() ?? process.pid;
  writeFileSync(kept, JSON.stringify({ owner, manifest: text }));
  writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`);
  if (owner !== process.pid) {
    spawn(process.execPath, [fileURLToPath(import.meta.url), "watch", String(owner)], { detached: true, stdio: "ignore" }).unref();
  } else {
    console.error("pack-manifest: npm's process not found (no /proc): only postpack puts package.json back");
  }
} else if (command === "restore") {
  restore();
} else if (command === "watch") {
  // Until npm exits (at most an hour), then put back what its pack kept, unless postpack did.
  const owner = Number(arg);
  const until = Date.now() + 3_600_000;
  const timer = setInterval(() => {
    if (isAlive(owner) && Date.now() < until && existsSync(kept)) return;
    clearInterval(timer);
    restore(owner);
  }, 100);
} else {
  console.error("usage: node scripts/pack-manifest.mjs strip | restore");
  process.exit(2);
}
