// Encryption at rest of the agent server's data, as the reference server's LANGGRAPH_AES_KEY does it:
// checkpoint blobs and writes (through the checkpointer's serializer, runtime/encrypted-serde.ts) and
// run stream events are encrypted whole; in thread, assistant, run, cron, store and checkpoint-metadata
// JSON, the values of the keys named by LANGGRAPH_AES_JSON_KEYS are, wherever they appear.
//
// AES-GCM with a random 96-bit nonce per value. Every ciphertext starts with a version byte and the id
// of the key that sealed it (the first 8 bytes of the key's SHA-256), so a value sealed by the
// previous key (LANGGRAPH_AES_KEY_PREVIOUS) still opens after a rotation, and data written before
// encryption was turned on (no envelope) reads as it was.
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

export class AtRestEncryption {
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

// One per process config (every service and the runtime reach the config through their context).
const ofConfig = new WeakMap<object, AtRestEncryption | null>();

/** The encryption at rest the process's config asks for (LANGGRAPH_AES_KEY…); undefined when none: data is stored as given. */
export function encryptionOf(config: Pick<Config, 'encryption'>): AtRestEncryption | undefined {
  let encryption = ofConfig.get(config);
  if (encryption === undefined) {
    encryption = config.encryption ? new AtRestEncryption(config.encryption) : null;
    ofConfig.set(config, encryption);
  }
  return encryption ?? undefined;
}

/** `value` with its configured JSON keys' values encrypted, as stored (unchanged without encryption). */
export function sealJson<T>(config: Pick<Config, 'encryption'>, value: T): T {
  const encryption = encryptionOf(config);
  return encryption ? encryption.encryptJson(value) : value;
}

/** `value` as read from the database, its encrypted values opened (unchanged without encryption). */
export function openJson<T>(config: Pick<Config, 'encryption'>, value: T): T {
  const encryption = encryptionOf(config);
  return encryption ? encryption.decryptJson(value) : value;
}

/** The JSON text `json` with its configured JSON keys' values encrypted (a run's output, serialised once by the runtime). */
export function sealJsonText(config: Pick<Config, 'encryption'>, json: string): string {
  const encryption = encryptionOf(config);
  return encryption?.encryptsJson ? JSON.stringify(encryption.encryptJson(JSON.parse(json))) : json;
}
