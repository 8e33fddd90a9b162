// Store namespace labels are encoded for PostgresStore's layout: one-to-one, and free of the
// characters that layout cannot hold, so whole-label prefixes stay exact.
import { describe, expect, it } from 'vitest';
import { decodeLabel, encodeLabel } from '../../../../src/agent-server/services/store/namespace-labels.js';

describe('namespace label encoding', () => {
  const labels = ['user_123', 'a:b', '50%', 'back\\slash', 'tilde~7E', '~', '~3A', 'plain', 'ünïcødé 🙂', ':%_\\~'];

  it('round-trips every label, and stored labels hold no : % _ \\', () => {
    for (const label of labels) {
      const stored = encodeLabel(label);
      expect(decodeLabel(stored), label).toBe(label);
      expect(stored, label).not.toMatch(/[:%_\\]/);
    }
    expect(encodeLabel('plain')).toBe('plain');
  });

  it('never maps two labels to the same stored form', () => {
    const stored = labels.map(encodeLabel);
    expect(new Set(stored).size).toBe(labels.length);
    expect(encodeLabel('a:b')).not.toBe(encodeLabel('a~3Ab'));
  });
});
