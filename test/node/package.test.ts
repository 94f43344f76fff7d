/**
 * delayline as a user installs it: `npm pack`, the tarball installed into a
 * fresh project outside the repository, and there
 *  - a plain `node` ESM script (no tsx, no bundler) that imports
 *    `delayline/client` round-trips enqueue → get → cancel against `npm start`,
 *    and the package's `delayline` bin reads the job back;
 *  - a Worker of the user's own, importing `delayline` by its package name with
 *    a handler of its own and mounting the API in its own hono app, type-checks
 *    with `satisfies ExportedHandler<Env>` and runs in workerd under `npm start`
 *    (WRANGLER_CONFIG), where a job enqueued through its API runs that handler.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalStack, type LocalStack } from "../local-stack.js";
import { startReceiver, type Delivery } from "../receiver.js";

const root = join(import.meta.dirname, "../..");
const work = mkdtempSync(join(tmpdir(), "delayline-package-"));
const project = join(work, "my-worker");
const require = createRequire(import.meta.url);
const ours = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
  files: string[];
};
// Where the package is packed: a copy of what it ships beside the repository's manifest (see beforeAll).
const stage = join(work, "stage");
const BUILD_STEP = "npm run build:package && ";
// The versions this repository pins: what its npm ci put in npm's cache.
const versionOf = (name: string) => ours.dependencies[name] ?? ours.devDependencies[name]!;

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(command, args, { cwd, encoding: "utf8", env: { ...process.env, ...env }, timeout: 240_000 });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const stacks: LocalStack[] = [];
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;

beforeAll(async () => {
  // The package's JavaScript, then the tarball as `npm pack` makes it. public/
  // is already built (npm ci's prepare, npm test's typecheck); rebuilding it
  // here would rewrite pages other tests are serving meanwhile.
  run(process.execPath, ["scripts/build-package.mjs"], root);
  // `npm pack` with its lifecycle scripts (prepack strips the manifest, postpack puts it back), run on a copy of
  // what the package ships with the repository's manifest, so the repository's package.json is never rewritten
  // while other tests read it (npm start). Its prepack is the repository's but the build, done just above.
  mkdirSync(join(stage, "scripts"), { recursive: true });
  for (const f of [...ours.files, "README.md", "LICENSE"]) cpSync(join(root, f), join(stage, f), { recursive: true });
  cpSync(join(root, "scripts/pack-manifest.mjs"), join(stage, "scripts/pack-manifest.mjs"));
  expect(ours.scripts).toMatchObject({ prepack: `${BUILD_STEP}node scripts/pack-manifest.mjs strip`, postpack: "node scripts/pack-manifest.mjs restore" });
  const staged = { ...ours, scripts: { ...ours.scripts, prepack: ours.scripts.prepack!.slice(BUILD_STEP.length) } };
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(staged, null, 2)}\n`);
  run("npm", ["pack", "--pack-destination", work], stage);
  const tarball = join(work, readdirSync(work).find((f) => f.endsWith(".tgz"))!);

  mkdirSync(join(project, "src"), { recursive: true });
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({
      name: "my-worker",
      private: true,
      type: "module",
      dependencies: { delayline: `file:${tarball}`, hono: versionOf("hono") },
      devDependencies: { "@cloudflare/workers-types": versionOf("@cloudflare/workers-types") },
    }),
  );
  // From npm's cache where it can: everything here was installed by the repository's own npm ci.
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], project);
}, 300_000);

afterAll(async () => {
  await Promise.all(stacks.map((s) => s.stop()));
  await receiver?.close();
  rmSync(work, { recursive: true, force: true });
});

it("installs with JavaScript and type declarations only: no TypeScript sources, no tsx", () => {
  const installed = join(project, "node_modules/delayline");
  const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { exports: Record<string, unknown> };
  expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining([".", "./client"]));
  const files = (readdirSync(installed, { recursive: true }) as string[]).filter((f) => !f.startsWith("node_modules"));
  expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
  expect(files).toEqual(
    expect.arrayContaining(["dist/index.js", "dist/client/index.js", "dist/client/index.d.ts", "public/dashboard/index.html", "wrangler.example.toml"]),
  );
});

it("the packed package.json has no scripts and no devDependencies; packing leaves the manifest it packed as it was, also when npm fails", {
  timeout: 120_000,
}, async () => {
  const tarball = join(work, readdirSync(work).find((f) => f.endsWith(".tgz"))!);
  const packed = JSON.parse(run("tar", ["-xzOf", tarball, "package/package.json"], work)) as Record<string, unknown>;
  expect(packed).not.toHaveProperty("scripts");
  expect(packed).not.toHaveProperty("devDependencies");
  expect(packed).toMatchObject({ name: "delayline", version: expect.any(String), bin: { delayline: "dist/cli/main.js" }, dependencies: ours.dependencies });
  const before = readFileSync(join(stage, "package.json"), "utf8");
  expect(JSON.parse(before).scripts).toMatchObject({ prepare: expect.any(String), test: expect.any(String), start: expect.any(String) });
  expect(existsSync(join(stage, ".package.json.packing"))).toBe(false);

  // A pack that fails after prepack (nowhere to write the tarball): postpack never runs, and the watcher prepack
  // left puts the manifest back once npm has exited.
  const failed = spawnSync("npm", ["pack", "--pack-destination", join(work, "no-such-dir")], { cwd: stage, encoding: "utf8" });
  expect(failed.status).not.toBe(0);
  for (let i = 0; i < 100 && existsSync(join(stage, ".package.json.packing")); i++) await new Promise((r) => setTimeout(r, 100));
  expect(readFileSync(join(stage, "package.json"), "utf8")).toBe(before);
  expect(existsSync(join(stage, ".package.json.packing"))).toBe(false);
});

it("delayline/client works from a plain node ESM script against npm start", { timeout: 180_000 }, async () => {
  const stack = await startLocalStack();
  stacks.push(stack);
  writeFileSync(
    join(project, "round-trip.mjs"),
    `import { Delayline } from "delayline/client";
const dl = new Delayline({ baseUrl: process.env.DELAYLINE_URL, token: process.env.DELAYLINE_TOKEN });
const { id } = await dl.jobs.enqueue({ topic: "from-node", payload: { hello: "node" }, delay: "1h" });
const got = await dl.jobs.get(id);
await dl.jobs.cancel(id);
const after = await dl.jobs.get(id);
console.log(JSON.stringify({ id, state: got?.state, payload: got?.payload, after: after?.state }));
`,
  );
  const out = JSON.parse(run(process.execPath, ["round-trip.mjs"], project, { DELAYLINE_URL: stack.url, DELAYLINE_TOKEN: stack.token }).trim()) as Record<
    string,
    unknown
  >;
  expect(out).toEqual({ id: expect.any(String), state: "scheduled", payload: { hello: "node" }, after: "cancelled" });

  // The package's bin, as `npx delayline` runs it.
  const job = JSON.parse(
    run("npx", ["--no-install", "delayline", "get", out.id as string, "--json"], project, { DELAYLINE_URL: stack.url, DELAYLINE_TOKEN: stack.token }),
  ) as { state: string };
  expect(job.state).toBe("cancelled");
  // Its version is the package's, read from the installed package.json.
  expect(run("npx", ["--no-install", "delayline", "--version"], project).trim()).toBe(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
});

it("a Worker of the user's own imports delayline by name, type-checks, and runs its handler in workerd", { timeout: 240_000 }, async () => {
  receiver = await startReceiver();
  writeFileSync(
    join(project, "src/worker.ts"),
    `import { Hono } from "hono";
import { delayline, RetryableError, type Env } from "delayline";

const dl = delayline({
  handlers: {
    greetings: async (job) => {
      const { notify } = job.payload as { notify: string };
      const res = await job.fetch(notify, { method: "POST", body: JSON.stringify({ handledBy: "my-handler", id: job.id, attempt: job.attempt }) });
      if (!res.ok) throw new RetryableError(\`receiver said \${res.status}\`);
    },
  },
});

// The API mounted in an app of the user's own, beside a route of its own.
const app = new Hono<{ Bindings: Env }>();
app.get("/hello", (c) => c.text("my own route"));
app.route("/", dl.app);

export default { fetch: app.fetch, scheduled: dl.scheduled } satisfies ExportedHandler<Env>;
export const TickChunk = dl.TickChunk;
export const TickAlarm = dl.TickAlarm;
`,
  );
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "Bundler",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["@cloudflare/workers-types"],
      },
      include: ["src/**/*.ts"],
    }),
  );
  run(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", project], project);
  // The user's wrangler.toml is the one the package ships, with the user's main module.
  const example = readFileSync(join(project, "node_modules/delayline/wrangler.example.toml"), "utf8");
  writeFileSync(join(project, "wrangler.toml"), example);

  const stack = await startLocalStack({ WRANGLER_CONFIG: join(project, "wrangler.toml"), TICK_POLL_MS: "100" });
  stacks.push(stack);
  const auth = { authorization: `Bearer ${stack.token}`, "content-type": "application/json" };

  expect(await (await fetch(`${stack.url}/hello`)).text()).toBe("my own route");
  expect((await fetch(`${stack.url}/dashboard/`)).status).toBe(200);
  expect((await fetch(`${stack.url}/openapi.json`)).status).toBe(200);

  const res = await fetch(`${stack.url}/v1/jobs`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ topic: "greetings", payload: { notify: `${receiver.url}/ran` } }),
  });
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as { id: string };

  let ran: Delivery[] = [];
  for (let i = 0; i < 240 && ran.length === 0; i++) {
    ran = (await (await fetch(`${receiver.url}/__deliveries?prefix=/ran`)).json()) as Delivery[];
    if (ran.length === 0) await new Promise((r) => setTimeout(r, 250));
  }
  expect(ran.map((d) => JSON.parse(d.body))).toEqual([{ handledBy: "my-handler", id, attempt: 1 }]);
  // Acked once the handler returned: the job ends succeeded.
  let state = "";
  for (let i = 0; i < 40 && state !== "succeeded"; i++) {
    state = ((await (await fetch(`${stack.url}/v1/jobs/${id}`, { headers: auth })).json()) as { state: string }).state;
    if (state !== "succeeded") await new Promise((r) => setTimeout(r, 250));
  }
  expect(state).toBe("succeeded");
});
