// Secrets at rest (deployment secrets, OAuth client secrets, bucket credentials): AES-256-GCM with a
// key from configuration. Ciphertext format: "v1.<iv>.<tag>.<data>", each part base64url, so the
// version prefix lets the scheme change without guessing.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export type SecretBox = {
  encrypt(plaintext: string): string;
  decrypt(sealed: string): string;
  /** A MAC of `message`: processes sharing the secret key prove themselves to each other with it. */
  sign(message: string): string;
  /** Whether `signature` is sign(message). */
  verify(message: string, signature: string): boolean;
  /**
   * A box of its own keyed by a key derived from this one and `label`: what a process that must not
   * hold the installation's key (a deployment's agent server) is given, so that the installation can still
   * sign for it without storing a second secret.
   */
  derive(label: string): { key: Buffer; box: SecretBox };
};

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('The secret key must be 32 bytes.');
  // A key of its own for MACs, derived from the secret key, so no one key serves two algorithms.
  const macKey = createHmac('sha256', key).update('agent-platform:mac-key').digest();
  const sign = (message: string) => createHmac('sha256', macKey).update(message).digest('base64url');
  return {
    sign,
    derive(label) {
      const derived = createHmac('sha256', key).update(`agent-platform:derived-key:${label}`).digest();
      return { key: derived, box: createSecretBox(derived) };
    },
    verify(message, signature) {
      const expected = Buffer.from(sign(message));
      const given = Buffer.from(signature);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
    encrypt(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), data].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
    },
    decrypt(sealed) {
      const [version, iv, tag, data] = sealed.split('.');
      if (version !== 'v1' || iv === undefined || tag === undefined || data === undefined) {
        throw new Error('Unrecognised secret format.');
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The configured key, or for the embedded database a key generated into the data directory on first
 * start. An external database without a configured key is refused: a generated key on one machine
 * would make the secrets unreadable by every other replica.
 */
/** The data directory's file of the generated key (embedded database only). */
export const SECRET_KEY_FILE = 'secret-key';

export function resolveSecretKey(options: { configured?: Buffer; dataDir: string; embedded: boolean }): Buffer {
  if (options.configured) return options.configured;
  if (!options.embedded) {
    throw new Error(
      'AGENT_PLATFORM_SECRET_KEY is required with an external DATABASE_URL (32 random bytes, base64: `openssl rand -base64 32`).',
    );
  }
  const dir = resolve(options.dataDir);
  const file = join(dir, SECRET_KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600 });
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
}
