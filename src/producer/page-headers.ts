/**
 * Security headers of the static pages (/docs, /dashboard) and the icon. On
 * Cloudflare, static assets answer before the Worker runs, so the headers go
 * into `public/_headers` (rendered from these rules by
 * scripts/build-headers.mjs); the Worker's own ASSETS passthrough sets them
 * too, so they arrive however a page is requested.
 */

// The pages load only their own files: no inline script (Swagger UI's setup is
// init.js), inline styles only because Swagger UI and uPlot set style
// attributes, data: images for Swagger UI's icons. frame-ancestors works
// only as a header: a <meta> policy cannot stop the page being framed.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE: Record<string, string> = {
  "Content-Security-Policy": CSP,
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

/** URL patterns (Workers static assets `_headers` syntax: a trailing `*` matches the rest) and the headers they get. */
const PAGE_HEADER_RULES: ReadonlyArray<{ path: string; headers: Readonly<Record<string, string>> }> = [
  { path: "/docs/*", headers: PAGE },
  { path: "/dashboard/*", headers: PAGE },
  { path: "/favicon.ico", headers: { "X-Content-Type-Options": "nosniff" } },
];

/** The headers `pathname` gets, merged over every rule that matches it. */
export function pageHeaders(pathname: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rule of PAGE_HEADER_RULES) {
    const matches = rule.path.endsWith("*") ? pathname.startsWith(rule.path.slice(0, -1)) : pathname === rule.path;
    if (matches) Object.assign(out, rule.headers);
  }
  return out;
}

/**
 * The rules as a `_headers` file for Workers static assets. Read by scripts/build-headers.mjs through tsImport.
 * @public
 */
export function headersFile(): string {
  return PAGE_HEADER_RULES.map(
    (r) =>
      `${r.path}\n${Object.entries(r.headers)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join("\n")}\n`,
  ).join("\n");
}

/** `response` (an asset) with the headers its path gets; asset responses' headers are immutable, so it is copied. */
export function withPageHeaders(pathname: string, response: Response): Response {
  const copy = new Response(response.body, response);
  for (const [name, value] of Object.entries(pageHeaders(pathname))) copy.headers.set(name, value);
  return copy;
}
