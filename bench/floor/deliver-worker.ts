/**
 * The floor of http delivery from a Worker: nothing but the outbound calls.
 * `POST /deliver` with `{ url, n, concurrency, body }` makes `n` POSTs of
 * `body` (JSON) to `url` with at most `concurrency` in flight, reads each
 * response's body (so workerd keeps the connection for the next one) and
 * answers how many came back 2xx. No Redis, no signing, no bookkeeping:
 * what a delivery costs any Worker, against which the tick's is measured.
 */
interface DeliverRequest {
  url: string;
  n: number;
  concurrency: number;
  body: string;
}

export default {
  async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname !== "/deliver") return new Response("not found", { status: 404 });
    const { url, n, concurrency, body } = (await request.json()) as DeliverRequest;
    let next = 0;
    let ok = 0;
    let failed = 0;
    const lane = async () => {
      while (next < n) {
        next++;
        try {
          const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
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
