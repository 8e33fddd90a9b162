// Bad input always gets a 4xx in the surface's own shape, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let key: string;

beforeAll(async () => {
  platform = await startTestPlatform({ config: { AGENT_PLATFORM_BODY_LIMIT: '2kb' } });
  key = (await buildTenant(platform.system)).adminKey;
});
afterAll(() => platform?.stop());

const post = (path: string, body: string, contentType = 'application/json') =>
  fetch(`${platform.url}${path}`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': key }, body });

describe('platform REST (FastAPI dialect)', () => {
  it('malformed JSON is 422 with a body location', async () => {
    const response = await post('/api/v1/workspaces', '{"display_name": ');
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] });
  });

  it('wrong types and missing fields are 422 with each location', async () => {
    const wrongType = await post('/api/v1/workspaces', JSON.stringify({ display_name: 42 }));
    expect(wrongType.status).toBe(422);
    expect((await wrongType.json()).detail[0]).toMatchObject({ loc: ['body', 'display_name'], type: 'invalid_type' });

    const missing = await post('/api/v1/workspaces', '{}');
    expect(missing.status).toBe(422);
    expect((await missing.json()).detail[0].loc).toEqual(['body', 'display_name']);

    const notObject = await post('/api/v1/workspaces', '[1,2]');
    expect(notObject.status).toBe(422);
  });

  it('an empty name is a validation error, not a row', async () => {
    const response = await post('/api/v1/workspaces', JSON.stringify({ display_name: '   ' }));
    expect(response.status).toBe(422);
    expect((await response.json()).detail[0].loc).toEqual(['name']);
  });

  it('oversized bodies are 413 {detail}', async () => {
    const response = await post('/api/v1/workspaces', JSON.stringify({ display_name: 'x'.repeat(4096) }));
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ detail: 'Request body is too large.' });
  });

  it('a duplicate workspace name is 409', async () => {
    expect((await post('/api/v1/workspaces', JSON.stringify({ display_name: 'twice' }))).status).toBe(200);
    const again = await post('/api/v1/workspaces', JSON.stringify({ display_name: 'twice' }));
    expect(again.status).toBe(409);
    expect((await again.json()).detail).toMatch(/already exists/);
    // Sent at once, past each other's check for the name: one is made, the others are 409 too.
    const together = await Promise.all(Array.from({ length: 6 }, () => post('/api/v1/workspaces', JSON.stringify({ display_name: 'at once' }))));
    expect(together.map((response) => response.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    for (const response of together.filter((answer) => answer.status === 409)) expect((await response.json()).detail).toMatch(/already exists/);
  });

  it('unknown paths are 404 {detail}', async () => {
    const response = await fetch(`${platform.url}/api/v1/nope`, { headers: { 'x-api-key': key } });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: expect.stringContaining('/api/v1/nope') });
    const root = await fetch(`${platform.url}/nowhere`);
    expect(root.status).toBe(404);
  });

  it('a malformed id in a path is 404, not 500', async () => {
    const response = await fetch(`${platform.url}/api/v1/api-key/not-a-uuid`, { method: 'DELETE', headers: { 'x-api-key': key } });
    expect(response.status).toBe(404);
  });
});

describe('GraphQL', () => {
  it('malformed JSON is 400 in GraphQL’s error shape', async () => {
    const response = await post('/graphql', '{"query": ');
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].extensions.code).toBe('VALIDATION_FAILED');
  });

  it('oversized operations are 413', async () => {
    const response = await post('/graphql', JSON.stringify({ query: `{ viewer { user { email } } } #${'x'.repeat(4096)}` }));
    expect(response.status).toBe(413);
    expect((await response.json()).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });

  // GraphQL over HTTP: request errors are 400 for `application/graphql-response+json` clients and
  // 200 with `errors` for legacy `application/json` ones; never a 500, never masked.
  const operation = (body: unknown, accept: string) =>
    fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, 'x-api-key': key },
      body: JSON.stringify(body),
    });

  it('syntax errors and unknown fields are request errors with a location', async () => {
    for (const query of ['{ viewer { ', '{ nope }']) {
      const modern = await operation({ query }, 'application/graphql-response+json');
      expect(modern.status).toBe(400);
      expect((await modern.json()).errors[0].locations[0]).toMatchObject({ line: 1 });
      const legacy = await operation({ query }, 'application/json');
      expect(legacy.status).toBe(200);
      expect((await legacy.json()).errors[0].message).not.toMatch(/Unexpected error/);
    }
  });

  it('wrong variable types are request errors', async () => {
    const response = await operation(
      { query: 'query($id: ID!) { workspace(id: $id) { id } }', variables: { id: { a: 1 } } },
      'application/graphql-response+json',
    );
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].message).toMatch(/\$id/);
  });

  it('input validation failures come back as a typed AppError with issues', async () => {
    const response = await post('/graphql', JSON.stringify({ query: 'mutation { createWorkspace(input: {name: ""}) { ... on AppError { code issues { loc msg } } } }' }));
    expect(response.status).toBe(200);
    const { data } = await response.json();
    expect(data.createWorkspace).toMatchObject({ code: 'VALIDATION_FAILED', issues: [{ loc: ['name'] }] });
  });
});
