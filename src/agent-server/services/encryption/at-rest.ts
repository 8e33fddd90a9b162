// Encryption at rest of the agent server's data, as the reference server does it: built in, with
// LANGGRAPH_AES_KEY (below), or by the project's own handlers (langgraph.json `encryption.path`,
// CustomEncryption). Every read and write of the data goes through one AtRestCipher (encryptionOf).
//
// Built in:
// checkpoint blobs and writes (through the checkpointer's serializer, runtime/encrypted-serde.ts) and
// run stream events are encrypted whole; in thread, assistant, run, cron, store and checkpoint-metadata
// JSON, the values of the keys named by LANGGRAPH_AES_JSON_KEYS are, wherever they appear.
//
// AES-GCM with a random 96-bit nonce per value. Every ciphertext starts with a version byte and the id
// of the key that sealed it (the first 8 bytes of the key's SHA-256), so a value sealed by the
// previous key (LANGGRAPH_AES_KEY_PREVIOUS) still opens after a rotation, and data written before
// encryption was turned on (no envelope) reads as it was.
import { AsyncLocalStorage } from 'node:async_hooks';
import { type CipherGCMTypes, createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Config } from '../../../config.js';

const VERSION = 1;
const KEY_ID_BYTES = 8;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + NONCE_BYTES + TAG_BYTES;
/** How an encrypted JSON value or stream event is stored: this prefix, then the envelope in base64. */
const TEXT_PREFIX = 'enc:v1:';

// Fields of the server's own in metadata, which it reads and filters on; never encrypted (as there).
const SYSTEM_KEYS = new Set([
  'langgraph_version',
  'langgraph_api_version',
  'langgraph_plan',
  'langgraph_host',
  'langgraph_api_url',
  'langgraph_request_id',
  'langgraph_auth_user_id',
  'langgraph_auth_permissions',
]);

type Key = { id: Buffer; bytes: Buffer; algorithm: CipherGCMTypes };

function aesKey(text: string): Key {
  const bytes = Buffer.from(text, 'utf8');
  if (![16, 24, 32].includes(bytes.length)) throw new Error(`An AES key must be 16, 24 or 32 bytes, not ${bytes.length}`);
  return { id: createHash('sha256').update(bytes).digest().subarray(0, KEY_ID_BYTES), bytes, algorithm: `aes-${bytes.length * 8}-gcm` as CipherGCMTypes };
}

export class AtRestEncryption implements AtRestCipher {
  readonly mark = 'aes';
  private readonly current: Key;
  private readonly keys: Key[];
  private readonly jsonKeys: ReadonlySet<string>;

  constructor(settings: { key: string; previousKey?: string; jsonKeys?: readonly string[] }) {
    this.current = aesKey(settings.key);
    this.keys = [this.current, ...(settings.previousKey ? [aesKey(settings.previousKey)] : [])];
    this.jsonKeys = new Set((settings.jsonKeys ?? []).filter((key) => !SYSTEM_KEYS.has(key)));
  }

