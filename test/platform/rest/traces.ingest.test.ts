// Ingestion over raw HTTP: the wire details the SDK does not exercise on its own (derived hierarchy,
// patches before posts, duplicates, zstd and chunked multipart, attachments, part lengths), the error
// dialect, permissions, tenant isolation and the workspace a key writes to.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { buildApiKey, buildTenant, buildUser, buildWorkspace } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
});
afterAll(() => platform?.stop());

type Init = { key?: string; tenant?: string; method?: string; body?: unknown; headers?: Record<string, string>; raw?: BodyInit | Buffer };

async function call(path: string, init: Init = {}) {
  const response = await fetch(`${platform.url}${path}`, {
    method: init.method ?? (init.body !== undefined || init.raw !== undefined ? 'POST' : 'GET'),
    headers: {
      ...(init.raw === undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.key === undefined ? { 'x-api-key': tenant.adminKey } : init.key ? { 'x-api-key': init.key } : {}),
      ...(init.tenant ? { 'x-tenant-id': init.tenant } : {}),
      ...init.headers,
    },
    body: (init.raw as BodyInit | undefined) ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
    ...(init.raw instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

/** A zstd frame of raw (stored) blocks: valid zstd that needs no compressor in the test. */
function zstdFrame(data: Buffer): Buffer {
  const blocks: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38])]; // magic, header, 128 KiB window
  const max = 128 * 1024;
  for (let offset = 0; offset === 0 || offset < data.length; offset += max) {
    const chunk = data.subarray(offset, offset + max);
    const last = offset + max >= data.length ? 1 : 0;
    const header = (chunk.length << 3) | last; // block type 0 = raw
    blocks.push(Buffer.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff]), chunk);
  }
  return Buffer.concat(blocks);
}

type Part = { name: string; data: Buffer | string; contentType?: string; lengthStyle?: 'param' | 'header' | 'none' };

