// Entry of the runtime thread (see runtime-thread.ts). Worker threads do not inherit the main
// thread's module hooks, so the TypeScript loader is registered here too.
import { register } from 'tsx/esm/api';

register();
await import('./runtime-thread.worker.ts');
