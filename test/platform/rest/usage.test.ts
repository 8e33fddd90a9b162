// The Usage API over traces ingested through the real ingest path (the langsmith SDK and raw
// multipart) at known times: strides, alignment, every group_by, encodings, permissions, CSV, the data
// start date and bad input, answered in the FastAPI dialect.
import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiKey, buildTenant, buildUser, buildWorkspace } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { postMultipart, sdkTrace, traceRuns } from '../../support/usage-ingest.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let second: { id: string; name: string };
let sender: { id: string; email: string; key: string; shortKey: string };
let adminShortKey: string;
let boundKey: string;
let guestKey: string;

// A Monday; every trace below sits at a known offset from it.
const T = Date.parse('2026-03-02T00:00:00Z');
const H = 3_600_000;
const D = 24 * H;
const at = (ms: number) => new Date(T + ms).toISOString();
const FORMULA_PROJECT = '=HYPERLINK("http://evil.example","click")';

/** Root runs (optionally each with a child) in one raw multipart request. */
const postTraces = (key: string, runs: { start: number; project: string; child?: boolean }[], tenantId?: string) =>
  postMultipart(platform.url, key, { post: runs.flatMap((run) => traceRuns(run.start, run.project, { child: run.child })) }, tenantId);

type UsageBody = { stride: { days: number; hours: number }; usage: { time_bucket: string; dimensions: Record<string, unknown>; traces: number }[] };

async function usage(query: string, key = tenant.adminKey, path = 'granular-usage'): Promise<{ status: number; body: any; response: Response }> {
  const response = await fetch(`${platform.url}/api/v1/orgs/current/billing/${path}?${query}`, { headers: { 'x-api-key': key } });
  const text = await response.clone().text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // CSV
  }
  return { status: response.status, body, response };
}

const range = (start: number, end: number, extra = '') =>
  `start_time=${encodeURIComponent(new Date(start).toISOString())}&end_time=${encodeURIComponent(new Date(end).toISOString())}&workspace_ids=${tenant.workspace.id}${extra}`;

/** bucket → traces, for one dimension value (or all summed). */
const byBucket = (body: UsageBody, match: (dimensions: Record<string, unknown>) => boolean = () => true) => {
  const out: Record<string, number> = {};
  for (const row of body.usage) if (match(row.dimensions)) out[row.time_bucket] = (out[row.time_bucket] ?? 0) + row.traces;
  return out;
};

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  second = await buildWorkspace(platform.system, tenant.organization.id);
  const senderUser = await buildUser(platform.system, tenant.organization.id, { workspaces: [{ workspaceId: tenant.workspace.id, role: 'WORKSPACE_EDITOR' }] });
  const senderKey = await buildApiKey(platform.system, tenant.organization.id, senderUser.id);
  sender = { id: senderUser.id, email: senderUser.email, key: senderKey.key, shortKey: senderKey.apiKey.shortKey };
  boundKey = (await buildApiKey(platform.system, tenant.organization.id, tenant.admin.id, tenant.workspace.id)).key;
  const guest = await buildUser(platform.system, tenant.organization.id, {
    role: 'ORGANIZATION_GUEST',
    workspaces: [{ workspaceId: tenant.workspace.id, role: 'WORKSPACE_ADMIN' }],
  });
  guestKey = (await buildApiKey(platform.system, tenant.organization.id, guest.id)).key;
  const keys = await graphql(platform.url, '{ viewer { apiKeyShortKey } }', { key: tenant.adminKey });
  adminShortKey = keys.body.data.viewer.apiKeyShortKey;

  // SDK, admin key, project "alpha": 10:15, 10:45 and 13:05 on day 0, then one trace at +40, +100,
  // +200 and +400 days (for the long strides).
  const client = new Client({ apiUrl: platform.url, apiKey: tenant.adminKey });
  for (const offset of [10 * H + 15 * 60_000, 10 * H + 45 * 60_000, 13 * H + 5 * 60_000, 40 * D + H, 100 * D + H, 200 * D + H, 400 * D + H]) {
    await sdkTrace(client, T + offset, 'alpha');
  }
  await client.awaitPendingTraceBatches();
  // Raw multipart, the second user's key, the formula-named project: day 1 02:00 and day 3 00:30.
  expect(await postTraces(sender.key, [{ start: T + D + 2 * H, project: FORMULA_PROJECT, child: true }, { start: T + 3 * D + 30 * 60_000, project: FORMULA_PROJECT }])).toBe(202);
  // The second workspace: one trace at 10:20 on day 0.
  expect(await postTraces(tenant.adminKey, [{ start: T + 10 * H + 20 * 60_000, project: 'beta' }], second.id)).toBe(202);
  // Before the data start date (5 January 2026): stored, never reported.
  expect(await postTraces(tenant.adminKey, [{ start: Date.parse('2026-01-04T12:00:00Z'), project: 'alpha' }])).toBe(202);
}, 180_000);
afterAll(() => platform?.stop());