  encryptBytes(plain: Uint8Array): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv(this.current.algorithm, this.current.bytes, nonce);
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), this.current.id, nonce, cipher.getAuthTag(), sealed]);
  }

  /** Opens what encryptBytes sealed, with whichever configured key sealed it; throws when none did or it was altered. */
  decryptBytes(envelope: Uint8Array): Buffer {
    const data = Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength);
    if (data.length < HEADER_BYTES || data[0] !== VERSION) throw new Error('Not data encrypted at rest (unknown envelope)');
    const keyId = data.subarray(1, 1 + KEY_ID_BYTES);
    const key = this.keys.find((candidate) => candidate.id.equals(keyId));
    if (!key) throw new Error(`Data encrypted at rest with a key not configured (key id ${keyId.toString('hex')}): set LANGGRAPH_AES_KEY_PREVIOUS to the key it was written with`);
    const nonce = data.subarray(1 + KEY_ID_BYTES, 1 + KEY_ID_BYTES + NONCE_BYTES);
    const decipher = createDecipheriv(key.algorithm, key.bytes, nonce);
    decipher.setAuthTag(data.subarray(1 + KEY_ID_BYTES + NONCE_BYTES, HEADER_BYTES));
    return Buffer.concat([decipher.update(data.subarray(HEADER_BYTES)), decipher.final()]);
  }

  /** A string stored encrypted (a run's stream event). */
  encryptText(plain: string): string {
    return TEXT_PREFIX + this.encryptBytes(Buffer.from(plain, 'utf8')).toString('base64');
  }

  /** The string encryptText stored; a string stored before encryption was on comes back as it is. */
  decryptText(stored: string): string {
    return stored.startsWith(TEXT_PREFIX) ? this.decryptBytes(Buffer.from(stored.slice(TEXT_PREFIX.length), 'base64')).toString('utf8') : stored;
  }

  /** Whether any JSON key is encrypted (else the JSON passes unchanged and nothing needs walking). */
  get encryptsJson(): boolean {
    return this.jsonKeys.size > 0;
  }

  /**
   * A copy of `value` with the value of every configured JSON key, at any depth, replaced by its
   * encrypted JSON (a string). Keys stay as they are: metadata merges (`||`) work key by key, and
   * containment filters on other keys still match.
   */
  encryptJson<T>(value: T): T {
    if (!this.jsonKeys.size) return value;
    return this.walk(value, (key, inner) => (this.jsonKeys.has(key) && inner !== undefined ? this.encryptText(JSON.stringify(inner)) : undefined)) as T;
  }

  /** The inverse of encryptJson: every encrypted value, under any key, opened (so a key dropped from the list still reads). */
  decryptJson<T>(value: T): T {
    return this.walk(value, (_key, inner) => (typeof inner === 'string' && inner.startsWith(TEXT_PREFIX) ? JSON.parse(this.decryptText(inner)) : undefined)) as T;
  }

  async sealBytes(plain: Uint8Array): Promise<Uint8Array> {
    return this.encryptBytes(plain);
  }

  async openBytes(sealed: Uint8Array): Promise<Uint8Array> {
    return this.decryptBytes(sealed);
  }

  async sealText(plain: string): Promise<string> {
    return this.encryptText(plain);
  }

  async openText(stored: string): Promise<string> {
    return this.decryptText(stored);
  }

  async sealJson<T>(value: T): Promise<T> {
    return this.encryptJson(value);
  }

  async openJson<T>(value: T): Promise<T> {
    return this.decryptJson(value);
  }

  /** Whether `data` is an envelope of this cipher (an older one's data may be read by another). */
  static sealedBytes(data: Uint8Array): boolean {
    return data.length >= HEADER_BYTES && data[0] === VERSION;
  }

  static sealedText(stored: string): boolean {
    return stored.startsWith(TEXT_PREFIX);
  }

  /** Rebuilds objects and arrays, replacing a keyed value where `replace` returns one (and not descending into it). */
  private walk(value: unknown, replace: (key: string, inner: unknown) => unknown): unknown {
    if (Array.isArray(value)) return value.map((item) => this.walk(item, replace));
    if (value === null || typeof value !== 'object' || value instanceof Date) return value;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      const replaced = replace(key, inner);
      out[key] = replaced !== undefined ? replaced : this.walk(inner, replace);
    }
    return out;
  }
}


/** What is being sealed or opened: the reference server's model (resource) and field names. */
export type SealedField = { model: 'assistant' | 'thread' | 'run' | 'cron' | 'store' | 'checkpoint'; field: string };

/**
 * One way of encrypting the agent server's data at rest. Bytes and text are sealed whole (checkpoint
 * blobs and writes, run stream events); JSON keeps its keys (metadata merges and filters on other keys
 * work key by key), only values change.
 */
