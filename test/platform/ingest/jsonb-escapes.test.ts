// What ingestion stores of JSON text that PostgreSQL's jsonb would refuse: NUL and lone UTF-16
// surrogates written as \u escapes are cleaned, and everything else (an escaped surrogate pair above
// all, as Python's json.dumps writes every emoji) is kept exactly.
import { describe, expect, it } from 'vitest';
import { RawJson, toJsonb } from '../../../src/platform/ingest/derive.js';

const stored = (wire: string) => JSON.parse(toJsonb(RawJson.ofBytes(Buffer.from(wire, 'utf8')))!) as { text: string };

describe('toJsonb of raw JSON', () => {
  it('keeps an escaped surrogate pair as the character it encodes', () => {
    expect(stored('{"text":"smile \\ud83d\\ude00 and \\uD83D\\uDE00"}').text).toBe('smile 😀 and 😀');
  });

  it('replaces lone surrogates (high alone, low alone, high then high) and drops NUL', () => {
    expect(stored('{"text":"a\\ud83d b \\ude00 c \\ud83d\\ud83d\\ude00 d\\u0000e"}').text).toBe('a\ufffd b \ufffd c \ufffd😀 de');
  });

  it('leaves an escaped backslash followed by the letters of an escape alone', () => {
    expect(stored('{"text":"path \\\\ud83d"}').text).toBe('path \\ud83d');
  });
});
