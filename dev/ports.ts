import { createServer } from "node:net";

/** A port the OS says is free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Reads a port from the environment: unset means `fallback`, anything else must be 0–65535. */
export function portFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`${name} must be a port number (0–65535), got ${JSON.stringify(raw)}`);
  }
  return port;
}

/** Whether something already listens on `host:port` (tried by binding it, as the server that will use it does). */
export function portInUse(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(true) : reject(err)));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(false)));
  });
}

/**
 * Fails, naming the setting, when the port that setting chose is taken: a
 * server that found it taken later would say so in its own words (wrangler's
 * "--port", say), and a stack already there would answer in its place.
 */
export async function assertPortFree(setting: string, port: number, host = "127.0.0.1"): Promise<void> {
  if (port === 0) return;
  let taken: boolean;
  try {
    taken = await portInUse(port, host);
  } catch (err) {
    throw new Error(`${setting} ${port} cannot be used on ${host}: ${(err as Error).message}`);
  }
  if (!taken) return;
  throw new Error(`${setting} ${port} is in use on ${host} (another npm start, or another server): stop it, or set ${setting}=… to a free port`);
}
