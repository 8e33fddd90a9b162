// The layering of ../shared/DESIGN.md, checked in CI (`npm run lint:deps`, part of `npm test`). Type
// imports and dynamic import() count like any import: neither is a way around a rule.
//
// Which tree a file belongs to is where it stands. src/agent-server/ is ONE deployment's agent server
// (what `serve` and a deployed revision run: its API, runtime, resources and jobs); src/platform/ is the
// trusted platform (control plane and launcher, tenancy, traces, ingest, usage, exports, GraphQL, the
// gateway). They import nothing of each other; both import GROUND: the top of src/ (config, db, errors,
// events, queues, crypto, ids, logger, the viewer, the service context, dependency wiring), contracts/
// (what crosses the wall), database/, http/ (middleware and OpenAPI of every surface) and limits/.
// ENTRY POINTS, also at the top, wire the two together where one process hosts both.
const AGENT_SERVER = '^src/agent-server/';
const PLATFORM = '^src/platform/';
const ENTRY_POINTS = '^src/(main|start|serve|admin|deploy-cli|runtime-thread\\.worker)\\.ts$|^src/thread-entry\\.mjs$';
const GROUND = '^src/(contracts|database|http|limits)/|^src/[^/]+$';
// What each platform call takes and returns is the agent server's API: the platform imports its types, never its code.
const PLATFORM_CALLS = '^src/agent-server/services/served-deployment/platform-calls\\.ts$';
// Services of either tree, and what they must not build on: adapters, roles and wiring.
const SERVICES = '^src/(agent-server|platform)/services/|\\.service\\.ts$';
const ADAPTERS = '^src/(agent-server|platform)/(rest|graphql)/|^src/http/|^src/platform/ingest/[^/]*-wire\\.ts$';
const ROLES_AND_WIRING =
  '^src/(agent-server|platform)/(rest|graphql|jobs|runtime)/|^src/platform/ingest/[^/]*(-wire|-threads|-thread\\.worker)\\.ts$' +
  '|^src/agent-server/[^/]+$|^src/platform/app\\.ts$|^src/wiring\\.ts$|' +
  ENTRY_POINTS;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-cycles', comment: 'A cycle means a module boundary is wrong.', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'agent-server-imports-no-platform',
      comment: "The agent server imports nothing of the platform's tree, only ground: a deployed one runs next to a customer's code.",
      severity: 'error',
      from: { path: AGENT_SERVER },
      to: { path: PLATFORM },
    },
    {
      name: 'platform-imports-no-agent-server',
      comment:
        "The platform reaches every deployment's agent server over HTTP (the gateway, the platform's calls); where one process runs both (a local deployment's agent server), an entry point wires them: the platform imports nothing of the agent server's tree but the platform calls' types.",
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
      name: 'ground-imports-neither-tree',
      comment: 'Ground (the top of src/, contracts/, database/, http/, limits/) is imported by both trees and imports neither, nor an entry point.',
      severity: 'error',
      from: { path: GROUND, pathNot: ENTRY_POINTS },
      to: { path: `${AGENT_SERVER}|${PLATFORM}|${ENTRY_POINTS}` },
    },
    {
      name: 'deployed-agent-server-reaches-no-platform-code',
      comment:
        "A deployed agent server (agent-server/main.ts, in a deployment's sandbox, started through child-entry.mjs) loads no module of the platform's tree and no entry point, directly or through others.",
      severity: 'error',
      from: { path: '^src/agent-server/(main\\.ts|child-entry\\.mjs)$' },
      to: { reachable: true, path: `${PLATFORM}|${ENTRY_POINTS}` },
    },
    {
      name: 'services-import-no-adapter-or-role',
      comment:
        "Services own behaviour; transports (rest, graphql, the ingest wire, http), roles (jobs, the runtime, the ingest threads), a tree's wiring and the entry points build on them.",
      severity: 'error',
      from: { path: SERVICES },
      to: { path: `${ADAPTERS}|${ROLES_AND_WIRING}` },
    },
    {
      name: 'services-load-no-launcher',
      comment: "The launcher (sandbox, source checkout, child processes) builds on the services; a service may name one of its types, never load it.",
      severity: 'error',
      from: { path: SERVICES },
      to: { path: '^src/platform/launcher/', dependencyTypesNot: ['type-only'] },
    },
    { name: 'stores-import-no-service', comment: 'A store talks SQL for its service, never the other way round.', severity: 'error', from: { path: '\\.store\\.ts$' }, to: { path: '\\.service\\.ts$' } },
    { name: 'adapters-import-no-store', comment: 'REST, GraphQL and the ingest wire go through services.', severity: 'error', from: { path: ADAPTERS }, to: { path: '\\.store\\.ts$' } },
  ],
  required: [
    {
      name: 'every-file-in-a-tree',
      comment:
        'A file of src/ stands in the agent server (src/agent-server/), the platform (src/platform/) or ground (the top of src/, contracts/, database/, http/, limits/). A new folder anywhere else belongs to no tree: move the file into one. (A required rule, so it holds for a file with no imports too: this one asks for an import nothing can be.)',
      severity: 'error',
      module: { path: '^src/', pathNot: `${AGENT_SERVER}|${PLATFORM}|${GROUND}` },
      to: { path: '^$' },
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
