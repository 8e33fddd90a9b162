// Entry of a deployment's runtime child process (child-launcher.ts): turns on V8's compile cache,
// registers the TypeScript loader, then runs the child's body. Kept apart from bin/agent-platform.mjs
// so the child never parses the CLI.
//
// With AGENT_PLATFORM_WARM_UP it only imports the modules a child imports, and exits: the platform
// warms the caches deployments' children start with that way (runtime-caches.ts), running none of
// their code.
import { mkdirSync } from 'node:fs';
import module from 'node:module';
import { register } from 'tsx/esm/api';

// Every child imports LangGraph and the platform's runtime: with a warm cache (the deployment's own,
// seeded by the platform) it compiles only what is new.
if (process.env.AGENT_PLATFORM_COMPILE_CACHE) module.enableCompileCache?.(process.env.AGENT_PLATFORM_COMPILE_CACHE);
// tsx's cache folder (its sandbox's /tmp/tsx-<uid> leads there), made by the deployment's own user:
// the platform writes nothing in the deployment's folders.
try {
  if (process.env.AGENT_PLATFORM_TSX_CACHE) mkdirSync(process.env.AGENT_PLATFORM_TSX_CACHE, { recursive: true, mode: 0o700 });
} catch {
  // Something of the deployment's own is in the way: tsx then works without its cache.
}
register();
if (process.env.AGENT_PLATFORM_WARM_UP) {
  // agent-server/main.ts's imports, static and dynamic (its body needs a deployment).
  await Promise.all([
    import('@langchain/langgraph'),
    import('./runtime/graph-registry.ts'),
    import('./runtime/custom-app.ts'),
    import('../database/migrate.ts'),
    import('./deployed-agent-server.ts'),
  ]);
  module.flushCompileCache?.();
  // tsx writes its cache entries without waiting: the process ends once they are written (10 s at most).
  setTimeout(() => process.exit(0), 10_000).unref();
} else {
  await import('./main.ts');
}
