// Feedback on trace runs through the official langsmith SDK: create, read, update, list by run and key,
// delete (sent alone and in the SDK's multipart batches); feedback_stats on the run and the filter
// language over it; presigned tokens whose url takes feedback without a key (GET with query
// parameters, POST with JSON); another workspace's key finds nothing; roles; bad input.
import { randomUUID } from 'node:crypto';
import { Client, RunTree } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { callPlatform, graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let client: Client;
let runId: string;
let sessionId: string;

const sdk = (apiKey: string, apiUrl = platform.url) => new Client({ apiUrl, apiKey, callerOptions: { maxRetries: 0 } });

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** A status and JSON body from the platform, with a key or without. */
const call = (path: string, init: { method?: string; key?: string; body?: unknown } = {}) => callPlatform(platform.url, path, init);

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  client = sdk(tenant.adminKey);
  const run = new RunTree({ name: 'answer', run_type: 'chain', inputs: { q: 'why?' }, client, project_name: `feedback-${randomUUID().slice(0, 8)}`, tracingEnabled: true });
  await run.postRun();
  await run.end({ a: 'because' });
  await run.patchRun();
  await client.awaitPendingTraceBatches();
  runId = run.id;
  sessionId = (await client.readRun(runId)).session_id!;
});
afterAll(() => platform?.stop());

