// The layering of ../shared/DESIGN.md, checked in CI (`npm run lint:deps`, part of `npm test`). Type
// imports and dynamic import() count like any import: neither is a way around a rule.
//
// Two trees and their ground. The AGENT SERVER (what runs a deployment: its API, runtime, resources and
// jobs) and the PLATFORM (control plane and launcher, tenancy, traces, usage, exports, GraphQL, the
// gateway) import nothing of each other; both import GROUND (the contracts between them, the database,
// configuration, errors, the event bus, the viewer). COMPOSITION ROOTS (entry points) wire the two
// together where one process hosts both (`start` hosting local deployments, `serve`).
const GROUND =
  '^src/(config|db|errors|events|queues|crypto|ids|logger|serialize|graph-config|gateway-protocol|launcher-protocol|trace-wire|viewer|viewer-cache|process)\\.ts$' +
  '|^src/(database|limits|rest/middleware|rest/openapi)/|^src/services/(context|validate|search-page)\\.ts$|^src/services/system/health\\.service\\.ts$';
const AGENT_SERVER =
  '^src/(runtime|rest/agent-server)/|^src/services/(agent-server|assistants|threads|runs|crons|store|a2a|mcp|custom-auth)/|^src/services/system/metrics\\.' +
  '|^src/workers/(boss|cron-fire\\.job|runs-sweep\\.job|store-sweep\\.job|threads-sweep\\.job|events-prune\\.job)\\.ts$';
const PLATFORM =
  '^src/(graphql|launcher)/|^src/rest/(?!agent-server/|middleware/|openapi/)|^src/services/(tenancy|deployments|traces|usage|exports|integrations|listeners|oauth-providers)/' +
  '|^src/services/system/ping\\.|^src/workers/(?!boss\\.|cron-fire\\.|runs-sweep\\.|store-sweep\\.|threads-sweep\\.|events-prune\\.)|^src/app\\.ts$';
const COMPOSITION_ROOTS = '^src/(main|platform|serve|admin|deploy-cli)\\.ts$|^src/runtime/runtime-thread\\.worker\\.ts$';
// What each platform call takes and returns is the agent server's API: the platform imports its types, never its code.
const PLATFORM_CALLS = '^src/services/agent-server/platform-calls\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-cycles', comment: 'A cycle means a module boundary is wrong.', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'services-import-no-adapter-or-role',
      comment: 'Services own behaviour; transports (rest, graphql), roles (workers, runtime, launcher) and entry points build on them.',
      severity: 'error',
      from: { path: '^src/services/' },
      to: { path: '^src/(rest|graphql|workers|runtime|launcher)/|^src/(main|platform|serve|app|admin|deploy-cli|process)\\.ts$' },
    },
    { name: 'stores-import-no-service', comment: 'A store talks SQL for its service, never the other way round.', severity: 'error', from: { path: '\\.store\\.ts$' }, to: { path: '\\.service\\.ts$' } },
    { name: 'adapters-import-no-store', comment: 'REST and GraphQL go through services.', severity: 'error', from: { path: '^src/(rest|graphql)/' }, to: { path: '\\.store\\.ts$' } },
    {
      name: 'agent-server-imports-no-platform',
      comment:
        "The agent server imports nothing of the platform's tree, only ground code: a deployed one runs next to a customer's code. Where a process hosts both (platform.ts, serve.ts, a runtime thread's entry), its composition root wires them.",
      severity: 'error',
      from: { path: AGENT_SERVER, pathNot: COMPOSITION_ROOTS },
      to: { path: PLATFORM },
    },
    {
      name: 'platform-imports-no-agent-server',
      comment:
        "The platform reaches a deployment's agent server over HTTP (the gateway, the platform's calls), and a local deployment's through what its composition root hands it (Deps.localAgentCalls, buildApp's localDeployments): it imports nothing of the agent server's tree but the platform calls' types.",
      severity: 'error',
      from: { path: PLATFORM },
      to: { path: AGENT_SERVER, pathNot: PLATFORM_CALLS },
    },
    {
      name: 'platform-calls-types-only',
      comment: "The platform's calls are typed by the agent server's functions; the platform never loads them.",
      severity: 'error',
      from: { path: PLATFORM },
      to: { path: PLATFORM_CALLS, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'deployed-agent-server-reaches-no-platform-code',
      comment:
        "A deployed agent server (runtime-child.ts, in a deployment's sandbox) loads no module of the platform's tree, directly or through others: what runs next to a customer's code is the agent server and ground code.",
      severity: 'error',
      from: { path: '^src/runtime/runtime-child\\.ts$' },
      to: { reachable: true, path: PLATFORM },
    },
    {
      name: 'ground-imports-nothing-above',
      comment: "Ground modules (the trees' contracts, config, db, errors, events, queues, crypto, the viewer, …) are imported by both trees and import neither.",
      severity: 'error',
      from: { path: GROUND },
      to: { path: `${AGENT_SERVER}|${PLATFORM}|${COMPOSITION_ROOTS}` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    // TypeScript 7 has no JavaScript API yet, so sources are parsed with swc; type-only imports count.
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.mjs'] },
  },
};
