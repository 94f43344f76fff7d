import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** Debian's chromium, headless, with no network of its own: only the pages a test opens (a fresh profile each launch). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); .ci/run does this itself`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
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
