/**
 * Refuses delivery targets that would let a job reach inside a network:
 * anything but http(s), URLs with credentials, loopback, private, link-local
 * (cloud metadata lives at 169.254.169.254), CGNAT, multicast and reserved
 * addresses, and local hostnames. IPv4 in decimal, octal or hex spellings is
 * caught because the URL parser canonicalises it first (http://2130706433/ is
 * http://127.0.0.1/). Names that merely resolve to private addresses cannot be
 * checked from a Worker (no DNS API); Cloudflare's network does not route to
 * private addresses from Workers in production, which closes that gap there.
 */

function ipv4Parts(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : null;
}

function privateIpv4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) ||
    a! >= 224
  );
}

/** Expands an IPv6 literal (without brackets) to eight 16-bit groups, or null. */
function ipv6Groups(host: string): number[] | null {
  let h = host.toLowerCase();
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (v4) {
    const p = ipv4Parts(v4[1]!);
    if (!p) return null;
    h = `${h.slice(0, -v4[1]!.length)}${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head, tail, extra] = h.split("::");
  if (extra !== undefined) return null;
  const left = head ? head.split(":") : [];
  const right = tail !== undefined ? (tail ? tail.split(":") : []) : [];
  const fill = tail !== undefined ? 8 - left.length - right.length : 0;
  if (fill < 0) return null;
  const groups = [...left, ...Array(fill).fill("0"), ...right].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function privateIpv6(g: number[]): boolean {
  const [a] = g;
  const v4At = (i: number) => [g[i]! >> 8, g[i]! & 0xff, g[i + 1]! >> 8, g[i + 1]! & 0xff];
  // ::/96 holds ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d, which
  // some stacks still route to the IPv4 address.
  if (g.slice(0, 6).every((x) => x === 0)) return true;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return privateIpv4(v4At(6)); // ::ffff:a.b.c.d
  if (g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0) return true; // ::ffff:0:a.b.c.d (SIIT)
  if (g[0] === 0x64 && g[1] === 0xff9b) return true; // NAT64
  if (g[0] === 0x2002) return privateIpv4(v4At(1)); // 6to4 carries an IPv4 address in bits 16–47
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo tunnels to an IPv4 address
  // ULA, link-local, the deprecated site-local, multicast.
  return (a! & 0xfe00) === 0xfc00 || (a! & 0xffc0) === 0xfe80 || (a! & 0xffc0) === 0xfec0 || (a! & 0xff00) === 0xff00;
}

/** Why `url` may not be delivered to, or null when it may. */
export function forbiddenTarget(url: string, allowPrivate: boolean): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "not a URL";
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return `protocol ${u.protocol} is not allowed (http and https only)`;
  if (u.username || u.password) return "URLs with credentials are not allowed";
  if (allowPrivate) return null;
  // Every trailing dot: "localhost.." still names localhost to some resolvers.
  const host = u.hostname.replace(/\.+$/, "").toLowerCase();
  if (host === "") return "the URL names no host";
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback hostnames are not allowed";
  if (host.endsWith(".internal") || host.endsWith(".local")) return "internal hostnames are not allowed";
  const v4 = ipv4Parts(host);
  if (v4 && privateIpv4(v4)) return `address ${host} is private, loopback, link-local or reserved`;
  if (host.startsWith("[")) {
    const g = ipv6Groups(host.slice(1, -1));
    if (!g || privateIpv6(g)) return `address ${host} is private, loopback, link-local or reserved`;
  }
  return null;
}
