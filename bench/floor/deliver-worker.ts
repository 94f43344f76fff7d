/**
 * The floor of http delivery from a Worker: nothing but the outbound calls.
 * `POST /deliver` with `{ url, n, concurrency, body, request? }` makes `n`
 * POSTs of `body` (JSON) to `url` with at most `concurrency` in flight, reads
 * each response's body (so workerd keeps the connection for the next one) and
 * answers how many came back 2xx. No Redis and no bookkeeping: what a
 * delivery costs any Worker, against which the tick's is measured.
 *
 * `request`:
 * - `plain` (the default): one Content-Type header, the same body every time.
 * - `delayline`: the request a delayline delivery must send, made as cheaply
 *   as a Worker can: the body serialized from its object, delayline's five
 *   headers and a Delayline-Signature (delayline's own signer, its key
 *   imported once), and an AbortSignal for its timeout. What is left between
 *   this and the tick is the pipeline's own work (claim, dispatch, settle).
 */
import { deliverySigner } from "../../src/client/signature.js";

interface DeliverRequest {
  url: string;
  n: number;
  concurrency: number;
  body: string;
  request?: "plain" | "delayline";
}

/** The bench's deployment secret (bench/lib/deliver.ts), which the tick signs with. */
const SIGNING_SECRET = "bench-signing-secret-0123456789";

/** A request as a delayline delivery makes it: the i-th of the run. */
async function delaylineRequest(i: number, payload: unknown, sign: ReturnType<typeof deliverySigner>): Promise<RequestInit> {
  const id = `floor:01KBA0000000000000${String(i).padStart(8, "0")}`;
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = {
    "user-agent": "delayline",
    "delayline-job-id": id,
    "delayline-topic": "floor",
    "delayline-attempt": "1",
    ...(await sign({ id, body })),
    "content-type": "application/json",
  };
  return { method: "POST", headers, body, redirect: "manual", signal: new AbortController().signal };
}

export default {
  async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname !== "/deliver") return new Response("not found", { status: 404 });
    const { url, n, concurrency, body, request: shape = "plain" } = (await request.json()) as DeliverRequest;
    const payload: unknown = JSON.parse(body);
    const sign = deliverySigner("delayline", [SIGNING_SECRET]);
    let next = 0;
    let ok = 0;
    let failed = 0;
    const lane = async () => {
      while (next < n) {
        const i = next++;
        try {
          const init = shape === "plain" ? { method: "POST", headers: { "content-type": "application/json" }, body } : await delaylineRequest(i, payload, sign);
          const res = await fetch(url, init);
          await res.arrayBuffer();
          if (res.ok) ok++;
          else failed++;
        } catch {
          failed++;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(n, concurrency) }, lane));
    return Response.json({ ok, failed });
  },
} satisfies ExportedHandler;