export interface AtRestCipher {
  /** What the checkpointer's serializer appends to a sealed blob's type (`json+aes`). */
  readonly mark: string;
  sealBytes(plain: Uint8Array, where: SealedField): Promise<Uint8Array>;
  openBytes(sealed: Uint8Array, where: SealedField): Promise<Uint8Array>;
  sealText(plain: string, where: SealedField): Promise<string>;
  /** Text stored before encryption was on comes back as it is. */
  openText(stored: string, where: SealedField): Promise<string>;
  sealJson<T>(value: T, where: SealedField): Promise<T>;
  openJson<T>(value: T, where: SealedField): Promise<T>;
}

/** What the project's handlers receive, as the reference's `EncryptionContext`: model, field, and the context's metadata. */
type EncryptionContext = { model: string | null; field: string | null; metadata: Record<string, unknown> };

type Json = Record<string, unknown>;

/**
 * The project's encryption module (langgraph.json `encryption.path`), the reference's `Encryption`
 * adapted to JS: `encrypt.blob`/`decrypt.blob` (bytes to bytes), `encrypt.json`/`decrypt.json` (an
 * object to an object with the same keys) and `context` (the authenticated user to the metadata
 * every handler of the request then sees, stored with what it seals). Every handler is optional.
 */
export type EncryptionHandlers = {
  encrypt?: { blob?: (ctx: EncryptionContext, blob: Uint8Array) => Promise<Uint8Array>; json?: (ctx: EncryptionContext, data: Json) => Promise<Json> };
  decrypt?: { blob?: (ctx: EncryptionContext, blob: Uint8Array) => Promise<Uint8Array>; json?: (ctx: EncryptionContext, data: Json) => Promise<Json> };
  context?: (user: unknown, ctx: EncryptionContext) => Promise<Json> | Json;
};

// The context of the request (set after authentication) or of the run being executed (from its kwargs).
const currentContext = new AsyncLocalStorage<Json>();

/** Runs `work` with `metadata` (when given) as the encryption context its seals store and hand to the project's handlers. */
export function withEncryptionContext<T>(metadata: Json | undefined, work: () => T): T {
  return metadata ? currentContext.run(metadata, work) : work();
}

/** The encryption context of the request or run this is part of (undefined outside one). */
export function currentEncryptionContext(): Json | undefined {
  return currentContext.getStore();
}

/** The encryption context a JSON object the project's handler sealed was stored with (what the runtime executes a run in). */
export function storedEncryptionContext(value: unknown): Json | undefined {
  const stored = value !== null && typeof value === 'object' ? (value as Json)[CONTEXT_KEY] : undefined;
  return isObject(stored) ? stored : undefined;
}

// A JSON object the project's handler sealed carries the context it was sealed in under this key (the
// server's, not the handler's: handlers may not add keys), which also says it must be opened.
const CONTEXT_KEY = '__encryption_context__';
// A blob or text the project's handler sealed: this version byte, the context's length (4 bytes) and
// JSON, then the handler's bytes.
const CUSTOM_VERSION = 2;
const CUSTOM_TEXT_PREFIX = 'cenc:v1:';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);

/**
 * The project's handlers as the cipher. What they do not handle is stored as given (blobs and text
 * without blob handlers, JSON without JSON handlers); data the built-in AES sealed before still opens
 * when LANGGRAPH_AES_KEY is set beside them.
 */
export class CustomEncryption implements AtRestCipher {
  readonly mark = 'custom';

  constructor(
    private readonly handlers: EncryptionHandlers,
    private readonly aes: AtRestEncryption | undefined,
    private readonly source: string,
  ) {}

  // Outside a request or a run (the server's own writes: default assistants at start), the context
  // handler's for no user.
  private async currentMetadata(): Promise<Json> {
    return currentContext.getStore() ?? (await this.contextFor(null));
  }

