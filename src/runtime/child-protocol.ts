// What a deployment's runtime child (runtime-child.ts) and its launcher (child-launcher.ts) say to each
// other over the child's IPC channel.

/** Launcher → child. */
export type ChildCommand = 'serve' | 'stop';
/** Child → launcher. */
export type ChildReport =
  | { type: 'loaded'; graphIds: string[] }
  | { type: 'ready'; url: string; graphIds: string[]; runtimeId: string }
  | { type: 'failed'; message: string };
