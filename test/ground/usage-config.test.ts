// The usage data start date: the spec's cloud date by default, an ISO date or date-time otherwise.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('AGENT_PLATFORM_USAGE_DATA_START', () => {
  it('defaults to 5 January 2026 and reads a date as midnight UTC, a date-time as given', () => {
    expect(loadConfig({}).usageDataStart.toISOString()).toBe('2026-01-05T00:00:00.000Z');
    expect(loadConfig({ AGENT_PLATFORM_USAGE_DATA_START: '2025-07-01' }).usageDataStart.toISOString()).toBe('2025-07-01T00:00:00.000Z');
    expect(loadConfig({ AGENT_PLATFORM_USAGE_DATA_START: '2025-07-01T12:30:00+02:00' }).usageDataStart.toISOString()).toBe('2025-07-01T10:30:00.000Z');
  });

  it('names the setting when the value is not a date', () => {
    expect(() => loadConfig({ AGENT_PLATFORM_USAGE_DATA_START: 'last spring' })).toThrow(ConfigError);
    try {
      loadConfig({ AGENT_PLATFORM_USAGE_DATA_START: 'last spring' });
    } catch (error) {
      expect((error as ConfigError).problems.join('\n')).toContain('AGENT_PLATFORM_USAGE_DATA_START');
    }
  });
});
