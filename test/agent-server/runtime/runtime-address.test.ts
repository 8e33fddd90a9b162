import { describe, expect, it } from 'vitest';
import { advertisedHost } from '../../../src/contracts/launcher-protocol.js';

// A runtime records where the agent server's api reaches it (runtimes.url), and a deployment's agent
// server where the gateway reaches it (the platform's deployment_runtimes.url); a process on another
// machine cannot reach "0.0.0.0" or another machine's loopback.
describe('the address a runtime advertises', () => {
  it('is the bound address when the runtime binds one', () => {
    expect(advertisedHost('127.0.0.1', 'https://agents.example.com')).toBe('127.0.0.1');
    expect(advertisedHost('10.0.0.5', undefined)).toBe('10.0.0.5');
    expect(advertisedHost('::1', undefined)).toBe('[::1]');
  });

  it('is the public URL\'s host when the runtime binds every interface, else loopback', () => {
    expect(advertisedHost('0.0.0.0', 'https://agents.example.com:8443/base')).toBe('agents.example.com');
    expect(advertisedHost('::', 'http://[fd00::7]:4100')).toBe('[fd00::7]');
    expect(advertisedHost('0.0.0.0', undefined)).toBe('127.0.0.1');
  });
});