describe('feedback through the langsmith SDK', () => {
  it('creates, reads, updates, lists and deletes feedback, and keeps the run’s feedback_stats', async () => {
    const created = await client.createFeedback(runId, 'correctness', { score: 0.75, comment: 'mostly right', sessionId });
    const other2 = await client.createFeedback(runId, 'correctness', { score: true, value: 'good', sessionId, feedbackSourceType: 'model' });
    const helpful = await client.createFeedback(runId, 'helpful', { value: 'yes', correction: { a: 'because I said so' }, sessionId });

    const read = await client.readFeedback(created.id);
    expect(read).toMatchObject({ id: created.id, run_id: runId, trace_id: runId, key: 'correctness', score: 0.75, comment: 'mostly right' });
    expect(read.feedback_source).toMatchObject({ type: 'api' });
    expect((await client.readFeedback(helpful.id)).correction).toEqual({ a: 'because I said so' });

    let stats = (await client.readRun(runId)).feedback_stats as Record<string, any>;
    expect(stats.correctness).toMatchObject({ n: 2, avg: 0.875, values: { good: 1 } });
    expect(stats.helpful).toMatchObject({ n: 1, avg: null, values: { yes: 1 } });

    await client.updateFeedback(created.id, { score: 0.25, comment: 'wrong after all' });
    expect(await client.readFeedback(created.id)).toMatchObject({ score: 0.25, comment: 'wrong after all' });
    stats = (await client.readRun(runId)).feedback_stats as Record<string, any>;
    expect(stats.correctness.avg).toBe(0.625);

    const byRun = await collect(client.listFeedback({ runIds: [runId] }));
    expect(byRun.map((f) => f.id).sort()).toEqual([created.id, other2.id, helpful.id].sort());
    const byKey = await collect(client.listFeedback({ runIds: [runId], feedbackKeys: ['correctness'] }));
    expect(byKey.map((f) => f.id).sort()).toEqual([created.id, other2.id].sort());
    const bySource = await collect(client.listFeedback({ runIds: [runId], feedbackSourceTypes: ['model'] }));
    expect(bySource.map((f) => f.id)).toEqual([other2.id]);

    await client.deleteFeedback(other2.id);
    await expect(client.readFeedback(other2.id)).rejects.toThrow(/404/);
    stats = (await client.readRun(runId)).feedback_stats as Record<string, any>;
    expect(stats.correctness).toMatchObject({ n: 1, avg: 0.25 });
    // Under /api/v1 too.
    expect((await sdk(tenant.adminKey, `${platform.url}/api/v1`).readFeedback(created.id)).id).toBe(created.id);
  });

  it('stores feedback the SDK batches with runs (multipart feedback parts), in the same batch as its run too', async () => {
    const paths: string[] = [];
    const batching = new Client({
      apiUrl: platform.url,
      apiKey: tenant.adminKey,
      fetchImplementation: ((input: RequestInfo | URL, init?: RequestInit) => {
        paths.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
        return fetch(input, init);
      }) as typeof fetch,
    });
    const run = new RunTree({ name: 'batched', run_type: 'chain', inputs: {}, client: batching, project_name: `batched-${randomUUID().slice(0, 8)}`, tracingEnabled: true });
    await run.postRun();
    await run.end({ ok: true });
    await run.patchRun();
    // Queued beside the run's post and patch: with a trace id the SDK sends feedback in its multipart batches.
    const sameBatch = await batching.createFeedback(run.id, 'batched', { score: 1, traceId: run.id, sessionId });
    await batching.awaitPendingTraceBatches();
    const later = await batching.createFeedback(run.id, 'batched', { score: 0, value: 'later', traceId: run.id, sessionId });
    const orphan = await batching.createFeedback(randomUUID(), 'batched', { score: 0, traceId: randomUUID(), sessionId });
    await batching.awaitPendingTraceBatches();

    expect(paths).toContain('POST /runs/multipart');
    expect(paths).not.toContain('POST /feedback');
    expect(await client.readFeedback(sameBatch.id)).toMatchObject({ run_id: run.id, key: 'batched', score: 1 });
    expect(await client.readFeedback(later.id)).toMatchObject({ score: 0, value: 'later' });
    // Feedback on a run that is not stored is left out; the runs of its batch are not.
    await expect(client.readFeedback(orphan.id)).rejects.toThrow(/404/);
    expect(((await client.readRun(run.id)).feedback_stats as Record<string, any>).batched).toMatchObject({ n: 2, avg: 0.5 });
  });

  it('records feedback through a presigned token’s url, without a key, by GET and by POST', async () => {
    const token = await client.createPresignedFeedbackToken(runId, 'thumbs', { expiration: { hours: 1 } });
    expect(token.url).toBe(`${platform.url}/feedback/tokens/${token.id}`);
    expect(Date.parse(token.expires_at) - Date.now()).toBeGreaterThan(59 * 60_000);

    const byGet = await fetch(`${token.url}?score=1&comment=${encodeURIComponent('nice one')}`);
    expect(byGet.status).toBe(200);
    expect(byGet.headers.get('access-control-allow-origin')).toBe('*');
    const preflight = await fetch(token.url, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const byPost = await fetch(token.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ score: 0, value: 'meh', correction: { better: 'x' } }) });
    expect(byPost.status).toBe(200);

    const thumbs = await collect(client.listFeedback({ runIds: [runId], feedbackKeys: ['thumbs'] }));
    expect(thumbs.map((f) => [f.score, f.comment ?? null, f.value ?? null]).sort()).toEqual([[0, null, 'meh'], [1, 'nice one', null]]);
    expect(thumbs.every((f) => f.feedback_source?.type === 'app')).toBe(true);
    expect((await collect(client.listPresignedFeedbackTokens(runId))).map((t) => t.id)).toContain(token.id);

    // Under /api/v1 the url is under /api/v1 too.
    const apiV1 = await sdk(tenant.adminKey, `${platform.url}/api/v1`).createPresignedFeedbackToken(runId, 'thumbs');
    expect(apiV1.url).toBe(`${platform.url}/api/v1/feedback/tokens/${apiV1.id}`);
    expect((await fetch(`${apiV1.url}?score=true`)).status).toBe(200);

    // Unknown and expired tokens, and bad input through a token: 4xx in LangSmith's {detail} shape.
    const unknown = await call(`/feedback/tokens/${randomUUID()}?score=1`);
    expect(unknown).toMatchObject({ status: 404, body: { detail: expect.any(String) } });
    expect((await call('/feedback/tokens/not-a-token?score=1')).status).toBe(404);
    const short = await client.createPresignedFeedbackToken(runId, 'thumbs', { expiration: new Date(Date.now() + 1500).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const expired = await call(`/feedback/tokens/${short.id}`, { body: { score: 1 } });
    expect(expired).toMatchObject({ status: 400, body: { detail: expect.stringContaining('expired') } });
    expect((await call(`/feedback/tokens/${token.id}?score=high`)).status).toBe(422);
    // A token for a run not stored (yet) is made; its url refuses feedback until the run is there.
    const early = await client.createPresignedFeedbackToken(randomUUID(), 'thumbs');
    expect((await fetch(`${early.url}?score=1`)).status).toBe(404);
  });

  it('keeps feedback in its workspace and respects roles', async () => {
    const mine = await client.createFeedback(runId, 'private', { score: 1, sessionId });
    const stranger = sdk(other.adminKey);
    await expect(stranger.readFeedback(mine.id)).rejects.toThrow(/404/);
    await expect(stranger.updateFeedback(mine.id, { score: 0 })).rejects.toThrow(/404/);
    await expect(stranger.deleteFeedback(mine.id)).rejects.toThrow(/404/);
    await expect(stranger.createFeedback(runId, 'sneaky', { score: 0, sessionId })).rejects.toThrow(/404/);
    expect(await collect(stranger.listFeedback({ runIds: [runId] }))).toEqual([]);
    expect((await call('/feedback/tokens', { key: other.adminKey, body: { run_id: runId, feedback_key: 'x' } })).status).toBe(200);

    // A workspace viewer reads feedback but writes none.
    const viewer = sdk(tenant.viewerKey);
    expect((await viewer.readFeedback(mine.id)).id).toBe(mine.id);
    await expect(viewer.createFeedback(runId, 'viewer', { score: 1, sessionId })).rejects.toThrow(/403/);
    await expect(viewer.updateFeedback(mine.id, { score: 0 })).rejects.toThrow(/403/);
    await expect(viewer.deleteFeedback(mine.id)).rejects.toThrow(/403/);
    await expect(viewer.createPresignedFeedbackToken(runId, 'viewer')).rejects.toThrow(/403/);
    // Without a key, nothing.
    expect((await call(`/feedback/${mine.id}`)).status).toBe(401);
  });

  it('finds a run whose start time has microseconds (its partition read by that exact time)', async () => {
    const id = randomUUID();
    const stored = await call('/runs', { key: tenant.adminKey, body: { id, trace_id: id, name: 'precise', run_type: 'chain', start_time: '2026-11-20T10:00:00.123456Z', session_name: 'precise', inputs: {} } });
    expect(stored.status).toBe(202);
    const given = await call('/feedback', { key: tenant.adminKey, body: { run_id: id, key: 'precise', score: 1 } });
    expect(given.status).toBe(200);
    expect(((await client.readRun(id)).feedback_stats as Record<string, any>).precise.n).toBe(1);
    const { body } = await graphql(platform.url, `query($id: ID!) { feedback(runId: $id) { run { id name } } }`, { key: tenant.adminKey, variables: { id } });
    expect(body.data.feedback).toEqual([{ run: { id, name: 'precise' } }]);
  });

  it('answers bad input with 4xx', async () => {
    const key = tenant.adminKey;
    const body = (extra: Record<string, unknown>) => ({ run_id: runId, key: 'k', ...extra });
    expect((await call('/feedback', { key, body: body({ run_id: randomUUID() }) })).status).toBe(404);
    expect((await call('/feedback', { key, body: body({ score: 'high' }) })).status).toBe(422);
    expect((await call('/feedback', { key, body: body({ score: { n: 1 } }) })).status).toBe(422);
    expect((await call('/feedback', { key, body: body({ key: 'k'.repeat(181) }) })).status).toBe(422);
    expect((await call('/feedback', { key, body: body({ key: '' }) })).status).toBe(422);
    expect((await call('/feedback', { key, body: body({ run_id: 'nope' }) })).status).toBe(422);
    expect((await call('/feedback', { key, body: { key: 'k', score: 1 } })).status).toBe(422);
    expect((await call('/feedback', { key, body: [1, 2] })).status).toBe(422);
    expect((await call('/feedback', { key, body: body({ comment: 'x'.repeat(10_001) }) })).status).toBe(422);
    const id = randomUUID();
    expect((await call('/feedback', { key, body: body({ id }) })).status).toBe(200);
    expect((await call('/feedback', { key, body: body({ id }) })).status).toBe(409);
    expect((await call(`/feedback/${id}`, { key, method: 'PATCH', body: { score: 'x' } })).status).toBe(422);
    expect((await call('/feedback/not-an-id', { key })).status).toBe(404);
    expect((await call('/feedback?run=nope', { key })).status).toBe(422);
    expect((await call('/feedback?limit=1000', { key })).status).toBe(422);
    expect((await call('/feedback/tokens', { key, body: { run_id: runId, feedback_key: 'k', expires_at: '2001-01-01T00:00:00Z' } })).status).toBe(422);
    expect((await call('/feedback/tokens', { key, body: { run_id: runId } })).status).toBe(422);
    // A body over the limit is refused before it is read whole.
    const huge = await fetch(`${platform.url}/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body({ value: 'x'.repeat(platform.deps.config.bodyLimitBytes + 10) })),
    });
    expect(huge.status).toBe(413);
  });

  it('filters runs by their feedback in the run filter language', async () => {
    const projectName = `filtered-${randomUUID().slice(0, 8)}`;
    const runs: Record<string, string> = {};
    for (const name of ['good', 'bad', 'none']) {
      const run = new RunTree({ name, run_type: 'chain', inputs: {}, client, project_name: projectName, tracingEnabled: true });
      await run.postRun();
      runs[name] = run.id;
    }
    await client.awaitPendingTraceBatches();
    await client.createFeedback(runs.good!, 'correctness', { score: 0.9 });
    await client.createFeedback(runs.bad!, 'correctness', { score: 0.2 });
    await client.createFeedback(runs.bad!, 'thumbs', { score: 1 });
    const names = async (filter: string) => (await collect(client.listRuns({ projectName, filter }))).map((run) => run.name).sort();
    expect(await names('eq(feedback_key, "correctness")')).toEqual(['bad', 'good']);
    expect(await names('and(eq(feedback_key, "correctness"), gt(feedback_score, 0.5))')).toEqual(['good']);
    // The key and the score bind to the same feedback key: bad's thumbs of 1 is not a correctness above 0.5.
    expect(await names('and(eq(feedback_key, "thumbs"), gte(feedback_score, 1))')).toEqual(['bad']);
    expect(await names('neq(feedback_key, "correctness")')).toEqual(['none']);
  });
});
