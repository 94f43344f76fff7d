/**
 * What `npm start` gives a Worker beyond serving it, checked on a small
 * Worker of its own (WRANGLER_CONFIG, in a temp dir): `/__scheduled` runs a
 * scheduled event with the cron and time it is given, the Worker's console
 * output reaches npm start's output, its static assets answer through its
 * ASSETS binding, an edit of its source reloads it and an edit that does not
 * build leaves it running.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalStack, type LocalStack } from "../local-stack.js";

const project = mkdtempSync(join(tmpdir(), "delayline-own-worker-"));
const source = join(project, "worker.js");

/** A Worker that answers /healthz (npm start waits for it), says which version it is, remembers its scheduled events and logs a JSON line per request. */
const worker = (version: string) => `
const scheduled = [];
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    console.log(JSON.stringify({ level: "info", msg: "own worker request", path: url.pathname, version: "${version}" }));
    if (url.pathname === "/healthz") return Response.json({ ok: true });
    if (url.pathname === "/scheduled") return Response.json(scheduled);
    if (url.pathname.startsWith("/static/")) return env.ASSETS.fetch(request);
    return new Response("${version}");
  },
  async scheduled(controller) {
    scheduled.push({ cron: controller.cron, scheduledTime: controller.scheduledTime });
  },
};
`;

let stack: LocalStack;

beforeAll(async () => {
  writeFileSync(source, worker("v1"));
  mkdirSync(join(project, "public/static"), { recursive: true });
  writeFileSync(join(project, "public/static/hello.txt"), "hello from the assets\n");
  writeFileSync(
    join(project, "wrangler.toml"),
    `name = "own-worker"\nmain = "worker.js"\ncompatibility_date = "2026-04-20"\n\n[assets]\ndirectory = "./public"\nbinding = "ASSETS"\n`,
  );
  stack = await startLocalStack({ WRANGLER_CONFIG: join(project, "wrangler.toml"), WRANGLER_LOG_LEVEL: "log" });
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(project, { recursive: true, force: true });
});

async function text(path: string): Promise<string> {
  return (await fetch(`${stack.url}${path}`)).text();
}

it("/__scheduled runs a scheduled event with the cron and time it is given; the cron driver fired one at start", async () => {
  const res = await fetch(`${stack.url}/__scheduled?cron=${encodeURIComponent("5 4 * * *")}&time=1700000000000`);
  expect(res.status).toBe(200);
  expect(await res.text()).toBe("Ran scheduled event");
  const events = async () => JSON.parse(await text("/scheduled")) as Array<{ cron: string; scheduledTime: number }>;
  expect(await events()).toContainEqual({ cron: "5 4 * * *", scheduledTime: 1700000000000 });
  // npm start is healthy a moment before its cron driver's first call lands.
  for (let i = 0; i < 40 && !(await events()).some((e) => e.cron === "* * * * *"); i++) await new Promise((r) => setTimeout(r, 250));
  expect((await events()).some((e) => e.cron === "* * * * *")).toBe(true);
});

it("prints the Worker's console output and serves its static assets through ASSETS", async () => {
  expect(await text("/static/hello.txt")).toBe("hello from the assets\n");
  expect(await text("/anything")).toBe("v1");
  // The line travels workerd → npm start → this process's pipe after the answer: wait for it rather than race it.
  const line = '{"level":"info","msg":"own worker request","path":"/anything","version":"v1"}';
  for (let i = 0; i < 100 && !stack.output().includes(line); i++) await new Promise((r) => setTimeout(r, 100));
  expect(stack.output()).toContain(line);
});

it("reloads the Worker when its source changes, and keeps it when an edit does not build", { timeout: 90_000 }, async () => {
  const answers = async (want: string) => {
    for (let i = 0; i < 240; i++) {
      if ((await text("/anything").catch(() => "")) === want) return true;
      await new Promise((r) => setTimeout(r, 250));
    }
    return false;
  };
  writeFileSync(source, worker("v2"));
  expect(await answers("v2"), stack.output()).toBe(true);

  writeFileSync(source, `${worker("v3")}\nthis is not JavaScript (\n`);
  for (let i = 0; i < 240 && !/bundling the Worker failed/.test(stack.output()); i++) await new Promise((r) => setTimeout(r, 250));
  expect(stack.output()).toMatch(/bundling the Worker failed/);
  expect(await text("/anything")).toBe("v2");
});