describe('granular usage: strides and buckets', () => {
  it('chooses the stride from the range, at every boundary of the spec table', async () => {
    const cases: [number, { days: number; hours: number }][] = [
      [D - 1, { days: 0, hours: 1 }],
      [D, { days: 1, hours: 0 }],
      [31 * D, { days: 1, hours: 0 }],
      [32 * D, { days: 7, hours: 0 }],
      [93 * D, { days: 7, hours: 0 }],
      [94 * D, { days: 30, hours: 0 }],
      [366 * D, { days: 30, hours: 0 }],
      [367 * D, { days: 365, hours: 0 }],
    ];
    for (const [length, stride] of cases) {
      const { status, body } = await usage(range(T, T + length));
      expect(status, `${length / D} days`).toBe(200);
      expect(body.stride, `${length / D} days`).toEqual(stride);
    }
  });

  it('counts each trace in the bucket of its start, at every stride', async () => {
    // Just under a day: hourly buckets; the 10:15 and 10:45 traces share one.
    expect(byBucket((await usage(range(T, T + D - 1))).body)).toEqual({ [at(10 * H)]: 2, [at(13 * H)]: 1 });
    // Exactly a day and 31 days: daily.
    expect(byBucket((await usage(range(T, T + D))).body)).toEqual({ [at(0)]: 3 });
    expect(byBucket((await usage(range(T, T + 31 * D))).body)).toEqual({ [at(0)]: 3, [at(D)]: 1, [at(3 * D)]: 1 });
    // 32 and 93 days: weekly, counted from the start.
    expect(byBucket((await usage(range(T, T + 32 * D))).body)).toEqual({ [at(0)]: 5 });
    expect(byBucket((await usage(range(T, T + 93 * D))).body)).toEqual({ [at(0)]: 5, [at(35 * D)]: 1 });
    // 94 and 366 days: 30-day buckets.
    expect(byBucket((await usage(range(T, T + 94 * D))).body)).toEqual({ [at(0)]: 5, [at(30 * D)]: 1 });
    expect(byBucket((await usage(range(T, T + 366 * D))).body)).toEqual({ [at(0)]: 5, [at(30 * D)]: 1, [at(90 * D)]: 1, [at(180 * D)]: 1 });
    // 367 days: 365-day buckets.
    expect(byBucket((await usage(range(T, T + 367 * D))).body)).toEqual({ [at(0)]: 8 });
    expect(byBucket((await usage(range(T, T + 401 * D))).body)).toEqual({ [at(0)]: 8, [at(365 * D)]: 1 });
  });

  it('aligns buckets to the start floored to the hour or the UTC day', async () => {
    // Starts at 10:30: hourly buckets from 10:00 (the hour rollup holds the whole hour).
    expect(byBucket((await usage(range(T + 10 * H + 30 * 60_000, T + 14 * H))).body)).toEqual({ [at(10 * H)]: 2, [at(13 * H)]: 1 });
    // Starts at day 0 06:00, 40 days: weekly buckets from day 0 00:00.
    const weekly = (await usage(range(T + 6 * H, T + 40 * D + 6 * H))).body;
    expect(weekly.stride).toEqual({ days: 7, hours: 0 });
    expect(byBucket(weekly)).toEqual({ [at(0)]: 5, [at(35 * D)]: 1 });
    // Starts at day 1 05:00, 3 days: daily buckets from day 1 00:00; the day-1 trace at 02:00 counts.
    expect(byBucket((await usage(range(T + D + 5 * H, T + 4 * D + 5 * H))).body)).toEqual({ [at(D)]: 1, [at(3 * D)]: 1 });
    // Ends at day 3 00:15: the hour of day 3 00:00 is in range, so its 00:30 trace is too (hour grain).
    expect(byBucket((await usage(range(T, T + 3 * D + 15 * 60_000))).body)).toEqual({ [at(0)]: 3, [at(D)]: 1, [at(3 * D)]: 1 });
    // Ends at day 2 23:59: the day-3 trace is out.
    expect(byBucket((await usage(range(T, T + 3 * D - 60_000))).body)).toEqual({ [at(0)]: 3, [at(D)]: 1 });
  });

  it('answers an empty range with the stride and no buckets', async () => {
    const { status, body } = await usage(range(T + 20 * D, T + 21 * D));
    expect(status).toBe(200);
    expect(body).toEqual({ stride: { days: 1, hours: 0 }, usage: [] });
  });

  it('reports nothing before the data start date', async () => {
    const jan = Date.parse('2026-01-01T00:00:00Z');
    expect((await usage(range(jan, jan + 10 * D))).body.usage).toEqual([]);
    const early = await startTestPlatform({ config: { AGENT_PLATFORM_USAGE_DATA_START: '2026-01-04T00:00:00Z' } });
    try {
      const response = await fetch(`${early.url}/api/v1/orgs/current/billing/granular-usage?${range(jan, jan + 10 * D)}`, { headers: { 'x-api-key': tenant.adminKey } });
      expect(byBucket((await response.json()) as UsageBody)).toEqual({ '2026-01-04T00:00:00.000Z': 1 });
    } finally {
      await early.stop();
    }
  });
});

