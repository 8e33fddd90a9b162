// Identifiers we mint are UUID v7: time-ordered, so B-tree inserts stay local and ids sort by creation.
import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

// Random bytes are drawn 4 KiB at a time: uuid's own v7 asks the system for 16 bytes per id, which
// made id minting a measurable share of the API thread's CPU per run (bench:runs-paired).
const pool = new Uint8Array(4096);
let drawn = pool.length;
// As uuid's v7 does without options: within one millisecond the sequence counts up, so ids minted
// by this process keep their order.
const last = { msecs: -Infinity, seq: 0 };

export const newId = (): string => {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  const random = pool.subarray(drawn, (drawn += 16));
  const now = Date.now();
  if (now > last.msecs) {
    last.msecs = now;
    last.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    last.seq = (last.seq + 1) | 0;
    if (last.seq === 0) last.msecs++;
  }
  return v7({ random, msecs: last.msecs, seq: last.seq });
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
