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

/** The slot `key` lives in, as `CLUSTER KEYSLOT` answers. */
export function keySlot(key: string): number {
  return crc16(Buffer.from(hashedPart(key))) % SLOTS;
}
