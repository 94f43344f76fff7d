// Draws delayline's icon (a clock face on a rounded square) into
// public/favicon.ico: browsers ask for /favicon.ico on every page, and a 404
// there is a console error on each load. Drawn here rather than committed as
// a binary; an ICO holding one 32×32 PNG, which every current browser reads.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SIZE = 32;
const SAMPLES = 4; // per axis: 16 samples a pixel smooth the edges
const BACKGROUND = [37, 99, 235];
const FACE = [255, 255, 255];

/** Which colour the point (x, y), in pixels from the top left, has; null outside the icon. */
function colourAt(x, y) {
  const c = SIZE / 2;
  // Rounded square, corner radius 7.
  const r = 7;
  const dx = Math.max(Math.abs(x - c) - (c - r), 0);
  const dy = Math.max(Math.abs(y - c) - (c - r), 0);
  if (dx * dx + dy * dy > r * r) return null;
  const d = Math.hypot(x - c, y - c);
  const ring = d >= 9.5 && d <= 12;
  // Hands: one to twelve o'clock, one to three o'clock.
  const hour = Math.abs(x - c) <= 1.25 && y >= c - 8 && y <= c + 1.25;
  const minute = Math.abs(y - c) <= 1.25 && x >= c - 1.25 && x <= c + 6;
  return ring || hour || minute ? FACE : BACKGROUND;
}

const pixels = Buffer.alloc(SIZE * (SIZE * 4 + 1));
for (let py = 0; py < SIZE; py++) {
  const row = py * (SIZE * 4 + 1);
  pixels[row] = 0; // PNG filter: none
  for (let px = 0; px < SIZE; px++) {
    const sum = [0, 0, 0, 0];
    for (let sy = 0; sy < SAMPLES; sy++) {
      for (let sx = 0; sx < SAMPLES; sx++) {
        const colour = colourAt(px + (sx + 0.5) / SAMPLES, py + (sy + 0.5) / SAMPLES);
        if (!colour) continue;
        for (let i = 0; i < 3; i++) sum[i] += colour[i];
        sum[3] += 1;
      }
    }
    const at = row + 1 + px * 4;
    const n = sum[3];
    // Straight (not premultiplied) alpha: the colour of the covered samples, their share as opacity.
    for (let i = 0; i < 3; i++) pixels[at + i] = n ? Math.round(sum[i] / n) : 0;
    pixels[at + 3] = Math.round((255 * n) / (SAMPLES * SAMPLES));
  }
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
const header = Buffer.alloc(13);
header.writeUInt32BE(SIZE, 0);
header.writeUInt32BE(SIZE, 4);
header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, deflate, no filter method, no interlace
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk("IHDR", header),
  chunk("IDAT", deflateSync(pixels, { level: 9 })),
  chunk("IEND", Buffer.alloc(0)),
]);

// ICO: a 6-byte header, one 16-byte directory entry, then the PNG.
const ico = Buffer.alloc(22);
ico.writeUInt16LE(0, 0); // reserved
ico.writeUInt16LE(1, 2); // type: icon
ico.writeUInt16LE(1, 4); // one image
ico.writeUInt8(SIZE, 6);
ico.writeUInt8(SIZE, 7);
ico.writeUInt8(0, 8); // no palette
ico.writeUInt8(0, 9);
ico.writeUInt16LE(1, 10); // colour planes
ico.writeUInt16LE(32, 12); // bits per pixel
ico.writeUInt32LE(png.length, 14);
ico.writeUInt32LE(22, 18); // where the PNG starts
mkdirSync(join(root, "public"), { recursive: true });
writeFileSync(join(root, "public/favicon.ico"), Buffer.concat([ico, png]));
