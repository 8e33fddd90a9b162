// Entry of a deployment's runtime child process (child-launcher.ts): registers the TypeScript loader,
// then runs the child's body. Kept apart from bin/agent-platform.mjs so the child never parses the CLI.
import { register } from 'tsx/esm/api';

register();
await import('./runtime-child.ts');
