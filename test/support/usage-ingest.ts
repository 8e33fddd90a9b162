// Ingesting traces at known times for the usage tests, through the two real wire paths: raw
// multipart (as any SDK may send it) and the official langsmith SDK.
import { randomUUID } from 'node:crypto';
import { type Client, RunTree } from 'langsmith';

type WireRun = Record<string, unknown> & { id: string };

/** POST /runs/multipart with `post.<id>` and `patch.<id>` parts; resolves with the status. */
export async function postMultipart(url: string, key: string, parts: { post?: WireRun[]; patch?: WireRun[] }, tenantId?: string): Promise<number> {
  const boundary = `usage${randomUUID()}`;
  const body: string[] = [];
  for (const [kind, runs] of [['post', parts.post ?? []], ['patch', parts.patch ?? []]] as const) {
    for (const run of runs) {
      const data = JSON.stringify(run);
      body.push(`--${boundary}\r\nContent-Disposition: form-data; name="${kind}.${run.id}"\r\nContent-Type: application/json; length=${Buffer.byteLength(data)}\r\n\r\n${data}\r\n`);
    }
  }
  const response = await fetch(`${url}/runs/multipart`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': `multipart/form-data; boundary=${boundary}`, ...(tenantId ? { 'x-tenant-id': tenantId } : {}) },
    body: `${body.join('')}--${boundary}--\r\n`,
  });
  await response.arrayBuffer();
  return response.status;
}

/** A root run (and, with `child`, one child run) starting at `start` in `project`. */
export function traceRuns(start: number, project: string, options: { id?: string; child?: boolean } = {}): WireRun[] {
  const id = options.id ?? randomUUID();
  const root = { id, name: 'root', run_type: 'chain', start_time: new Date(start).toISOString(), session_name: project };
  if (!options.child) return [root];
  return [root, { id: randomUUID(), name: 'child', run_type: 'tool', parent_run_id: id, start_time: new Date(start + 1000).toISOString(), session_name: project }];
}

/** A trace through the langsmith SDK: root and one child, posted then patched. */
export async function sdkTrace(client: Client, start: number, project: string): Promise<void> {
  const root = new RunTree({ name: 'agent', run_type: 'chain', start_time: start, project_name: project, client, tracingEnabled: true });
  await root.postRun();
  const child = root.createChild({ name: 'llm', run_type: 'llm', start_time: start + 10 });
  await child.postRun();
  await child.end({ text: 'ok' }, undefined, start + 20);
  await child.patchRun();
  await root.end({ done: true }, undefined, start + 30);
  await root.patchRun();
}