  /** The context handler's metadata for a request by `user` (empty without a context handler). */
  async contextFor(user: unknown): Promise<Json> {
    if (!this.handlers.context) return {};
    const metadata = await this.handlers.context(user, { model: null, field: null, metadata: {} });
    if (!isObject(metadata)) throw new Error(`The encryption context handler of ${this.source} returned ${typeof metadata}, not an object`);
    return metadata;
  }

  async sealBytes(plain: Uint8Array, where: SealedField): Promise<Uint8Array> {
    const encrypt = this.handlers.encrypt?.blob;
    if (!encrypt) return plain;
    const metadata = await this.currentMetadata();
    const sealed = await encrypt({ ...where, metadata }, plain);
    const context = Buffer.from(JSON.stringify(metadata), 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(context.length);
    return Buffer.concat([Buffer.from([CUSTOM_VERSION]), length, context, sealed]);
  }

  async openBytes(sealed: Uint8Array, where: SealedField): Promise<Uint8Array> {
    const data = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    if (data[0] !== CUSTOM_VERSION) {
      if (!AtRestEncryption.sealedBytes(data)) return data;
      if (!this.aes) throw new Error('Data sealed with LANGGRAPH_AES_KEY, which is not set');
      return this.aes.decryptBytes(data);
    }
    const decrypt = this.handlers.decrypt?.blob;
    if (!decrypt) throw new Error(`Data sealed by an encrypt.blob handler, and ${this.source} has no decrypt.blob`);
    const length = data.readUInt32BE(1);
    const metadata = JSON.parse(data.subarray(5, 5 + length).toString('utf8')) as Json;
    return decrypt({ ...where, metadata }, data.subarray(5 + length));
  }

  async sealText(plain: string, where: SealedField): Promise<string> {
    if (!this.handlers.encrypt?.blob) return plain;
    return CUSTOM_TEXT_PREFIX + Buffer.from(await this.sealBytes(Buffer.from(plain, 'utf8'), where)).toString('base64');
  }

  async openText(stored: string, where: SealedField): Promise<string> {
    if (stored.startsWith(CUSTOM_TEXT_PREFIX)) return Buffer.from(await this.openBytes(Buffer.from(stored.slice(CUSTOM_TEXT_PREFIX.length), 'base64'), where)).toString('utf8');
    return this.aes && AtRestEncryption.sealedText(stored) ? this.aes.decryptText(stored) : stored;
  }

  /** An object through the project's encrypt.json, checked to keep its keys, stored with its context. */
  async sealJson<T>(value: T, where: SealedField): Promise<T> {
    const encrypt = this.handlers.encrypt?.json;
    if (!encrypt || !isObject(value)) return value;
    const metadata = await this.currentMetadata();
    const sealed = await encrypt({ ...where, metadata }, value);
    this.assertSameKeys('encrypt.json', where, value, sealed);
    return { ...sealed, [CONTEXT_KEY]: metadata } as T;
  }

  async openJson<T>(value: T, where: SealedField): Promise<T> {
    const opened = this.aes ? this.aes.decryptJson(value) : value;
    if (!isObject(opened) || !(CONTEXT_KEY in opened)) return opened;
    const { [CONTEXT_KEY]: metadata, ...sealed } = opened;
    const decrypt = this.handlers.decrypt?.json;
    if (!decrypt) throw new Error(`Data sealed by an encrypt.json handler, and ${this.source} has no decrypt.json`);
    const plain = await decrypt({ ...where, metadata: isObject(metadata) ? metadata : {} }, sealed);
    this.assertSameKeys('decrypt.json', where, sealed, plain);
    return plain as T;
  }

  // Partial updates merge JSON key by key (`metadata || patch`): a handler that renamed, added or
  // dropped keys would corrupt them, so it is refused, as the reference server refuses it.
  private assertSameKeys(handler: string, where: SealedField, before: Json, after: unknown): asserts after is Json {
    if (!isObject(after)) throw new Error(`The ${handler} handler of ${this.source} returned ${Array.isArray(after) ? 'an array' : typeof after} for ${where.model}.${where.field}, not an object`);
    const added = Object.keys(after).filter((key) => !(key in before));
    const removed = Object.keys(before).filter((key) => !(key in after));
    if (added.length || removed.length) {
      const change = [added.length ? `added ${added.join(', ')}` : '', removed.length ? `removed ${removed.join(', ')}` : ''].filter(Boolean).join('; ');
      throw new Error(`The ${handler} handler of ${this.source} changed the keys of ${where.model}.${where.field} (${change}): JSON handlers may only change values`);
    }
  }
}

// One per process config (every service and the runtime reach the config through their context);
// the project's handlers, once the agent server or runtime loaded them (useEncryptionHandlers).
const ofConfig = new WeakMap<object, AtRestCipher | null>();

/** The encryption at rest the process uses: the project's handlers, else LANGGRAPH_AES_KEY's; undefined when none (data is stored as given). */
export function encryptionOf(config: Pick<Config, 'encryption'>): AtRestCipher | undefined {
  let cipher = ofConfig.get(config);
  if (cipher === undefined) {
    cipher = config.encryption ? new AtRestEncryption(config.encryption) : null;
    ofConfig.set(config, cipher);
  }
  return cipher ?? undefined;
}

/** Makes the project's handlers (loaded from `source`) this process's encryption at rest, for `config`'s users. */
export function useEncryptionHandlers(config: Pick<Config, 'encryption'>, handlers: EncryptionHandlers, source: string): CustomEncryption {
  const custom = new CustomEncryption(handlers, config.encryption ? new AtRestEncryption(config.encryption) : undefined, source);
  ofConfig.set(config, custom);
  return custom;
}

/** `value` as stored: sealed by the process's encryption at rest (unchanged without one). */
export async function sealJson<T>(config: Pick<Config, 'encryption'>, where: SealedField, value: T): Promise<T> {
  const cipher = encryptionOf(config);
  return cipher ? cipher.sealJson(value, where) : value;
}

/** `value` as read from the database, opened (unchanged without encryption). */
export async function openJson<T>(config: Pick<Config, 'encryption'>, where: SealedField, value: T): Promise<T> {
  const cipher = encryptionOf(config);
  return cipher ? cipher.openJson(value, where) : value;
}

/** The JSON text `json` as stored (a run's output, serialised once by the runtime). */
export async function sealJsonText(config: Pick<Config, 'encryption'>, where: SealedField, json: string): Promise<string> {
  const cipher = encryptionOf(config);
  if (!cipher || (cipher instanceof AtRestEncryption && !cipher.encryptsJson)) return json;
  return JSON.stringify(await cipher.sealJson(JSON.parse(json) as unknown, where));
}

/**
 * `value` with only `keys` sealed (handed to the cipher as one object): the rest stays as given, for
 * the server's own flags that its SQL reads (a run's `kwargs.temporary`, …).
 */
export async function sealJsonKeys<T extends object>(config: Pick<Config, 'encryption'>, where: SealedField, value: T, keys: readonly string[]): Promise<T> {
  const cipher = encryptionOf(config);
  if (!cipher) return value;
  const part = Object.fromEntries(Object.entries(value).filter(([key, inner]) => keys.includes(key) && inner !== undefined));
  return { ...value, ...(await cipher.sealJson(part, where)) };
}

/** The inverse of sealJsonKeys. */
export async function openJsonKeys<T extends object>(config: Pick<Config, 'encryption'>, where: SealedField, value: T, keys: readonly string[]): Promise<T> {
  const cipher = encryptionOf(config);
  if (!cipher) return value;
  const sealed = Object.fromEntries(Object.entries(value).filter(([key]) => keys.includes(key) || key === CONTEXT_KEY));
  const rest = Object.fromEntries(Object.entries(value).filter(([key]) => !(key in sealed)));
  return { ...rest, ...(await cipher.openJson(sealed, where)) } as T;
}
