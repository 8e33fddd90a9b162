// `agent-platform admin …`: operator commands that act as the system (no API key needed), straight
// on the database. Every command prints a readable line per row, or JSON with --json; `keys create`
// prints the key alone, so scripts can capture it.
import { pino } from 'pino';
import type { Command } from 'commander';
import type { Config } from './config.js';
import { createDeps } from './wiring.js';
import type { ServiceContext } from './context.js';
import { registerLocalDeployment } from './platform/services/deployments/local-deployments.js';
import * as apiKeys from './platform/services/tenancy/api-keys.service.js';
import * as tenancy from './platform/services/tenancy/tenancy.service.js';
import { rebuildUsageRollups } from './platform/services/usage/usage.service.js';
import { backupInstallation, restoreInstallation } from './platform/launcher/installation-backup.js';
import { SYSTEM_VIEWER } from './viewer.js';

type Common = { json?: boolean; dataDir?: string };

async function withSystem<T>(config: Config, work: (ctx: ServiceContext) => Promise<T>): Promise<T> {
  // Admin output goes to stdout; logs only to stderr and only when something is wrong.
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const { deps, stop } = await createDeps(config, logger, { listen: false });
  try {
    return await work({ ...deps, viewer: SYSTEM_VIEWER });
  } finally {
    await stop();
  }
}

function print(json: boolean | undefined, rows: unknown, text: (row: any) => string) {
  if (json) return console.log(JSON.stringify(rows, null, 2));
  for (const row of Array.isArray(rows) ? rows : [rows]) console.log(text(row));
}

