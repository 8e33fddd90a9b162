// `TEST_AGENT_SERVER=deployed`: the agent-server tests against a deployed revision instead of `serve`.
// The fixture project is committed to a git repository and deployed through the control plane of a
// platform started in this test file's process; the tests reach it through a loopback proxy that adds
// the platform key to every request (their own `fetch` calls included) and forwards to the gateway at
// /deployments/<id>. Not part of the suite (each file deploys once): a way to run every agent-server
// test at a deployment's url, as the issue of the gateway asks. What needs `serve` itself (its process,
// its log, its restart, its database) does not apply there.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { buildTenant } from '../factories.js';
import type { TestPlatform } from '../helpers.js';
import { controlPlaneApi, deploymentBody, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../control-plane/support.js';

let platform: Promise<TestPlatform> | undefined;
let running = 0;

/** Deploys test/fixtures/<project> and returns a url that answers as `serve` would (the proxy's). */
export async function startDeployed(project: string): Promise<{ url: string; client: Client; deploymentId: string; stop(): Promise<void> }> {
  running += 1;
  platform ??= startControlPlanePlatform();
  const started = await platform;
  const tenant = await buildTenant(started.system);
  const api = controlPlaneApi(started.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  const folder = new URL(`../fixtures/${project}/`, import.meta.url).pathname;
  const files: Record<string, string> = {};
  for (const name of readdirSync(folder, { recursive: true }) as string[]) {
    if (statSync(join(folder, name)).isFile()) files[name] = readFileSync(join(folder, name), 'utf8');
  }
  const repo = makeGitRepo(files);
  const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: project }) });
  const revision = await waitForRevision(api, created.body.id, created.body.latest_revision_id);
  if (revision.status !== 'DEPLOYED') throw new Error(`the fixture deployment ended ${revision.status}`);
  const gateway = new URL(`${started.url}/deployments/${created.body.id}`);
  // `serve` answers GraphQL at its root; here that is the platform's /graphql, whose types of the
  // deployment's resources resolve through its agent server.
  const upstreamPath = (url = '/') => (/^\/graphql(\/|\?|$)/.test(url) ? url : `${gateway.pathname}${url}`);
  const proxy = createServer((req, res) => {
    const forwarded = request(
      { host: gateway.hostname, port: gateway.port, method: req.method, path: upstreamPath(req.url), headers: { ...req.headers, host: gateway.host, 'x-api-key': tenant.adminKey } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  // WebSockets (the thread stream's) go to the gateway the same way, the key added to the upgrade.
  proxy.on('upgrade', (req, socket, head) => {
    const upstream = connect(Number(gateway.port), gateway.hostname);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    upstream.once('connect', () => {
      const headers = { ...req.headers, host: gateway.host, 'x-api-key': tenant.adminKey };
      const lines = Object.entries(headers).flatMap(([name, value]) => (value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((item) => `${name}: ${item}`)));
      upstream.write(`GET ${upstreamPath(req.url)} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return {
    url,
    client: new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } }),
    deploymentId: created.body.id,
    async stop() {
      proxy.closeAllConnections();
      proxy.close();
      await api('DELETE', `/v2/deployments/${created.body.id}`);
      running -= 1;
      if (running === 0) {
        const stopping = platform;
        platform = undefined;
        await stopControlPlanePlatform(await stopping);
      }
    },
  };
}
