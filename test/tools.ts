import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/**
 * The programs the tests run besides Node and redis-server (which
 * dev/redis-launcher.ts sees to), each with the Debian package that installs
 * it. `npm test` checks them first (test/prepare.ts), so a machine without
 * one stops in seconds rather than after the whole run.
 */
export interface TestTool {
  /** What the tests call it. */
  name: string;
  /** Where the tests look for it: Debian's path, or the override in `env`. */
  path: string;
  /** The Debian package that installs it. */
  debianPackage: string;
  /** Install without the package's recommends (promtool needs none of prometheus' exporters and web assets). */
  noRecommends: boolean;
}

/**
 * The tools, at Debian's paths unless `TEST_CHROMIUM` / `TEST_PROMTOOL` name
 * others (a machine with them elsewhere, or a test that wants them missing).
 */
export function testTools(env: NodeJS.ProcessEnv = process.env): { chromium: TestTool; promtool: TestTool } {
  return {
    chromium: { name: "chromium", path: env.TEST_CHROMIUM || "/usr/bin/chromium", debianPackage: "chromium", noRecommends: false },
    promtool: { name: "promtool", path: env.TEST_PROMTOOL || "/usr/bin/promtool", debianPackage: "prometheus", noRecommends: true },
  };
}

/** The apt-get arguments that install `tool`'s package; `--no-upgrade` leaves an installed one as it is. */
function aptInstallArgs(tool: TestTool): string[] {
  return ["install", "-y", "-qq", "--no-upgrade", ...(tool.noRecommends ? ["--no-install-recommends"] : []), tool.debianPackage];
}

/** What to run to get the missing tools, one line each. */
export function installHelp(missing: readonly TestTool[]): string {
  return [
    `npm test needs ${missing.map((t) => `${t.name} (${t.path})`).join(" and ")}, which this machine does not have. Install:`,
    ...missing.map((t) => `  sudo apt-get install -y ${t.noRecommends ? "--no-install-recommends " : ""}${t.debianPackage}`),
    "or name where they are: TEST_CHROMIUM=/path/to/chromium TEST_PROMTOOL=/path/to/promtool npm test",
  ].join("\n");
}

/** What ensureTestTools asks of the machine; tests replace it. */
export interface Machine {
  exists(path: string): boolean;
  isRoot: boolean;
  hasApt: boolean;
  /** Runs apt-get with these arguments; its exit status. */
  aptGet(args: string[]): number | null;
  log(line: string): void;
}

/** This machine: root when uid 0, Debian's apt when apt-get runs. */
function thisMachine(): Machine {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  return {
    exists: existsSync,
    isRoot: typeof process.getuid === "function" && process.getuid() === 0,
    hasApt: spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0,
    aptGet: (args) => spawnSync("apt-get", args, { stdio: "inherit", env }).status,
    log: (line) => console.log(line),
  };
}

/**
 * Makes sure every tool exists: as root with apt-get it installs the missing
 * ones' packages (from the package lists as they are, and after `apt-get
 * update` only when that fails, as on a fresh image with empty lists);
 * otherwise it throws what to install. Returns the tools it installed.
 */
export function ensureTestTools(tools: readonly TestTool[], machine: Machine = thisMachine()): TestTool[] {
  const missing = tools.filter((t) => !machine.exists(t.path));
  if (missing.length === 0) return [];
  if (!machine.isRoot || !machine.hasApt) throw new Error(installHelp(missing));
  let updated = false;
  for (const tool of missing) {
    machine.log(`${tool.name} is missing (${tool.path}); installing Debian's ${tool.debianPackage} package (apt-get)…`);
    let status = machine.aptGet(aptInstallArgs(tool));
    if (status !== 0 && !updated) {
      updated = true;
      if (machine.aptGet(["update", "-qq"]) === 0) status = machine.aptGet(aptInstallArgs(tool));
    }
    if (status !== 0) throw new Error(`apt-get could not install ${tool.debianPackage}.\n${installHelp(missing)}`);
  }
  const still = missing.filter((t) => !machine.exists(t.path));
  if (still.length > 0) throw new Error(`apt-get installed ${still.map((t) => t.debianPackage).join(", ")}, yet it is not there.\n${installHelp(still)}`);
  return missing;
}
