/**
 * Redis Cluster's hash slot of a key (the cluster spec's "Keys distribution
 * model"): CRC16/XMODEM of the key, or of its hash tag — what lies between
 * the first `{` and the first `}` after it, when that is not empty — modulo
 * 16384. Keys of one tag share a slot, which is what lets a script or a
 * transaction name several of them on a cluster.
 */
const SLOTS = 16_384;

/** CRC16/XMODEM (polynomial 0x1021, initial 0, no reflection): Redis Cluster's key hash. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The part of `key` that is hashed: its hash tag when it has a non-empty one, else the whole key. */
export function hashedPart(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

// UTF-8, as Redis hashes a key's bytes; not Buffer, so the workerd tests' shard fixtures can use this too.
const utf8 = new TextEncoder();

/** The slot `key` lives in, as `CLUSTER KEYSLOT` answers. */
export function keySlot(key: string): number {
  return crc16(utf8.encode(hashedPart(key))) % SLOTS;
}

/** Slots a cluster node serves, first and last included, as `CLUSTER SLOTS` lists them. */
export type SlotRange = readonly [first: number, last: number];

/**
 * The first hash tag `<base><n>` (n = 0, 1, …) whose slot lies in `ranges`:
 * a key prefix carrying it (`dl:{<tag>}`) puts all its keys on the node
 * serving those slots. A third of the slots, a master's share of three, takes
 * three names on average. Throws after `tries` names (`ranges` hold no slot,
 * or too few).
 */
export function hashTagIn(base: string, ranges: readonly SlotRange[], tries = 100_000): string {
  for (let n = 0; n < tries; n++) {
    const slot = keySlot(`${base}${n}`);
    if (ranges.some(([first, last]) => slot >= first && slot <= last)) return `${base}${n}`;
  }
  throw new Error(`no hash tag ${base}<n> below n = ${tries} has its slot in ${JSON.stringify(ranges)}`);
}
