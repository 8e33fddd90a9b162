// API key secrets: shown once at creation, stored only as a SHA-256 hash. The keys carry 240 bits of
// randomness, so a fast hash is safe here (a slow KDF would only slow down every request).
import { createHash, randomBytes } from 'node:crypto';

const PREFIX = 'apk_';

export function generateApiKeySecret(): { key: string; shortKey: string; secretHash: string } {
  const key = `${PREFIX}${randomBytes(30).toString('base64url')}`;
  return { key, shortKey: shortKeyOf(key), secretHash: hashApiKey(key) };
}

export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

/** A display form that identifies a key without revealing it, e.g. `apk_3fA9…x2Qw`. */
const shortKeyOf = (key: string): string => `${key.slice(0, PREFIX.length + 4)}...${key.slice(-4)}`;
