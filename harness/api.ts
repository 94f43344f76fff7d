/**
 * The API over plain fetch, as a caller outside the typed client sees it: raw answers (status, content type, body,
 * Retry-After), for the chaos runs and the tests that count every status.
 */

/** One answer of the API, as it came. */
export interface Answer {
  status: number;
  contentType: string;
  body: any;
  /** The Retry-After header in milliseconds (seconds form only), or null. */
  retryAfterMs: number | null;
}

/** Requests with the API token; a GET or PUT that gets no answer is tried up to three times, any other is the caller's to retry. */
export class Api {
  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const send = () =>
      fetch(this.url + path, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(60_000),
      });
    let res: Response;
    // Reads and settings are safe to repeat when a busy machine lets one time out; other writes are the caller's to retry.
    for (let attempt = 1; ; attempt++) {
      try {
        res = await send();
        break;
      } catch (err) {
        if ((method !== "GET" && method !== "PUT") || attempt >= 3) throw err;
      }
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: kept as text */
    }
    const retryAfter = Number(res.headers.get("retry-after") ?? Number.NaN);
    return {
      status: res.status,
      contentType: res.headers.get("content-type") ?? "",
      body: parsed,
      retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1_000 : null,
    };
  }

  async ok(method: string, path: string, body?: unknown): Promise<any> {
    const r = await this.request(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return r.body;
  }

  topic(name: string): Promise<{
    scheduled: number;
    ready: number;
    inflight: number;
    dead: number;
    counters: { dispatched: number; succeeded: number; retried: number; dead: number };
  }> {
    return this.ok("GET", `/v1/topics/${name}`);
  }

  configureTopic(name: string, patch: Record<string, unknown>): Promise<unknown> {
    return this.ok("PUT", `/v1/topics/${name}`, patch);
  }
}