describe('granular usage: group_by and workspace_ids', () => {
  const both = () => `&workspace_ids=${second.id}`;

  it('groups by workspace by default, with id and name', async () => {
    const { body } = await usage(range(T, T + 4 * D, both()));
    expect(body.usage).toEqual([
      { time_bucket: at(0), dimensions: { workspace_id: second.id, workspace_name: second.name }, traces: 1 },
      { time_bucket: at(0), dimensions: { workspace_id: tenant.workspace.id, workspace_name: tenant.workspace.name }, traces: 3 },
      { time_bucket: at(D), dimensions: { workspace_id: tenant.workspace.id, workspace_name: tenant.workspace.name }, traces: 1 },
      { time_bucket: at(3 * D), dimensions: { workspace_id: tenant.workspace.id, workspace_name: tenant.workspace.name }, traces: 1 },
    ].sort((a, b) => a.time_bucket.localeCompare(b.time_bucket) || String(a.dimensions.workspace_name).localeCompare(String(b.dimensions.workspace_name))));
  });

  it('groups by project, user and API key with the spec dimension keys', async () => {
    const projects = (await usage(range(T, T + 4 * D, `${both()}&group_by=project`))).body as UsageBody;
    expect(projects.usage.map((r) => [r.time_bucket, r.dimensions.project_name, r.traces])).toEqual([
      [at(0), 'alpha', 3],
      [at(0), 'beta', 1],
      [at(D), FORMULA_PROJECT, 1],
      [at(3 * D), FORMULA_PROJECT, 1],
    ]);
    for (const row of projects.usage) expect(Object.keys(row.dimensions).sort()).toEqual(['project_id', 'project_name']);

    const users = (await usage(range(T, T + 4 * D, `${both()}&group_by=user`))).body as UsageBody;
    expect(users.usage).toEqual([
      { time_bucket: at(0), dimensions: { user_id: tenant.admin.id, user_email: tenant.admin.email }, traces: 4 },
      { time_bucket: at(D), dimensions: { user_id: sender.id, user_email: sender.email }, traces: 1 },
      { time_bucket: at(3 * D), dimensions: { user_id: sender.id, user_email: sender.email }, traces: 1 },
    ]);

    const keys = (await usage(range(T, T + 4 * D, `${both()}&group_by=api_key`))).body as UsageBody;
    expect(keys.usage).toEqual([
      { time_bucket: at(0), dimensions: { api_key_short_key: adminShortKey }, traces: 4 },
      { time_bucket: at(D), dimensions: { api_key_short_key: sender.shortKey }, traces: 1 },
      { time_bucket: at(3 * D), dimensions: { api_key_short_key: sender.shortKey }, traces: 1 },
    ]);
  });

  it('accepts workspace_ids as repeated keys, comma-separated and workspace_ids[]', async () => {
    const base = `start_time=${at(0)}&end_time=${at(4 * D)}`;
    const repeated = await usage(`${base}&workspace_ids=${tenant.workspace.id}&workspace_ids=${second.id}`);
    const comma = await usage(`${base}&workspace_ids=${tenant.workspace.id},${second.id}`);
    const brackets = await usage(`${base}&workspace_ids[]=${tenant.workspace.id}&workspace_ids%5B%5D=${second.id}`);
    expect(repeated.status).toBe(200);
    expect(new Set(repeated.body.usage.map((r: any) => r.dimensions.workspace_id))).toEqual(new Set([tenant.workspace.id, second.id]));
    expect(comma.body).toEqual(repeated.body);
    expect(brackets.body).toEqual(repeated.body);
  });

  it('serves the same records on GraphQL Organization.usage', async () => {
    const query = `query ($s: DateTime!, $e: DateTime!, $w: [ID!]!) { viewer { organization { usage(startTime: $s, endTime: $e, workspaceIds: $w, groupBy: PROJECT) {
      stride { days hours } usage { timeBucket traces dimensions { projectId projectName workspaceId } } } } } }`;
    const { body } = await graphql(platform.url, query, { key: tenant.adminKey, variables: { s: at(0), e: at(4 * D), w: [tenant.workspace.id, second.id] } });
    const rest = (await usage(range(T, T + 4 * D, `${both()}&group_by=project`))).body as UsageBody;
    const report = body.data.viewer.organization.usage;
    expect(report.stride).toEqual(rest.stride);
    expect(report.usage).toEqual(
      rest.usage.map((r) => ({ timeBucket: r.time_bucket, traces: r.traces, dimensions: { projectId: r.dimensions.project_id, projectName: r.dimensions.project_name, workspaceId: null } })),
    );
  });
});

