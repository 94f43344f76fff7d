/**
 * Preloaded into `npm start`'s Node process (node --import) by
 * harness/npm-start.ts (`countRequests`) when a benchmark counts the bridge's REST requests:
 * notes every HTTP request the server listening on BENCH_COUNT_PORT (the
 * bridge) receives, as [epoch ms, path]. On SIGUSR2 it writes what it noted
 * since the previous signal to BENCH_REQUEST_LOG (atomically, by rename)
 * and forgets it. It changes nothing the stack does; it only observes.
 */
import { renameSync, writeFileSync } from "node:fs";
import { Server, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

const out = process.env.BENCH_REQUEST_LOG;
const port = Number(process.env.BENCH_COUNT_PORT);
if (out && port) {
  let seen: Array<[number, string]> = [];
  const emit = Server.prototype.emit;
  Server.prototype.emit = function (this: Server, event: string | symbol, ...args: unknown[]) {
    if (event === "request" && (this.address() as AddressInfo | null)?.port === port) {
      seen.push([Date.now(), (args[0] as IncomingMessage).url ?? ""]);
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
