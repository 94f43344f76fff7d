/**
 * A Worker of a wrangler config, bundled and described for miniflare the way
 * `wrangler dev` would run it, without `wrangler dev` (see
 * dev/worker-host.ts, which runs it for `npm start`).
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import type { WorkerOptions } from "miniflare";

// wrangler is a large module (12 MB of CommonJS): required, not imported, which skips scanning it for
// named exports (a second of CPU), and only when first needed, so a caller can start the bundle first.
const wrangler = async () => createRequire(import.meta.url)("wrangler") as typeof import("wrangler");

export interface Bundle {
  /** The entry module, in the bundle's directory. */
  entry: string;
  /** The source files esbuild read (outside node_modules), absolute. */
  inputs: string[];
}

/**
 * wrangler's deploy bundle of the config's Worker (`deploy --dry-run`:
 * exactly what `wrangler deploy` uploads), written to `outDir` (emptied
 * first). Runs wrangler as a process of its own, so the caller's event loop
 * is not blocked while esbuild's results are processed.
 */
export async function bundleWorker(configPath: string, outDir: string): Promise<Bundle> {
  const projectRoot = dirname(configPath);
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const metafile = join(outDir, "meta.json");
  // wrangler's CLI itself (its package's main), with the flags bin/wrangler.js would start a second Node process to add.
  const cli = createRequire(import.meta.url).resolve("wrangler");
  const args = ["--no-warnings", "--experimental-vm-modules", cli, "deploy", "--dry-run", "--outdir", outDir, "--metafile", metafile, "--config", configPath];
  const output = await new Promise<string>((res, rej) => {
    const child = spawn(process.execPath, args, {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "pipe"],
      // No telemetry, and no banner: printing it asks the npm registry for a newer wrangler.
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
    });
    let text = "";
    child.stdout.on("data", (c: Buffer) => (text += c));
    child.stderr.on("data", (c: Buffer) => (text += c));
    child.once("error", rej);
    child.once("exit", (code) =>
      code === 0 ? res(text) : rej(new Error(`bundling the Worker failed (wrangler deploy --dry-run exited ${code}):\n${text.trim()}`)),
    );
  });
  const meta = JSON.parse(await readFile(metafile, "utf8")) as { inputs: Record<string, unknown>; outputs: Record<string, { entryPoint?: string }> };
  // esbuild names files relative to its working directory, which wrangler sets to the config's directory.
  const entry = Object.entries(meta.outputs).find(([, o]) => o.entryPoint !== undefined)?.[0];
  if (!entry) throw new Error(`wrangler's bundle names no entry module:\n${output.trim()}`);
  const inputs = Object.keys(meta.inputs)
    .filter((p) => !p.includes("node_modules/") && !p.includes(":"))
    .map((p) => resolve(projectRoot, p));
  return { entry: resolve(projectRoot, entry), inputs };
}

/**
 * Answers `/__scheduled?cron=…&time=…` (any host) by running the scheduled
 * handler of the Worker bound as `WORKER`: a real scheduled event with that
 * cron and time (epoch ms; default now), answered once the handler has
 * finished, as `wrangler dev --test-scheduled` answered.
 */
const SCHEDULED_TRIGGER = `
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const time = Number(url.searchParams.get("time"));
    const result = await env.WORKER.scheduled({
      cron: url.searchParams.get("cron") ?? "",
      scheduledTime: Number.isFinite(time) && time > 0 ? new Date(time) : new Date(),
    });
    const ok = result.outcome === "ok";
    return new Response(ok ? "Ran scheduled event" : "scheduled event: " + result.outcome, { status: ok ? 200 : 500 });
  },
};`;

/** Serves nothing itself: a Worker whose static assets answer every request they match, and 404 the rest. */
const ASSETS_ONLY = "export default { fetch: () => new Response(null, { status: 404 }) };";

/** The config's Worker name (wrangler.toml's `name`). */
export async function workerName(configPath: string): Promise<string> {
  return (await wrangler()).unstable_readConfig({ config: configPath }, { hideWarnings: true }).name ?? "worker";
}

/**
 * The miniflare Workers that serve the config's Worker from `entry` with
 * `bindings` on top of the config's [vars]: the Worker itself (first, so it
 * answers every request no route takes), the `/__scheduled` trigger, and,
 * when the config has `[assets]`, a Worker that holds them.
 *
 * The static assets are the Worker's ASSETS binding, not a router in front
 * of it: with `assets` on the Worker itself, miniflare sends every request
 * through its asset router first — JavaScript on the Worker's own workerd
 * thread: about twice the workerd CPU per `POST /v1/jobs` in bench/burst-http.ts —
 * where Cloudflare's edge routes before the Worker, off its CPU. The Worker serves every page itself through ASSETS (GET /docs/*,
 * /dashboard/*, /favicon.ico, with the pages' headers), so the pages answer
 * the same.
 */
export async function workerOptions(configPath: string, entry: string, bindings: Record<string, string>): Promise<WorkerOptions[]> {
  const name = await workerName(configPath);
  const { assets, ...fromConfig } = (await wrangler()).unstable_getMiniflareWorkerOptions(configPath).workerOptions;
  const serviceBindings: NonNullable<WorkerOptions["serviceBindings"]> = {};
  for (const [binding, target] of Object.entries(fromConfig.serviceBindings ?? {})) {
    // wrangler names the Worker itself (TICK_RUNNER's target) by leaving the name out; miniflare needs it.
    const toSelf = typeof target === "object" && target !== null && "entrypoint" in target && !("name" in target && typeof target.name === "string");
    serviceBindings[binding] = toSelf ? { ...target, name } : target;
  }
  const assetsWorker = `${name}-assets`;
  if (assets?.binding) serviceBindings[assets.binding] = assetsWorker;
  const workers: WorkerOptions[] = [
    {
      ...fromConfig,
      name,
      modules: true,
      modulesRoot: dirname(entry),
      scriptPath: entry,
      bindings: { ...fromConfig.bindings, ...bindings },
      serviceBindings,
      // Deliveries and Redis calls straight to the network, as on Cloudflare:
      // by default miniflare runs each outbound fetch through a Worker of its
      // own (it drops CF-Connecting-IP and adds CF-Worker), on the Worker's
      // thread, which was half the workerd CPU of a plain delivery.
      stripCfConnectingIp: false,
    },
    {
      name: `${name}-scheduled`,
      modules: true,
      script: SCHEDULED_TRIGGER,
      compatibilityDate: fromConfig.compatibilityDate,
      compatibilityFlags: ["service_binding_extra_handlers"],
      serviceBindings: { WORKER: name },
      routes: ["*/__scheduled*"],
    },
  ];
  if (assets) {
    workers.push({
      name: assetsWorker,
      modules: true,
      script: ASSETS_ONLY,
      compatibilityDate: fromConfig.compatibilityDate,
      assets: { ...assets, routerConfig: { ...assets.routerConfig, has_user_worker: false } },
    });
  }
  return workers;
}