describe('granular usage: permissions', () => {
  it('403 without organization:read', async () => {
    const { status, body } = await usage(range(T, T + D), guestKey);
    expect(status).toBe(403);
    expect(body).toEqual({ detail: expect.stringContaining('organization:read') });
  });

  it("403 for another organization's workspace, even next to one's own", async () => {
    const { status, body } = await usage(range(T, T + D, `&workspace_ids=${other.workspace.id}`));
    expect(status).toBe(403);
    expect(body.detail).toContain(other.workspace.id);
    expect((await usage(range(T, T + D), other.adminKey)).status).toBe(403);
  });

  it('403 for a workspace-bound key asking for a second workspace; its own is fine', async () => {
    expect((await usage(range(T, T + D, `&workspace_ids=${second.id}`), boundKey)).status).toBe(403);
    const own = await usage(range(T, T + D), boundKey);
    expect(own.status).toBe(200);
    expect(byBucket(own.body)).toEqual({ [at(0)]: 3 });
  });

  it('403 for a member asking for a workspace it has no role in; 401 without a key', async () => {
    expect((await usage(range(T, T + D), tenant.viewerKey)).status).toBe(200);
    expect((await usage(range(T, T + D, `&workspace_ids=${second.id}`), tenant.viewerKey)).status).toBe(403);
    const anonymous = await fetch(`${platform.url}/api/v1/orgs/current/billing/granular-usage?${range(T, T + D)}`);
    expect(anonymous.status).toBe(401);
  });
});

