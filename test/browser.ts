import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page, type Request } from "playwright-core";
import { installHelp, testTools } from "./tools.js";

const CHROMIUM = testTools().chromium;

/** Debian's chromium, headless, with no network of its own: only the pages a test opens (a fresh profile each launch). */
export async function launchChromium(): Promise<Browser> {
  // npm test installs it first (test/prepare.ts); a file run alone says what to install.
  if (!existsSync(CHROMIUM.path)) throw new Error(installHelp([CHROMIUM]));
  return chromium.launch({
    executablePath: CHROMIUM.path,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** Where browser tests leave screenshots. */
export function artifactDir(): string {
  const dir = join(import.meta.dirname, "..", "test-results");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Requests a page made to one path so far: started, ended (finished or failed), and the most in flight at once. */
export interface PathRequests {
  readonly started: number;
  readonly ended: number;
  readonly mostInFlight: number;
}

/** Counts, from now on, the requests `page` makes whose URL path is `pathname` (e.g. the dashboard's `/v1/stats` polls). */
export function countRequests(page: Page, pathname: string): PathRequests {
  const counts = { started: 0, ended: 0, mostInFlight: 0 };
  const matches = (r: Request) => new URL(r.url()).pathname === pathname;
  page.on("request", (r) => {
    if (!matches(r)) return;
    counts.started++;
    counts.mostInFlight = Math.max(counts.mostInFlight, counts.started - counts.ended);
  });
  const ended = (r: Request) => {
    if (matches(r)) counts.ended++;
  };
  page.on("requestfinished", ended);
  page.on("requestfailed", ended);
  return counts;
}
