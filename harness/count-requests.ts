/**
 * Preloaded into `npm start`'s Node process (node --import) by
 * harness/npm-start.ts (`countRequests`) when a benchmark counts the bridge's REST requests:
 * notes every HTTP request the server listening on BENCH_COUNT_PORT (the
 * bridge) receives, as [epoch ms, path, bytes of the answer's body]. On SIGUSR2 it writes what it noted
 * since the previous signal to BENCH_REQUEST_LOG (atomically, by rename)
 * and forgets it. It changes nothing the stack does; it only observes.
 */
import { renameSync, writeFileSync } from "node:fs";
import { Server, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const out = process.env.BENCH_REQUEST_LOG;
const port = Number(process.env.BENCH_COUNT_PORT);
if (out && port) {
  let seen: Array<[number, string, number]> = [];
  const emit = Server.prototype.emit;
  Server.prototype.emit = function (this: Server, event: string | symbol, ...args: unknown[]) {
    if (event === "request" && (this.address() as AddressInfo | null)?.port === port) {
      const entry: [number, string, number] = [Date.now(), (args[0] as IncomingMessage).url ?? "", 0];
      seen.push(entry);
      // The answer's size (a Redis reply's, through the bridge): counted as it is written.
      const res = args[1] as ServerResponse;
      const count = (chunk: unknown) => {
        if (typeof chunk === "string") entry[2] += Buffer.byteLength(chunk);
        else if (chunk instanceof Uint8Array) entry[2] += chunk.byteLength;
      };
      const write = res.write;
      const end = res.end;
      res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
        count(chunk);
        return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
      } as typeof res.write;
      res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
        if (typeof chunk !== "function") count(chunk);
        return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
      } as typeof res.end;
    }
    return (emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean).call(this, event, ...args);
  } as typeof emit;
  process.on("SIGUSR2", () => {
    const batch = seen;
    seen = [];
    writeFileSync(`${out}.tmp`, JSON.stringify(batch));
    renameSync(`${out}.tmp`, out);
  });
}