describe('granular usage: CSV export', () => {
  const header = 'Time Bucket Start,Time Bucket End,Workspace ID,Workspace Name,Project ID,Project Name,User ID,User Email,API Key Short Key,Traces';

  it('streams every column, fills those of group_by, and guards formula cells', async () => {
    const { status, body, response } = await usage(range(T, T + 4 * D, '&group_by=project'), tenant.adminKey, 'granular-usage/export');
    expect(status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="?granular-usage-project-2026-03-02-2026-03-06\.csv"?$/);
    const lines = (body as string).split('\r\n');
    expect(lines[0]).toBe(header);
    expect(lines.at(-1)).toBe('');
    const projects = (await usage(range(T, T + 4 * D, '&group_by=project'))).body as UsageBody;
    const formulaId = projects.usage.find((r) => r.dimensions.project_name === FORMULA_PROJECT)!.dimensions.project_id;
    const alphaId = projects.usage.find((r) => r.dimensions.project_name === 'alpha')!.dimensions.project_id;
    expect(lines.slice(1, -1)).toEqual([
      `${at(0)},${at(D)},,,${alphaId},alpha,,,,3`,
      // A leading tab, then RFC 4180 quoting (the name has quotes and a comma).
      `${at(D)},${at(2 * D)},,,${formulaId},"\t=HYPERLINK(""http://evil.example"",""click"")",,,,1`,
      `${at(3 * D)},${at(4 * D)},,,${formulaId},"\t=HYPERLINK(""http://evil.example"",""click"")",,,,1`,
    ]);
  });

  it('fills the workspace and user columns for those groupings; an empty range is the header alone', async () => {
    const workspaces = (await usage(range(T, T + D), tenant.adminKey, 'granular-usage/export')).body as string;
    expect(workspaces.split('\r\n')[1]).toBe(`${at(0)},${at(D)},${tenant.workspace.id},${tenant.workspace.name},,,,,,3`);
    const users = (await usage(range(T + D, T + 2 * D, '&group_by=user'), tenant.adminKey, 'granular-usage/export')).body as string;
    expect(users.split('\r\n')[1]).toBe(`${at(D)},${at(2 * D)},,,,,${sender.id},${sender.email},,1`);
    const keys = (await usage(range(T + D, T + 2 * D, '&group_by=api_key'), tenant.adminKey, 'granular-usage/export')).body as string;
    expect(keys.split('\r\n')[1]).toBe(`${at(D)},${at(2 * D)},,,,,,,${sender.shortKey},1`);
    expect((await usage(range(T + 20 * D, T + 21 * D), tenant.adminKey, 'granular-usage/export')).body).toBe(`${header}\r\n`);
  });

  it('checks input and permissions before anything is sent', async () => {
    const { status, body, response } = await usage(range(T, T + D, `&workspace_ids=${other.workspace.id}`), tenant.adminKey, 'granular-usage/export');
    expect(status).toBe(403);
    expect(response.headers.get('content-type')).toMatch(/json/);
    expect(body.detail).toContain(other.workspace.id);
  });
});

describe('granular usage: bad input (FastAPI dialect)', () => {
  const locs = (body: any) => (body.detail as { loc: unknown[] }[]).map((issue) => issue.loc);

  it('422 for unparseable dates, an unknown group_by, missing workspace_ids and invalid UUIDs', async () => {
    const bad = await usage(`start_time=yesterday&end_time=${at(D)}&workspace_ids=${tenant.workspace.id}`);
    expect(bad.status).toBe(422);
    expect(locs(bad.body)).toEqual([['query', 'start_time']]);
    expect(bad.body.detail[0]).toMatchObject({ msg: expect.any(String), type: expect.any(String) });

    const missing = await usage(`end_time=${at(D)}&workspace_ids=${tenant.workspace.id}`);
    expect(missing.status).toBe(422);
    expect(locs(missing.body)).toEqual([['query', 'start_time']]);

    const group = await usage(range(T, T + D, '&group_by=team'));
    expect(group.status).toBe(422);
    expect(locs(group.body)).toEqual([['query', 'group_by']]);

    const noWorkspaces = await usage(`start_time=${at(0)}&end_time=${at(D)}`);
    expect(noWorkspaces.status).toBe(422);
    expect(locs(noWorkspaces.body)).toEqual([['query', 'workspace_ids']]);

    const notUuid = await usage(range(T, T + D, '&workspace_ids=not-a-uuid'));
    expect(notUuid.status).toBe(422);
    expect(locs(notUuid.body)).toEqual([['query', 'workspace_ids', 1]]);
  });

  it('400 when end_time is not after start_time', async () => {
    for (const [start, end] of [[T + D, T], [T, T]]) {
      const { status, body } = await usage(range(start!, end!));
      expect(status).toBe(400);
      expect(body).toEqual({ detail: 'end_time must be after start_time.' });
    }
  });

  it('refuses 10,000 workspace ids with a 4xx, on REST and GraphQL', async () => {
    const ids = Array.from({ length: 10_000 }, () => randomUUID());
    const rest = await usage(`start_time=${at(0)}&end_time=${at(D)}&workspace_ids=${ids.join(',')}`);
    expect(rest.status).toBeGreaterThanOrEqual(400);
    expect(rest.status).toBeLessThan(500);
    expect(rest.body).toEqual({ detail: expect.anything() });
    const query = `query ($w: [ID!]!) { viewer { organization { usage(startTime: "${at(0)}", endTime: "${at(D)}", workspaceIds: $w) { stride { days } } } } }`;
    const gql = await graphql(platform.url, query, { key: tenant.adminKey, variables: { w: ids } });
    expect(gql.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(gql.body.errors?.[0]?.message).toContain('at most 1000 workspaces');
  });
});
