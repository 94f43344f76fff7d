/** Load on loopback with autocannon (its CLI, in a child process), for the chaos runs and the bench's floor. */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Result } from "autocannon";

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve("autocannon/package.json")), "autocannon.js");

/**
 * autocannon in a process of its own: the bridge and the receiver live in the caller's, and a load generator
 * sharing their event loop would slow them down. Resolves with its JSON result.
 */
export function autocannon(options: {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration: number;
  timeout: number;
  overallRate?: number;
}): Promise<Result> {
  const args = [
    autocannonBin,
    "--json",
    "--no-progress",
    "-c",
    String(options.connections),
    "-d",
    String(options.duration),
    "-t",
    String(options.timeout),
    "-m",
    options.method,
    "-b",
    options.body,
  ];
  for (const [k, v] of Object.entries(options.headers)) args.push("-H", `${k}=${v}`);
  if (options.overallRate !== undefined) args.push("-R", String(options.overallRate));
  args.push(options.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    child.once("exit", (code) => {
      try {
        resolve(JSON.parse(out) as Result);
      } catch {
        reject(new Error(`autocannon exited ${code}: ${err.slice(-500)}`));
      }
    });
  });
}