export function runAdmin(program: Command, configFrom: (options: Common) => Config) {
  const admin = program.command('admin').description('manage organizations, workspaces, users and API keys');
  const run = <O extends Common>(action: (ctx: ServiceContext, options: O, args: string[]) => Promise<void>) =>
    async (...params: unknown[]) => {
      const command = params.at(-1) as Command;
      const options = command.optsWithGlobals() as O;
      // Expected failures (AppError) are printed as `error: …` by main.ts, without a stack trace.
      await withSystem(configFrom({ dataDir: options.dataDir }), (ctx) => action(ctx, options, command.args));
    };
  admin.option('--json', 'machine-readable output').option('--data-dir <dir>', 'data directory of the embedded database');

  const orgs = admin.command('orgs').description('organizations');
  orgs
    .command('create')
    .requiredOption('--name <name>', 'display name')
    .option('--plan <tier>', 'free | plus | enterprise', 'enterprise')
    .option('--cloud', 'not self-hosted (self-hosted by default)')
    .action(
      run<Common & { name: string; plan: string; cloud?: boolean }>(async (ctx, o) => {
        const org = await tenancy.createOrganization(ctx, { name: o.name, planTier: o.plan as 'free', selfHosted: !o.cloud });
        print(o.json, org, (r) => `${r.id}  ${r.name}  ${r.planTier}`);
      }),
    );
  orgs.command('list').action(
    run(async (ctx, o) => print(o.json, await tenancy.listOrganizations(ctx), (r) => `${r.id}  ${r.name}  ${r.planTier}${r.selfHosted ? '  self-hosted' : ''}`)),
  );

  const workspaces = admin.command('workspaces').description('workspaces');
  workspaces
    .command('create')
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--name <name>', 'display name')
    .action(
      run<Common & { org: string; name: string }>(async (ctx, o) => {
        print(o.json, await tenancy.createWorkspace(ctx, { organizationId: o.org, name: o.name }), (r) => `${r.id}  ${r.name}`);
      }),
    );
  workspaces
    .command('list')
    .option('--org <id>', 'only this organization')
    .action(
      run<Common & { org?: string }>(async (ctx, o) => {
        print(o.json, await tenancy.listWorkspaces(ctx, { organizationId: o.org }), (r) => `${r.id}  ${r.name}  org=${r.organizationId}`);
      }),
    );

  const users = admin.command('users').description('users and their roles');
  users
    .command('create')
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--email <email>', 'email address')
    .option('--name <name>', 'display name')
    .option('--role <role>', 'ORGANIZATION_ADMIN | ORGANIZATION_MEMBER | ORGANIZATION_GUEST', 'ORGANIZATION_MEMBER')
    .option('--workspace <id:role...>', 'workspace membership, e.g. <id>:WORKSPACE_VIEWER (repeatable)')
    .action(
      run<Common & { org: string; email: string; name?: string; role: string; workspace?: string[] }>(async (ctx, o) => {
        const user = await tenancy.createUser(ctx, {
          organizationId: o.org,
          email: o.email,
          name: o.name,
          organizationRole: o.role as 'ORGANIZATION_MEMBER',
          workspaces: (o.workspace ?? []).map((entry) => {
            const [workspaceId, role] = entry.split(':');
            return { workspaceId: workspaceId ?? '', role: (role ?? 'WORKSPACE_VIEWER') as 'WORKSPACE_VIEWER' };
          }),
        });
        print(o.json, user, (r) => `${r.id}  ${r.email}`);
      }),
    );
  users
    .command('list')
    .option('--org <id>', 'only this organization')
    .action(run<Common & { org?: string }>(async (ctx, o) => print(o.json, await tenancy.listUsers(ctx, { organizationId: o.org }), (r) => `${r.id}  ${r.email}`)));

  const deployments = admin.command('deployments').description('deployments of graph configs on this machine');
  deployments
    .command('create')
    .description('record a graph config (langgraph.json) as a deployment; run it with `start --role runtime --deployment <id>`')
    .requiredOption('--config <path>', 'path to langgraph.json')
    .option('--workspace <id>', 'the workspace it belongs to (default: the installation\'s first)')
    .option('--name <name>', 'display name (default: the config\'s folder name)')
    .action(
      run<Common & { config: string; workspace?: string; name?: string }>(async (ctx, o) => {
        const deployment = await registerLocalDeployment(ctx, { configPath: o.config, workspaceId: o.workspace, name: o.name });
        print(o.json, deployment, (r) => `${r.deploymentId}  ${r.name}  graphs=${r.graphIds.join(',')}`);
      }),
    );

  const keys = admin.command('keys').description('API keys');
  keys
    .command('create')
    .requiredOption('--org <id>', 'organization ID')
    .requiredOption('--user <id>', 'user ID the key acts for')
    .option('--workspace <id>', 'bind the key to one workspace')
    .option('--description <text>', 'what the key is for', '')
    .action(
      run<Common & { org: string; user: string; workspace?: string; description: string }>(async (ctx, o) => {
        const created = await apiKeys.createApiKey(ctx, {
          organizationId: o.org,
          userId: o.user,
          workspaceId: o.workspace ?? null,
          description: o.description,
        });
        print(o.json, { ...created.apiKey, secretHash: undefined, key: created.key }, () => created.key);
      }),
    );
  keys
    .command('list')
    .option('--org <id>', 'only this organization')
    .option('--all', 'include revoked keys')
    .action(
      run<Common & { org?: string; all?: boolean }>(async (ctx, o) => {
        const rows = (await apiKeys.listApiKeys(ctx, { organizationId: o.org, includeRevoked: o.all })).map(({ secretHash: _hidden, ...row }) => row);
        print(o.json, rows, (r) => `${r.id}  ${r.shortKey}  user=${r.userId}${r.workspaceId ? ` workspace=${r.workspaceId}` : ''}${r.revokedAt ? '  revoked' : ''}  ${r.description}`);
      }),
    );
  keys
    .command('revoke <id>')
    .action(
      run(async (ctx, o, args) => {
        const { secretHash: _hidden, ...row } = await apiKeys.revokeApiKey(ctx, args[0] ?? '');
        print(o.json, row, (r) => `revoked ${r.id}  ${r.shortKey}`);
      }),
    );

  // Backup and restore act on the data directory itself, before (restore) or beside (backup) a platform: no services needed.
  const onDataDirectory = (action: typeof backupInstallation) => async (dir: string, _options: unknown, command: Command) => {
    const options = command.optsWithGlobals() as Common;
    const logger = pino({ level: 'warn' }, pino.destination(2));
    const manifest = await action(configFrom({ dataDir: options.dataDir }), logger, dir, options.json ? () => undefined : (line) => console.log(line));
    if (options.json) console.log(JSON.stringify(manifest, null, 2));
  };
  admin
    .command('backup <dir>')
    .description('copy the embedded database (the platform\'s and every deployment\'s, at one moment), the key material and deployments\' files into a new folder; safe while the platform runs')
    .action(onDataDirectory(backupInstallation));
  admin
    .command('restore <dir>')
    .description('restore a backup into an empty data directory (start the platform on it afterwards)')
    .action(onDataDirectory(restoreInstallation));

  const usage = admin.command('usage').description('usage rollups');
  usage
    .command('rebuild')
    .description('recompute the usage rollups from the stored traces (safe while ingestion runs)')
    .action(
      run(async (ctx, o) => {
        print(o.json, await rebuildUsageRollups(ctx), (r) => `rebuilt usage rollups: ${r.traces} traces, ${r.rollupRows} rollup rows`);
      }),
    );
}
