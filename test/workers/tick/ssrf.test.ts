import { describe, expect, it } from "vitest";
import { forbiddenTarget } from "../../../src/handlers/ssrf.js";

describe("SSRF guard", () => {
  it.each([
    ["ftp://example.com/x", /protocol/],
    ["file:///etc/passwd", /protocol/],
    ["https://user:pass@example.com/", /credentials/],
    ["http://127.0.0.1/", /private/],
    ["http://127.1.2.3:8080/", /private/],
    ["http://[::1]/", /private/],
    ["http://[::]/", /private/],
    ["http://[::ffff:127.0.0.1]/", /private/],
    ["http://[::ffff:a9fe:a9fe]/", /private/],
    ["http://[fd00::1]/", /private/],
    ["http://[fe80::1]/", /private/],
    ["http://169.254.169.254/latest/meta-data/", /private/],
    ["http://10.0.0.1/", /private/],
    ["http://10.255.255.255/", /private/],
    ["http://172.16.0.1/", /private/],
    ["http://192.168.1.1/", /private/],
    ["http://100.64.0.1/", /private/],
    ["http://0.0.0.0/", /private/],
    ["http://2130706433/", /private/],
    ["http://0177.0.0.1/", /private/],
    ["http://0x7f.0.0.1/", /private/],
    ["http://0x7f000001/", /private/],
    ["http://017700000001/", /private/],
    ["http://localhost/", /loopback/],
    ["http://LOCALHOST./", /loopback/],
    ["http://api.localhost/", /loopback/],
    ["http://metadata.google.internal/", /internal/],
    // Found by test/workers/api/abuse.test.ts: each of these used to pass.
    ["http://localhost../", /loopback/],
    ["http://[::127.0.0.1]/", /private/],
    ["http://[::a9fe:a9fe]/", /private/],
    ["http://[::ffff:0:7f00:1]/", /private/],
    ["http://[2002:7f00:1::]/", /private/],
    ["http://[2002:a9fe:a9fe::1]/", /private/],
    ["http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", /private/],
    ["http://[fec0::1]/", /private/],
    ["http://./", /no host/],
  ])("refuses %s", (url, reason) => {
    expect(forbiddenTarget(url, false)).toMatch(reason);
  });

  it.each([
    "https://example.com/hook",
    "http://93.184.216.34/",
    "https://[2606:2800:220:1:248:1893:25c8:1946]/",
    "https://172.32.0.1/",
    "http://[2002:5db8:d822::1]/",
  ])("allows %s", (url) => {
    expect(forbiddenTarget(url, false)).toBeNull();
  });

  it("allows private addresses when the deployment does, but never other protocols or credentials", () => {
    expect(forbiddenTarget("http://127.0.0.1:8080/", true)).toBeNull();
    expect(forbiddenTarget("gopher://127.0.0.1/", true)).toMatch(/protocol/);
    expect(forbiddenTarget("http://a:b@127.0.0.1/", true)).toMatch(/credentials/);
  });
});
