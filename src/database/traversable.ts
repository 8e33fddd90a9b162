// Another OS user (PostgreSQL's when the platform runs as root, a deployment's sandbox user) must reach
// a folder of ours through every parent: each parent gets the "others may traverse" bit (o+x), never
// "others may list" (o+r), so such a user reaches only paths it is given by name.
import { chmodSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** Adds o+x to `dir` and each of its parents that lacks it; logs the folders it changed. */
export function makeTraversable(dir: string, logger: { warn(obj: object, msg: string): void }): void {
  const changed: string[] = [];
  for (let current = dir; ; current = dirname(current)) {
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(current, mode | 0o001);
      changed.push(current);
    }
    if (dirname(current) === current) break;
  }
  if (changed.length) logger.warn({ folders: changed }, 'made folders traversable for another OS user');
}
