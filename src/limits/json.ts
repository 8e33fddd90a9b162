// What a JSON body may contain, decided once for every surface.
//
// Nesting: a body nested thousands deep parses (V8's JSON.parse is iterative) but then overflows the
// stack of every recursive walk after it (zod, JSON.stringify, PostgreSQL's jsonb parser), so a stored
// row could make every later read of its workspace fail. Bodies deeper than the configured limit are
// refused where they are parsed, before anything recursive sees them.
//
// Strings: PostgreSQL cannot store U+0000 in text or jsonb, nor a UTF-16 surrogate without its pair.
// Trace ingestion cleans them (a trace is a record of what happened and must not be lost); every other
// surface refuses the request with a 422 naming the field, rather than silently changing user data.
import { AppError } from '../errors.js';

/** Used where no configuration reaches (the limit's default in config.ts). */
export const DEFAULT_JSON_MAX_DEPTH = 128;

const tooDeep = (maxDepth: number, loc: (string | number)[]) =>
  new AppError('VALIDATION_FAILED', `${loc.join('.')}: JSON is nested more than ${maxDepth} levels deep`, [
    { loc, msg: `JSON is nested more than ${maxDepth} levels deep`, type: 'json_too_deep' },
  ]);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Throws VALIDATION_FAILED when the JSON text nests arrays and objects more than `maxDepth` deep.
 * A linear scan of the bytes (strings are skipped with indexOf), run before JSON.parse.
 */
export function assertJsonDepth(text: Uint8Array, maxDepth: number, loc: (string | number)[] = ['body']): void {
  // A text shorter than the limit cannot nest deeper than it.
  if (text.length <= maxDepth) return;
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      // Skip the string: find its closing quote (one not preceded by an odd number of backslashes).
      let end = i;
      for (;;) {
        end = bytes.indexOf(QUOTE, end + 1);
        if (end < 0) return; // unterminated: JSON.parse reports it
        let backslashes = 0;
        while (bytes[end - 1 - backslashes] === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > maxDepth) throw tooDeep(maxDepth, loc);
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--;
    }
  }
}

/** assertJsonDepth for JSON held in a string (as a protocol's string field carries it), without encoding it first. */
export function assertJsonTextDepth(text: string, maxDepth: number, loc: (string | number)[] = ['body']): void {
  if (text.length <= maxDepth) return;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return; // unterminated: JSON.parse reports it
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > maxDepth) throw tooDeep(maxDepth, loc);
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
}

/** Throws VALIDATION_FAILED when a parsed value nests more than `maxDepth` deep (for values parsed elsewhere). */
export function assertValueDepth(value: unknown, maxDepth: number, loc: (string | number)[] = ['body']): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > maxDepth) throw tooDeep(maxDepth, loc);
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
}

// The escapes that can produce what PostgreSQL refuses: \u0000 and any surrogate (paired ones are
// then checked on the parsed strings). Raw bytes cannot: JSON forbids raw control characters, and
// invalid UTF-8 decodes to U+FFFD.
const SUSPICIOUS_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/** Whether a JSON text may contain a string PostgreSQL refuses (a cheap test on the raw text). */
const mayHoldUnstorableText = (text: string): boolean => SUSPICIOUS_ESCAPE.test(text);

// U+0000, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether PostgreSQL can store this string in text and jsonb. */
const isStorableText = (text: string): boolean => !UNSTORABLE.test(text);

/**
 * Throws VALIDATION_FAILED naming the first string (value or key) PostgreSQL cannot store: one
 * holding U+0000 or a lone UTF-16 surrogate. `loc` prefixes the reported path (e.g. ['body']).
 */
export function assertStorableText(value: unknown, loc: (string | number)[] = ['body']): void {
  const stack: [unknown, (string | number)[]][] = [[value, loc]];
  while (stack.length) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      if (!isStorableText(item)) throw unstorable(path);
    } else if (Array.isArray(item)) {
      item.forEach((child, index) => stack.push([child, [...path, index]]));
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        if (!isStorableText(key)) throw unstorable([...path, key]);
        stack.push([child, [...path, key]]);
      }
    }
  }
}

function unstorable(loc: (string | number)[]): AppError {
  const shown = loc.map((part) => (typeof part === 'string' ? part.replace(UNSTORABLE_GLOBAL, '\ufffd') : part));
  const msg = 'text contains U+0000 or an unpaired UTF-16 surrogate, which cannot be stored';
  return new AppError('VALIDATION_FAILED', `${shown.join('.')}: ${msg}`, [{ loc: shown, msg, type: 'string_unstorable' }]);
}

const UNSTORABLE_GLOBAL = new RegExp(UNSTORABLE.source, 'g');

const BACKSLASH_U = Buffer.from('\\u');

/** mayHoldUnstorableText on bytes, without decoding the whole body to a string. */
export function mayHoldUnstorableBytes(bytes: Buffer): boolean {
  for (let at = bytes.indexOf(BACKSLASH_U); at >= 0; at = bytes.indexOf(BACKSLASH_U, at + 2)) {
    if (mayHoldUnstorableText(bytes.toString('latin1', at, at + 6))) return true;
  }
  return false;
}

// PostgreSQL's "character not in repertoire" / "untranslatable character": U+0000 or a lone surrogate
// that reached the database by a path the body guards do not see (a query parameter, a GraphQL string
// literal). The client's input, so a 422, never a 500.
const UNSTORABLE_TEXT_STATES = new Set(['22021', '22P05']);

/** VALIDATION_FAILED when `error` (or one of its causes) is PostgreSQL refusing a string; else undefined. */
export function unstorableTextFromDatabase(error: unknown): AppError | undefined {
  let cause = error as { code?: unknown; originalCode?: unknown; meta?: any; cause?: unknown } | undefined;
  for (let hops = 0; cause && typeof cause === 'object' && hops < 5; hops++) {
    // pg puts the SQLSTATE in `code`; Prisma's driver adapter under meta.driverAdapterError.
    const states = [cause.code, cause.originalCode, cause.meta?.driverAdapterError?.cause?.originalCode];
    if (states.some((state) => typeof state === 'string' && UNSTORABLE_TEXT_STATES.has(state))) {
      const msg = 'text contains U+0000 or an unpaired UTF-16 surrogate, which cannot be stored';
      return new AppError('VALIDATION_FAILED', msg, [{ loc: ['request'], msg, type: 'string_unstorable' }]);
    }
    cause = cause.cause as typeof cause;
  }
  return undefined;
}
