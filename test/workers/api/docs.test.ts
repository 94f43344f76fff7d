import { describe, expect, it } from "vitest";
import { pageHeaders } from "../../../src/producer/page-headers.js";
import { self } from "../self.js";

describe("GET /docs", () => {
  it("serves the API reference and its assets from the Worker itself, pointing at /openapi.json", async () => {
    const page = await self.fetch("http://delayline.test/docs/");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<div id="swagger-ui">');
    // Nothing is fetched from another origin.
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ["swagger-ui-bundle.js", "swagger-ui.css", "init.js"]) {
      const r = await self.fetch(`http://delayline.test/docs/${asset}`);
      expect(r.status, asset).toBe(200);
      expect((await r.text()).length).toBeGreaterThan(10);
    }
    expect(await (await self.fetch("http://delayline.test/docs/init.js")).text()).toContain('url: "/openapi.json"');
  });
});

const SECURITY = {
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

// In workerd under vitest every request reaches the Worker, so these check
// its ASSETS passthrough. On Cloudflare (and under wrangler dev) static assets
// answer first, with public/_headers: test/node/dashboard.test.ts checks that path.
describe("the pages' security headers", () => {
  it.each(["/docs/", "/docs/index.html", "/docs/init.js", "/docs/swagger-ui.css", "/dashboard/", "/dashboard/app.js"])(
    "%s sends its CSP, framing and sniffing headers",
    async (path) => {
      const res = await self.fetch(`http://delayline.test${path}`);
      expect(res.status).toBe(200);
      await res.body?.cancel();
      expect(Object.fromEntries([...res.headers].filter(([k]) => k in SECURITY))).toEqual(SECURITY);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toBe(pageHeaders(path)["Content-Security-Policy"]);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
    },
  );

  it("/favicon.ico is an image", async () => {
    const res = await self.fetch("http://delayline.test/favicon.ico");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^image\//);
    const bytes = new Uint8Array(await res.arrayBuffer());
    // An ICO: reserved 0, type 1.
    expect([...bytes.slice(0, 4)]).toEqual([0, 0, 1, 0]);
  });
});

describe("the pages", () => {
  it("Swagger UI does not persist the token (persistAuthorization would keep it in localStorage)", async () => {
    const init = await (await self.fetch("http://delayline.test/docs/init.js")).text();
    expect(init).toContain("SwaggerUIBundle(");
    expect(init).not.toMatch(/persistAuthorization:\s*true/);
  });

  it("the dashboard links its icon and carries no meta CSP of its own (the header is the policy)", async () => {
    const html = await (await self.fetch("http://delayline.test/dashboard/")).text();
    expect(html).toContain('<link rel="icon" href="/favicon.ico">');
    expect(html).not.toMatch(/http-equiv="Content-Security-Policy"/i);
  });
});
