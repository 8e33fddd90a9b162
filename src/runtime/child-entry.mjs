// Entry of a deployment's runtime child process (child-launcher.ts): turns on V8's compile cache,
// registers the TypeScript loader, then runs the child's body. Kept apart from bin/agent-platform.mjs
// so the child never parses the CLI.
import module from 'node:module';
import { register } from 'tsx/esm/api';

// Every child imports LangGraph and the platform's runtime cold: with the cache (a folder of the
// platform's data directory, shared by its children) the second child on a machine compiles less.
if (process.env.AGENT_PLATFORM_COMPILE_CACHE) module.enableCompileCache?.(process.env.AGENT_PLATFORM_COMPILE_CACHE);
register();
await import('./runtime-child.ts');
