import { describe, expect, it } from "vitest";
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

describe("the pages", () => {
  it("Swagger UI does not persist the token (persistAuthorization would keep it in localStorage)", async () => {
    const init = await (await self.fetch("http://delayline.test/docs/init.js")).text();
    expect(init).toContain("SwaggerUIBundle(");
    expect(init).not.toMatch(/persistAuthorization:\s*true/);
  });
});
