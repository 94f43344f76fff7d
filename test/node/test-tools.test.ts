/**
 * `npm test` on a machine without chromium or promtool: its first step
 * (test/prepare.ts) installs them as root with Debian's apt, or stops at once
 * naming the packages, before the type-check and the long run. The missing
 * tools are simulated (TEST_CHROMIUM / TEST_PROMTOOL naming paths that do not
 * exist, a PATH without apt-get, a recorded apt-get): nothing is uninstalled.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureTestTools, type Machine, testTools } from "../tools.js";

const ROOT = join(import.meta.dirname, "..", "..");
const MISSING = { TEST_CHROMIUM: "/nonexistent/chromium", TEST_PROMTOOL: "/nonexistent/promtool" };

/** A machine where `present` paths exist, apt-get answers `aptStatus` and its calls are recorded. */
function machine(options: { isRoot: boolean; present?: string[]; aptStatus?: (args: string[]) => number; installs?: Record<string, string> }) {
  const present = new Set(options.present ?? []);
  const calls: string[][] = [];
  const m: Machine = {
    exists: (path) => present.has(path),
    isRoot: options.isRoot,
    hasApt: true,
    aptGet: (args) => {
      calls.push(args);
      const status = options.aptStatus?.(args) ?? 0;
      // A successful install puts the package's binary where the tools look.
      const pkg = args.at(-1)!;
      if (status === 0 && args[0] === "install" && options.installs?.[pkg]) present.add(options.installs[pkg]);
      return status;
    },
    log: () => {},
  };
  return { m, calls };
}

describe("npm test's own setup (test/prepare.ts)", () => {
  it("is the first step of npm test, before the type-check", () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts as Record<string, string>;
    expect(scripts.test!.split(" && ")[0]).toBe("node --import tsx test/prepare.ts");
  });

  it("without chromium and promtool and no apt-get to install them, stops at once naming both packages", () => {
    // A PATH with redis-server and without apt-get: not a Debian machine it may install on.
    const bin = mkdtempSync(join(tmpdir(), "delayline-bare-"));
    try {
      symlinkSync(spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" }).stdout.trim(), join(bin, "redis-server"));
      const run = spawnSync(process.execPath, ["--import", "tsx", "test/prepare.ts"], {
        cwd: ROOT,
        env: { ...process.env, ...MISSING, PATH: bin },
        encoding: "utf8",
        // Stopping "at once" is the point: a run that hangs is killed and fails here.
        timeout: 20_000,
      });
      expect(run.status, run.stderr).toBe(1);
      expect(run.stderr).toContain("sudo apt-get install -y chromium\n");
      expect(run.stderr).toContain("sudo apt-get install -y --no-install-recommends prometheus\n");
      expect(run.stderr).toContain("/nonexistent/chromium");
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("not root: installs nothing, throws the apt-get lines of the missing tools only", () => {
    const { chromium, promtool } = testTools(MISSING);
    const { m, calls } = machine({ isRoot: false, present: [chromium.path] });
    expect(() => ensureTestTools([chromium, promtool], m)).toThrow(
      /needs promtool \(\/nonexistent\/promtool\)[^\n]*\n {2}sudo apt-get install -y --no-install-recommends prometheus\n(?!.*chromium\n)/,
    );
    expect(calls).toEqual([]);
  });

  it("as root with apt-get: installs each missing package (promtool's without recommends), no upgrade, then finds them", () => {
    const { chromium, promtool } = testTools(MISSING);
    const { m, calls } = machine({ isRoot: true, installs: { chromium: chromium.path, prometheus: promtool.path } });
    expect(ensureTestTools([chromium, promtool], m).map((t) => t.name)).toEqual(["chromium", "promtool"]);
    expect(calls).toEqual([
      ["install", "-y", "-qq", "--no-upgrade", "chromium"],
      ["install", "-y", "-qq", "--no-upgrade", "--no-install-recommends", "prometheus"],
    ]);
    // Present already: apt-get is not called at all.
    const again = machine({ isRoot: true, present: [chromium.path, promtool.path] });
    expect(ensureTestTools([chromium, promtool], again.m)).toEqual([]);
    expect(again.calls).toEqual([]);
  });

  it("as root on empty package lists: updates them once when the install fails, then installs", () => {
    const { chromium, promtool } = testTools(MISSING);
    let updated = false;
    const { m, calls } = machine({
      isRoot: true,
      aptStatus: (args) => {
        if (args[0] === "update") updated = true;
        return updated ? 0 : 100;
      },
      installs: { chromium: chromium.path, prometheus: promtool.path },
    });
    ensureTestTools([chromium, promtool], m);
    expect(calls.map((a) => `${a[0]} ${a.at(-1)}`)).toEqual(["install chromium", "update -qq", "install chromium", "install prometheus"]);
  });

  it("as root, when apt-get cannot install, says what to install", () => {
    const { chromium } = testTools(MISSING);
    const { m } = machine({ isRoot: true, aptStatus: () => 100 });
    expect(() => ensureTestTools([chromium], m)).toThrow(/apt-get could not install chromium\.\n.*\n {2}sudo apt-get install -y chromium/);
  });
});