function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----test${randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const data = Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data);
    const type = part.contentType ?? 'application/json';
    const style = part.lengthStyle ?? 'param';
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n` +
          `Content-Type: ${type}${style === 'param' ? `; length=${data.length}` : ''}\r\n` +
          (style === 'header' ? `Content-Length: ${data.length}\r\n` : '') +
          '\r\n',
      ),
      data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

const json = (value: unknown) => JSON.stringify(value);

describe('POST /runs and PATCH /runs/{id}', () => {
  it('derives trace_id and dotted_order for plain runs and their children', async () => {
    const session = `plain-${randomUUID().slice(0, 8)}`;
    const rootId = newId();
    const childId = newId();
    expect((await call('/runs', { body: { id: rootId, name: 'root', run_type: 'chain', start_time: iso(), inputs: { q: 1 }, session_name: session } })).status).toBe(202);
    expect((await call('/runs', { body: { id: childId, name: 'child', run_type: 'llm', start_time: iso(5), parent_run_id: rootId, session_name: session } })).status).toBe(202);
    const child = (await call(`/runs/${childId}`)).body;
    const root = (await call(`/runs/${rootId}`)).body;
    expect(root).toMatchObject({ trace_id: rootId, is_root: true, status: 'pending', parent_run_ids: [] });
    expect(root.dotted_order).toMatch(new RegExp(`^\\d{8}T\\d{12}Z${rootId}$`));
    expect(child).toMatchObject({ trace_id: rootId, parent_run_id: rootId, parent_run_ids: [rootId], is_root: false });
    expect(child.dotted_order.startsWith(`${root.dotted_order}.`)).toBe(true);

    const patched = await call(`/runs/${childId}`, {
      method: 'PATCH',
      body: { end_time: iso(50), outputs: { llm_output: { token_usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } } } },
    });
    expect(patched.status).toBe(202);
    expect((await call(`/runs/${childId}`)).body).toMatchObject({ status: 'success', prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  });

  it('keeps a patch that arrives before its post and merges it when the post comes', async () => {
    const id = newId();
    const patch = await call(`/runs/${id}`, { method: 'PATCH', body: { end_time: iso(100), outputs: { answer: 42 }, error: null } });
    expect(patch.status).toBe(202);
    expect((await call(`/runs/${id}`)).status).toBe(404);
    expect((await call('/runs', { body: { id, name: 'late', run_type: 'tool', start_time: iso(), inputs: {} } })).status).toBe(202);
    expect((await call(`/runs/${id}`)).body).toMatchObject({ outputs: { answer: 42 }, status: 'success', end_time: expect.any(String) });
  });

  it('answers 409 {error, details} for a duplicate post and leaves the run unchanged', async () => {
    const id = newId();
    await call('/runs', { body: { id, name: 'first', run_type: 'chain', start_time: iso() } });
    const again = await call('/runs', { body: { id, name: 'second', run_type: 'chain', start_time: iso() } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: expect.stringContaining(id), details: expect.any(String) });
    expect((await call(`/runs/${id}`)).body.name).toBe('first');
    // In a batch, the new runs are stored and the duplicate is named.
    const fresh = newId();
    const batch = await call('/runs/batch', { body: { post: [{ id, name: 'x', run_type: 'chain' }, { id: fresh, name: 'fresh', run_type: 'chain' }] } });
    expect(batch.status).toBe(409);
    expect((await call(`/runs/${fresh}`)).status).toBe(200);
  });

  it('stores and patches the same runs sent by concurrent requests in opposite orders: no request fails', async () => {
    for (let round = 0; round < 5; round++) {
      const ids = Array.from({ length: 50 }, () => newId());
      const posts = (order: string[]) => order.map((id) => ({ id, name: `r-${round}`, run_type: 'chain', start_time: iso(), inputs: {} }));
      // Posts alone go through the shared insert of the ingest threads' writers; with a patch, a batch
      // is stored in a transaction of its own. Either way one request stores the runs, and the other
      // finds each one stored already.
      const again = Array.from({ length: 50 }, () => newId());
      const marker = { id: newId(), end_time: iso() };
      const stored = await Promise.all([
        call('/runs/batch', { body: { post: posts(ids) } }),
        call('/runs/batch', { body: { post: posts(ids.toReversed()) } }),
        call('/runs/batch', { body: { post: posts(again), patch: [marker] } }),
        call('/runs/batch', { body: { post: posts(again.toReversed()), patch: [marker] } }),
      ]);
      expect(stored.slice(0, 2).map((answer) => answer.status).sort()).toEqual([202, 409]);
      expect(stored.slice(2).map((answer) => answer.status).sort()).toEqual([202, 409]);
      const patch = (order: string[], n: number) => ({ patch: order.map((id) => ({ id, end_time: iso(), outputs: { n } })) });
      const patched = await Promise.all([1, 2, 3, 4].map((n) => call('/runs/batch', { body: patch(n % 2 ? ids : ids.toReversed(), n) })));
      expect(patched.map((answer) => answer.status)).toEqual([202, 202, 202, 202]);
      expect((await call(`/runs/${ids[0]}`)).body).toMatchObject({ status: 'success', outputs: { n: expect.any(Number) } });
    }
  });

  it('validates runs with locations in the ingest dialect', async () => {
    const bad = await call('/runs/batch', { body: { post: [{ id: newId(), name: 'ok', run_type: 'chain' }, { id: newId(), name: 'x', run_type: 'banana' }] } });
    expect(bad.status).toBe(422);
    expect(bad.body.details).toMatch(/post\.1\.run_type/);
    expect((await call('/runs', { body: { name: 'no type' } })).status).toBe(422);
    expect((await call('/runs', { body: { name: 'x', run_type: 'chain', start_time: 'yesterday' } })).status).toBe(422);
    expect((await call('/runs', { raw: '{"name":', headers: { 'content-type': 'application/json' } })).status).toBe(422);
    expect((await call('/runs', { body: { name: 'x', run_type: 'chain', parent_run_id: newId() } })).status).toBe(404);
    expect((await call('/runs/not-a-uuid', { method: 'PATCH', body: {} })).status).toBe(422);
    // NUL characters and lone surrogates are stored (cleaned), not a 500.
    const id = newId();
    expect((await call('/runs', { body: { id, name: 'nul\u0000name', run_type: 'chain', inputs: { text: 'a\u0000b\ud800c' } } })).status).toBe(202);
    expect((await call(`/runs/${id}`)).body.inputs).toEqual({ text: 'ab\ufffdc' });
  });

  it('stores text and list values with quotes, backslashes, commas, braces and NULL exactly as sent', async () => {
    const id = newId();
    const awkward = 'say "hi", {x} \\ NULL';
    const tags = ['q"uote', 'back\\slash', 'comma,brace{}', 'NULL', '', ' spaced '];
    const response = await call('/runs/batch', {
      body: { post: [{ id, name: awkward, run_type: 'chain', start_time: iso(), end_time: iso(5), error: awkward, tags, extra: { metadata: { thread_id: awkward } } }] },
    });
    expect(response.status).toBe(202);
    expect((await call(`/runs/${id}`)).body).toMatchObject({ name: awkward, error: awkward, tags, thread_id: awkward, status: 'error' });
  });

  it('accepts gzip JSON bodies', async () => {
    const id = newId();
    const response = await call('/runs/batch', {
      raw: gzipSync(json({ post: [{ id, name: 'gz', run_type: 'chain', start_time: iso() }], patch: [] })),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(response.status).toBe(202);
    expect((await call(`/runs/${id}`)).body.name).toBe('gz');
    const unknown = await call('/runs', { raw: 'x', headers: { 'content-type': 'application/json', 'content-encoding': 'lzma' } });
    expect(unknown.status).toBe(400);
  });
});

describe('POST /runs/multipart', () => {
  function traceParts(session: string) {
    const rootId = newId();
    const childId = newId();
    const start = new Date();
    const stamp = (date: Date, id: string) => `${date.toISOString().replace(/[-:]/g, '').replace('.', '').replace('Z', '000Z')}${id}`;
    const rootOrder = stamp(start, rootId);
    const childOrder = `${rootOrder}.${stamp(new Date(start.getTime() + 1), childId)}`;
    const parts: Part[] = [
      { name: `post.${rootId}`, data: json({ name: 'mp-root', run_type: 'chain', start_time: start.toISOString(), trace_id: rootId, dotted_order: rootOrder, session_name: session }) },
      { name: `post.${rootId}.inputs`, data: json({ question: 'héllo' }), lengthStyle: 'header' },
      { name: `post.${childId}`, data: json({ name: 'mp-child', run_type: 'llm', start_time: start.toISOString(), trace_id: rootId, dotted_order: childOrder, parent_run_id: rootId, session_name: session }) },
      { name: `post.${childId}.outputs`, data: json({ usage_metadata: { input_tokens: 5, output_tokens: 6, total_tokens: 11, total_cost: 0.25 } }), lengthStyle: 'none' },
      { name: `patch.${rootId}`, data: json({ end_time: new Date(start.getTime() + 20).toISOString(), trace_id: rootId, dotted_order: rootOrder }) },
      { name: `patch.${rootId}.outputs`, data: json({ answer: 'ok' }) },
      { name: `attachment.${childId}.image`, data: Buffer.from([0, 255, 13, 10, 45, 45, 1, 2]), contentType: 'image/png' },
    ];
    return { rootId, childId, parts };
  }

  it('stores runs, fields, patches and binary attachments from a zstd, chunked body', async () => {
    const session = `mp-${randomUUID().slice(0, 8)}`;
    const { rootId, childId, parts } = traceParts(session);
    const { body, contentType } = multipart(parts);
    const compressed = zstdFrame(body);
    // A ReadableStream body is sent with Transfer-Encoding: chunked.
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < compressed.length; i += 100) controller.enqueue(compressed.subarray(i, i + 100));
        controller.close();
      },
    });
    const response = await call('/runs/multipart', { raw: stream, headers: { 'content-type': contentType, 'content-encoding': 'zstd' } });
    expect(response).toEqual({ status: 202, body: {} });
    const root = (await call(`/runs/${rootId}`)).body;
    expect(root).toMatchObject({ name: 'mp-root', inputs: { question: 'héllo' }, outputs: { answer: 'ok' }, status: 'success' });
    const child = (await call(`/runs/${childId}`)).body;
    expect(child).toMatchObject({ parent_run_id: rootId, total_tokens: 11, prompt_tokens: 5, completion_tokens: 6, total_cost: 0.25 });
    const { rows } = await platform.deps.db.pool.query('SELECT content_type, data FROM trace_run_attachments WHERE run_id = $1', [childId]);
    expect(rows).toEqual([{ content_type: 'image/png', data: Buffer.from([0, 255, 13, 10, 45, 45, 1, 2]) }]);
  });

  it('stores part fields as sent: non-ASCII text, JSON null, NUL and lone-surrogate escapes cleaned, invalid UTF-8 replaced', async () => {
    const [clean, nul, broken, empty] = [newId(), newId(), newId(), newId()];
    const post = (id: string) => ({ name: `post.${id}`, data: json({ name: 'as-sent', run_type: 'tool', start_time: iso() }) });
    const { body, contentType } = multipart([
      post(clean),
      { name: `post.${clean}.inputs`, data: json({ text: 'naïve 日本 😀' }) },
      { name: `post.${clean}.outputs`, data: ' null ' },
      post(nul),
      { name: `post.${nul}.inputs`, data: '{"text": "a\\u0000b\\ud800c"}' },
      post(broken),
      { name: `post.${broken}.inputs`, data: Buffer.concat([Buffer.from('{"text": "x'), Buffer.from([0xff, 0xfe]), Buffer.from('y"}')]) },
      post(empty),
    ]);
    expect((await call('/runs/multipart', { raw: body, headers: { 'content-type': contentType } })).status).toBe(202);
    expect((await call(`/runs/${clean}`)).body).toMatchObject({ inputs: { text: 'naïve 日本 😀' }, outputs: null });
    expect((await call(`/runs/${nul}`)).body.inputs).toEqual({ text: 'ab\ufffdc' });
    expect((await call(`/runs/${broken}`)).body.inputs).toEqual({ text: 'x\ufffd\ufffdy' });
    expect((await call(`/runs/${empty}`)).body.inputs).toBeNull();
  });

  it('accepts gzip multipart and rejects malformed bodies with 422 or 400', async () => {
    const { rootId, parts } = traceParts(`mpgz-${randomUUID().slice(0, 8)}`);
    const { body, contentType } = multipart(parts);
    expect((await call('/runs/multipart', { raw: gzipSync(body), headers: { 'content-type': contentType, 'content-encoding': 'gzip' } })).status).toBe(202);
    expect((await call(`/runs/${rootId}`)).status).toBe(200);

    const broken = multipart([{ name: `post.${newId()}`, data: '{"name": ' }]);
    expect((await call('/runs/multipart', { raw: broken.body, headers: { 'content-type': broken.contentType } })).status).toBe(422);
    const badId = newId();
    const badInputs = multipart([
      { name: `post.${badId}`, data: json({ name: 'x', run_type: 'chain' }) },
      { name: `post.${badId}.inputs`, data: '{"question": ' },
    ]);
    expect((await call('/runs/multipart', { raw: badInputs.body, headers: { 'content-type': badInputs.contentType } })).status).toBe(422);
    expect((await call(`/runs/${badId}`)).status).toBe(404);
    const orphan = multipart([{ name: `post.${newId()}.inputs`, data: '{}' }]);
    const orphanResponse = await call('/runs/multipart', { raw: orphan.body, headers: { 'content-type': orphan.contentType } });
    expect(orphanResponse.status).toBe(422);
    expect(orphanResponse.body.details).toMatch(/has no post/);
    const strange = multipart([{ name: 'bogus', data: '{}' }]);
    expect((await call('/runs/multipart', { raw: strange.body, headers: { 'content-type': strange.contentType } })).status).toBe(422);
    const truncated = multipart(parts).body.subarray(0, 200);
    expect((await call('/runs/multipart', { raw: truncated, headers: { 'content-type': contentType } })).status).toBe(422);
    expect((await call('/runs/multipart', { raw: body, headers: { 'content-type': 'multipart/form-data' } })).status).toBe(400);
    expect((await call('/runs/multipart', { raw: Buffer.from('garbage'), headers: { 'content-type': contentType, 'content-encoding': 'gzip' } })).status).toBe(400);
  });
});

describe('ingestion in the request thread (AGENT_PLATFORM_INGEST_THREADS=0)', () => {
  it('stores and rejects exactly as the ingest threads do', async () => {
    const inline = await startTestPlatform({ config: { AGENT_PLATFORM_INGEST_THREADS: '0' } });
    try {
      expect(inline.deps.ingestThreads).toBeUndefined();
      const post = (body: Buffer, headers: Record<string, string>) =>
        fetch(`${inline.url}/runs/multipart`, { method: 'POST', headers: { 'x-api-key': tenant.adminKey, ...headers }, body: new Uint8Array(body) });
      const id = newId();
      const good = multipart([{ name: `post.${id}`, data: json({ name: 'inline', run_type: 'chain', start_time: iso() }) }]);
      expect((await post(gzipSync(good.body), { 'content-type': good.contentType, 'content-encoding': 'gzip' })).status).toBe(202);
      expect((await call(`/runs/${id}`)).body).toMatchObject({ name: 'inline' });
      const broken = multipart([{ name: `post.${newId()}`, data: '{"name": ' }]);
      const refused = await post(broken.body, { 'content-type': broken.contentType });
      expect(refused.status).toBe(422);
      expect(await refused.json()).toMatchObject({ error: expect.any(String), details: expect.anything() });
      expect((await post(Buffer.from('garbage'), { 'content-type': good.contentType, 'content-encoding': 'gzip' })).status).toBe(400);
    } finally {
      await inline.stop();
    }
  });
});

describe('permissions, isolation and the workspace a key writes to', () => {
  it('needs a key (401), write permission to ingest (403) and read permission to query', async () => {
    const noKey = await call('/runs', { key: '', body: { name: 'x', run_type: 'chain' } });
    expect(noKey).toEqual({ status: 401, body: { error: expect.any(String), details: expect.any(String) } });
    expect((await call('/runs', { key: tenant.viewerKey, body: { name: 'x', run_type: 'chain' } })).status).toBe(403);
    expect((await call('/runs/query', { key: tenant.viewerKey, body: {} })).status).toBe(200);
    expect((await call('/api/v1/runs', { key: tenant.viewerKey, body: { name: 'x', run_type: 'chain' } })).status).toBe(403);
  });

  it('never shows another tenant’s runs or projects', async () => {
    const id = newId();
    const session = `secret-${randomUUID().slice(0, 8)}`;
    await call('/runs', { body: { id, name: 'secret', run_type: 'chain', session_name: session } });
    const project = (await call(`/sessions?name=${session}`)).body[0];
    expect((await call(`/runs/${id}`, { key: other.adminKey })).status).toBe(404);
    expect((await call(`/sessions/${project.id}`, { key: other.adminKey })).status).toBe(404);
    expect((await call(`/sessions/${project.id}`, { key: other.adminKey, method: 'DELETE' })).status).toBe(404);
    expect((await call('/runs/query', { key: other.adminKey, body: { id: [id] } })).body.runs).toEqual([]);
    expect((await call(`/sessions?name=${session}`, { key: other.adminKey })).body).toEqual([]);
    // Their PATCH of our run id does not touch ours (it waits for their own post).
    await call(`/runs/${id}`, { key: other.adminKey, method: 'PATCH', body: { outputs: { stolen: true } } });
    expect((await call(`/runs/${id}`)).body.outputs).toBeNull();
    // Writing with their session id is refused.
    expect((await call('/runs', { key: other.adminKey, body: { name: 'x', run_type: 'chain', session_id: project.id } })).status).toBe(404);
  });

  it('writes to the key’s workspace, X-Tenant-Id, or else the oldest workspace the key can write', async () => {
    const second = await buildWorkspace(platform.system, tenant.organization.id);
    const where = async (init: Init) => {
      const id = newId();
      expect((await call('/runs', { ...init, body: { id, name: 'where', run_type: 'chain' } })).status).toBe(202);
      const { rows } = await platform.deps.db.pool.query('SELECT tenant_id, api_key_id, user_id FROM trace_runs WHERE id = $1', [id]);
      return rows[0];
    };
    // Organization admin key, no tenant header: the organization's oldest workspace.
    expect((await where({})).tenant_id).toBe(tenant.workspace.id);
    expect((await where({ tenant: second.id })).tenant_id).toBe(second.id);
    const scoped = await buildApiKey(platform.system, tenant.organization.id, tenant.admin.id, second.id);
    const stored = await where({ key: scoped.key });
    expect(stored).toEqual({ tenant_id: second.id, api_key_id: scoped.apiKey.id, user_id: tenant.admin.id });
    // A member who can only read the first workspace but edit the second writes to the second.
    const member = await buildUser(platform.system, tenant.organization.id, {
      workspaces: [
        { workspaceId: tenant.workspace.id, role: 'WORKSPACE_VIEWER' },
        { workspaceId: second.id, role: 'WORKSPACE_EDITOR' },
      ],
    });
    const memberKey = await buildApiKey(platform.system, tenant.organization.id, member.id);
    expect((await where({ key: memberKey.key })).tenant_id).toBe(second.id);
  });
});

describe('/sessions', () => {
  it('creates (with upsert), lists, reads, renames and deletes projects with their runs', async () => {
    const name = `proj-${randomUUID().slice(0, 8)}`;
    const created = await call('/sessions', { body: { name, description: 'first', extra: { metadata: { team: 'a' } } } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ name, description: 'first', tenant_id: tenant.workspace.id });
    expect((await call('/sessions', { body: { name } })).status).toBe(409);
    const upserted = await call('/sessions?upsert=true', { body: { name, description: 'second' } });
    expect(upserted.body).toMatchObject({ id: created.body.id, description: 'second' });

    await call('/runs', { body: { name: 'in-project', run_type: 'chain', session_id: created.body.id } });
    expect((await call(`/sessions?name=${name}`)).body.map((p: { id: string }) => p.id)).toEqual([created.body.id]);
    expect((await call(`/sessions?name_contains=${name.slice(5).toUpperCase()}`)).body.map((p: { name: string }) => p.name)).toEqual([name]);
    expect((await call(`/sessions/${created.body.id}`)).body).toMatchObject({ run_count: 1 });
    expect((await call('/sessions?limit=0')).status).toBe(422);

    const renamed = await call(`/sessions/${created.body.id}`, { method: 'PATCH', body: { name: `${name}-renamed`, description: null } });
    expect(renamed.body).toMatchObject({ name: `${name}-renamed`, description: 'second' });
    expect((await call(`/sessions/${created.body.id}`, { method: 'DELETE' })).status).toBe(202);
    expect((await call(`/sessions/${created.body.id}`)).status).toBe(404);
    const { rows } = await platform.deps.db.pool.query('SELECT count(*)::int AS n FROM trace_runs WHERE session_id = $1', [created.body.id]);
    expect(rows[0].n).toBe(0);
  });
});

describe('usage seam', () => {
  it('counts each stored trace once, by the UTC hour of its root and its project, in the statement that stores it', async () => {
    const workspace = await buildWorkspace(platform.system, tenant.organization.id);
    const [p1, p2] = [`usage-${randomUUID().slice(0, 8)}`, `usage-${randomUUID().slice(0, 8)}`];
    const root = (session_name: string, start_time: string, id = newId()) => ({ id, name: 'root', run_type: 'chain', session_name, start_time });
    const first = root(p1, '2026-01-05T10:15:00Z');
    const post = [
      first,
      root(p1, '2026-01-05T12:59:59.999999+02:00'), // 10:59:59.999999 UTC
      root(p1, '2026-01-05T11:00:00Z'),
      root(p2, '2026-01-05T10:01:00Z'),
      { id: newId(), name: 'child', run_type: 'llm', session_name: p1, start_time: '2026-01-05T10:16:00Z', parent_run_id: first.id },
    ];
    expect((await call('/runs/batch', { tenant: workspace.id, body: { post } })).status).toBe(202);
    // A re-sent root is a duplicate: stored once, counted once.
    expect((await call('/runs/batch', { tenant: workspace.id, body: { post: [first] } })).status).toBe(409);
    const { rows } = await platform.deps.db.pool.query(
      `SELECT to_char(d.hour AT TIME ZONE 'UTC', 'HH24:MI') AS hour, p.name AS project, sum(d.traces)::int AS traces, bool_and(d.user_id = $2) AS by_user
         FROM usage_trace_deltas d JOIN tracing_projects p ON p.id = d.project_id
        WHERE d.workspace_id = $1 GROUP BY 1, 2 ORDER BY 2, 1`,
      [workspace.id, tenant.admin.id],
    );
    expect(rows).toEqual([
      { hour: '10:00', project: p1, traces: 2, by_user: true },
      { hour: '11:00', project: p1, traces: 1, by_user: true },
      { hour: '10:00', project: p2, traces: 1, by_user: true },
    ].sort((a, b) => a.project.localeCompare(b.project)));
  });
});
