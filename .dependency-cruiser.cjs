// The layering of ../shared/DESIGN.md, checked in CI (`npm run lint:deps`, part of `npm test`). Type
// imports and dynamic import() count like any import: neither is a way around a rule.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-cycles', comment: 'A cycle means a module boundary is wrong.', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'services-import-no-adapter-or-role',
      comment: 'Services own behaviour; transports (rest, graphql), roles (workers, runtime) and entry points build on them.',
      severity: 'error',
      from: { path: '^src/services/' },
      to: { path: '^src/(rest|graphql|workers|runtime)/|^src/(main|platform|serve|app|admin|deploy-cli|process)\\.ts$' },
    },
    { name: 'stores-import-no-service', comment: 'A store talks SQL for its service, never the other way round.', severity: 'error', from: { path: '\\.store\\.ts$' }, to: { path: '\\.service\\.ts$' } },
    { name: 'adapters-import-no-store', comment: 'REST and GraphQL go through services.', severity: 'error', from: { path: '^src/(rest|graphql)/' }, to: { path: '\\.store\\.ts$' } },
    {
      name: 'api-imports-no-runtime',
      comment: "The platform's API never loads deployed code or the runtime that runs it.",
      severity: 'error',
      from: { path: '^src/(rest|graphql)/|^src/app\\.ts$' },
      to: { path: '^src/runtime/' },
    },
    {
      name: 'runtime-imports-no-platform-adapter',
      comment: "The runtime serves the agent server's routes (rest/agent-server, rest/middleware) and nothing else of the platform's transports.",
      severity: 'error',
      from: { path: '^src/runtime/' },
      to: { path: '^src/graphql/|^src/rest/(?!agent-server/|middleware/)' },
    },
    {
      name: 'deployed-agent-server-loads-no-platform-work',
      comment:
        "A deployed agent server (runtime-child.ts, in a deployment's sandbox) loads none of the platform's GraphQL, exports, or the worker role's platform jobs (platform-jobs.ts): what runs next to a customer's code is the agent server, not the platform.",
      severity: 'error',
      from: { path: '^src/runtime/runtime-child\\.ts$' },
      to: { reachable: true, path: '^src/(graphql/|services/exports/|workers/(platform-jobs|usage-fold|export-run|traces-|revision|revisions-))' },
    },
    {
      name: 'ground-imports-nothing-above',
      comment: 'Ground modules (config, db, errors, events, queues, crypto, …) are imported by all and import no area.',
      severity: 'error',
      from: { path: '^src/(config|db|errors|events|queues|crypto|ids|logger|serialize|graph-config)\\.ts$|^src/(database|limits)/' },
      to: { path: '^src/(services|rest|graphql|workers|runtime)/' },
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
