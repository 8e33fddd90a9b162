// Secrets at rest: AES-256-GCM, tamper-evident, with a key from configuration or the data directory.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSecretBox, resolveSecretKey } from '../../src/crypto.js';

describe('secret box', () => {
  const box = createSecretBox(randomBytes(32));

  it('round-trips and never shows the plaintext in the sealed form', () => {
    const sealed = box.encrypt('aws-secret-key/with+symbols');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('aws-secret-key');
    expect(box.decrypt(sealed)).toBe('aws-secret-key/with+symbols');
    // A fresh IV each time: equal secrets do not look equal at rest.
    expect(box.encrypt('same')).not.toBe(box.encrypt('same'));
  });

  it('refuses tampered ciphertext and a different key', () => {
    const sealed = box.encrypt('value');
    const parts = sealed.split('.');
    const data = Buffer.from(parts[3]!, 'base64url');
    data[0] = (data[0] ?? 0) ^ 1;
    parts[3] = data.toString('base64url');
    expect(() => box.decrypt(parts.join('.'))).toThrow();
    expect(() => createSecretBox(randomBytes(32)).decrypt(sealed)).toThrow();
    expect(() => box.decrypt('not sealed')).toThrow(/Unrecognised/);
  });
});

describe('secret key resolution', () => {
  it('generates a key into the embedded data directory once, private to the owner, and reuses it', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-key-'));
    const first = resolveSecretKey({ dataDir, embedded: true });
    expect(first).toHaveLength(32);
    expect(statSync(join(dataDir, 'secret-key')).mode & 0o077).toBe(0);
    expect(resolveSecretKey({ dataDir, embedded: true }).equals(first)).toBe(true);
    expect(readFileSync(join(dataDir, 'secret-key'), 'utf8').trim()).toBe(first.toString('base64'));
  });

  it('requires a configured key with an external database', () => {
    expect(() => resolveSecretKey({ dataDir: tmpdir(), embedded: false })).toThrow(/AGENT_PLATFORM_SECRET_KEY is required/);
    const configured = randomBytes(32);
    expect(resolveSecretKey({ configured, dataDir: tmpdir(), embedded: false })).toBe(configured);
  });
});
