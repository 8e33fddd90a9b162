// `agent-platform deploy <repo>`: the control plane's create-and-wait flow for a terminal or a CI job,
// over the platform's own /v2 API (so it works against any installation, local or remote).
import { basename, resolve } from 'node:path';
import { type Command, Option } from 'commander';

type DeployOptions = { ref: string; config: string; name?: string; wait?: boolean; url: string; apiKey?: string; tenant?: string; timeout: string };

const FINISHED = /^(DEPLOYED|SKIPPED|INTERRUPTED|UNKNOWN)$|FAILED/;

export function registerDeploy(program: Command) {
  program
    .command('deploy <repo>')
    .description('deploy a git repository (URL or path) through the control plane; prints the deployment url')
    .option('--ref <ref>', 'branch, tag or commit to build', 'main')
    .option('--config <path>', 'path of langgraph.json inside the repository', 'langgraph.json')
    .option('--name <name>', 'deployment name (default: the repository name)')
    .option('--wait', 'wait until the revision is DEPLOYED (exit 1 if it fails)')
    .addOption(new Option('--url <url>', 'platform URL').env('AGENT_PLATFORM_URL').default('http://127.0.0.1:4100'))
    .addOption(new Option('--api-key <key>', 'API key').env('AGENT_PLATFORM_API_KEY'))
    .addOption(new Option('--tenant <workspace id>', 'workspace (X-Tenant-Id)').env('AGENT_PLATFORM_TENANT_ID'))
    .option('--timeout <seconds>', 'with --wait: give up after this long', '1800')
    .action(async (repo: string, options: DeployOptions) => {
      if (!options.apiKey || !options.tenant) {
        console.error('deploy needs --api-key and --tenant (or AGENT_PLATFORM_API_KEY and AGENT_PLATFORM_TENANT_ID)');
        process.exitCode = 2;
        return;
      }
      const headers = { 'x-api-key': options.apiKey, 'x-tenant-id': options.tenant, 'content-type': 'application/json' };
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${options.url.replace(/\/$/, '')}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
        const payload = (await response.json().catch(() => undefined)) as any;
        if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(payload?.detail ?? payload)}`);
        return payload;
      };
      // A local path is cloned as such; a bare path is made absolute so the platform finds it.
      const repoUrl = /^[a-z][a-z0-9+.-]*:\/\/|^[^/]+@[^:]+:/i.test(repo) ? repo : resolve(repo);
      try {
        const deployment = await call('POST', '/v2/deployments', {
          name: options.name ?? basename(repo).replace(/\.git$/, ''),
          source: 'github',
          source_config: { repo_url: repoUrl },
          source_revision_config: { repo_ref: options.ref, graph_config_path: options.config },
        });
        console.log(`Deployment ${deployment.id} (revision ${deployment.latest_revision_id}) at ${deployment.url}`);
        if (!options.wait) return;
        const deadline = Date.now() + Number(options.timeout) * 1000;
        let shown = '';
        for (;;) {
          const revision = await call('GET', `/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}`);
          if (revision.status !== shown) console.log(`  ${(shown = revision.status)}`);
          if (FINISHED.test(revision.status)) {
            if (revision.status !== 'DEPLOYED') {
              const logs = await call('GET', `/v2/deployments/${deployment.id}/revisions/${revision.id}/logs?type=build&limit=1000`);
              for (const line of logs.resources) console.error(line.message);
              process.exitCode = 1;
            }
            return;
          }
          if (Date.now() > deadline) throw new Error(`still ${revision.status} after ${options.timeout} s`);
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      } catch (error) {
        console.error((error as Error).message);
        process.exitCode = 1;
      }
    });
}
