/**
 * A loopback HTTP proxy in front of the REST bridge that loses replies on purpose: the fault of a network that
 * carried a request to Redis and lost the answer. Every request is forwarded to the bridge whole; for a request
 * an armed rule matches, the proxy waits for the bridge's whole answer (so Redis ran the command), then destroys
 * the client's socket without answering a byte. The caller sees the connection drop, as after a lost reply.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A rule: drops the replies of the `times` next requests whose body `matches`. */
interface DropRule {
  /** Which requests: given the request's path and body text. */
  matches(path: string, body: string): boolean;
  /** How many matching requests lose their reply. Default 1. */
  times?: number;
  /** Which of the matching requests' answers are lost: given the bridge's answer (status, body). Default every one (a NOSCRIPT answer, which ran nothing, included). */
  answered?(status: number, body: string): boolean;
  /** Awaited after the bridge answered and before the reply is dropped (e.g. until the job was delivered meanwhile). Default none. */
  hold?: () => Promise<void>;
}

export interface DropReplyProxy {
  url: string;
  /** Arms a rule (replacing any armed one). */
  drop(rule: DropRule): void;
  /** How many requests the bridge answered so far that a predicate picks, given the request and the answer (e.g. how often a command ran). */
  forwarded(pick: (path: string, body: string, status: number, answer: string) => boolean): number;
  /** Replies dropped so far. */
  dropped(): number;
  close(): Promise<void>;
  server: Server;
}

/** Starts the proxy on a free loopback port, forwarding to `target` (the bridge's URL). */
export async function startDropReplyProxy(target: string): Promise<DropReplyProxy> {
  const upstream = new URL(target);
  const seen: Array<{ path: string; body: string; status: number; answer: string }> = [];
  let rule: (DropRule & { left: number }) | undefined;
  let dropped = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? "/";
      const text = body.toString();
      const armed = rule !== undefined && rule.left > 0 && rule.matches(path, text) ? rule : undefined;
      const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host, "content-length": String(body.length) };
      const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path, headers }, (answer) => {
        const parts: Buffer[] = [];
        answer.on("data", (c: Buffer) => parts.push(c));
        answer.on("end", async () => {
          const reply = Buffer.concat(parts);
          seen.push({ path, body: text, status: answer.statusCode ?? 0, answer: reply.toString() });
          const drop = armed !== undefined && armed.left > 0 && (armed.answered?.(answer.statusCode ?? 0, reply.toString()) ?? true);
          if (drop) {
            armed.left--;
            // The bridge answered, so Redis ran the command: lose the answer.
            await armed.hold?.().catch(() => {});
            dropped++;
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(reply);
        });
      });
      out.on("error", () => req.socket.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    drop(r) {
      rule = { ...r, left: r.times ?? 1 };
    },
    forwarded: (pick) => seen.filter((s) => pick(s.path, s.body, s.status, s.answer)).length,
    dropped: () => dropped,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
