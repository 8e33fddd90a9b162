import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('has working defaults for the embedded set-up', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ databaseUrl: undefined, port: 4100, dataDir: resolve('.data'), roles: ['api', 'worker', 'runtime'], bodyLimit: '10mb' });
  });

  it('lets CLI flags override the environment and treats empty variables as unset', () => {
    const config = loadConfig({ PORT: '5000', AGENT_PLATFORM_DATA_DIR: '' }, { PORT: '6000', AGENT_PLATFORM_ROLES: 'worker, runtime' });
    expect(config.port).toBe(6000);
    expect(config.dataDir).toBe(resolve('.data'));
    expect(config.roles).toEqual(['worker', 'runtime']);
  });

  it('resolves a relative data directory once, against the working directory it starts in', () => {
    expect(loadConfig({ AGENT_PLATFORM_DATA_DIR: 'here/data' }).dataDir).toBe(resolve(process.cwd(), 'here/data'));
    expect(loadConfig({}, { AGENT_PLATFORM_DATA_DIR: '/srv/agent-platform' }).dataDir).toBe('/srv/agent-platform');
  });

  it('lists every problem at once', () => {
    try {
      loadConfig({ PORT: '99999', AGENT_PLATFORM_ROLES: 'api,cook', AGENT_PLATFORM_SECRET_KEY: 'short', AGENT_PLATFORM_BODY_LIMIT: 'lots' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const fields = (error as ConfigError).problems.map((problem) => problem.split(':')[0]);
      expect(fields).toEqual(expect.arrayContaining(['PORT', 'AGENT_PLATFORM_ROLES.1', 'AGENT_PLATFORM_SECRET_KEY', 'AGENT_PLATFORM_BODY_LIMIT']));
    }
  });
});
