/**
 * Which request headers of an http delivery a job may set (`target.headers`)
 * and which belong to delayline or to the connection. Shared by the API's
 * target schema (which refuses the connection's with 422) and the http
 * handler (which leaves them out of jobs stored before they were refused).
 */

/**
 * Headers that describe one connection or its framing, not the request:
 * hop-by-hop headers (RFC 9110 §7.6.1), `Host` (the target URL decides it)
 * and `Content-Length` (the body decides it). A proxy or the runtime drops or
 * rewrites them, or a wrong one breaks the request.
 */
const CONNECTION_HEADERS = new Set(["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"]);

/** True for a header a job may not set: a hop-by-hop, `Proxy-*`, `Host` or `Content-Length` header (any case). */
export function isConnectionHeader(name: string): boolean {
  const n = name.toLowerCase();
  return CONNECTION_HEADERS.has(n) || n.startsWith("proxy-");
}

/**
 * True for a header delayline sets on every delivery: `User-Agent` and the
 * `Delayline-*` family (job id, topic, attempt, signature). A job's own value
 * of one is dropped, so a receiver can trust them to come from delayline.
 */
export function isDelaylineHeader(name: string): boolean {
  const n = name.toLowerCase();
  return n === "user-agent" || n.startsWith("delayline-");
}
