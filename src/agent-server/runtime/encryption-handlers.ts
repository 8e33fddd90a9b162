// The project's encryption at rest (langgraph.json `encryption.path`): deployment code, loaded where
// its other code runs (the agent server and its runtime), which then seal and open the deployment's
// data with it (services/encryption/at-rest.ts).
import { pathToFileURL } from 'node:url';
import type { Config } from '../../config.js';
import type { GraphConfig } from '../../contracts/graph-config.js';
import { type CustomEncryption, type EncryptionHandlers, useEncryptionHandlers } from '../services/encryption/at-rest.js';

const isFunction = (value: unknown): value is (...args: never[]) => unknown => typeof value === 'function';

/**
 * Imports the config's `encryption.path` export and makes it the process's encryption at rest for
 * `config`; undefined when the config names none. Throws naming the file when it cannot be imported,
 * is not an object of handlers, or can seal what it cannot open (an encrypt handler without its
 * decrypt handler), so the agent server does not start on it.
 */
export async function loadEncryptionHandlers(graphConfig: Pick<GraphConfig, 'encryption'>, config: Pick<Config, 'encryption'>): Promise<CustomEncryption | undefined> {
  if (!graphConfig.encryption) return undefined;
  const { file, exportName } = graphConfig.encryption;
  const source = `${file}:${exportName}`;
  let exported: unknown;
  try {
    exported = ((await import(pathToFileURL(file).href)) as Record<string, unknown>)[exportName];
  } catch (error) {
    throw new Error(`Could not load the encryption "${exportName}" from ${file}: ${(error as Error).message}`, { cause: error });
  }
  const handlers = exported as EncryptionHandlers | undefined;
  const problems: string[] = [];
  if (handlers === null || typeof handlers !== 'object') problems.push('it is not an object of handlers ({ encrypt: { blob, json }, decrypt: { blob, json }, context })');
  else {
    for (const kind of ['blob', 'json'] as const) {
      const encrypt = handlers.encrypt?.[kind];
      const decrypt = handlers.decrypt?.[kind];
      if (encrypt !== undefined && !isFunction(encrypt)) problems.push(`encrypt.${kind} is not a function`);
      if (decrypt !== undefined && !isFunction(decrypt)) problems.push(`decrypt.${kind} is not a function`);
      if (isFunction(encrypt) !== isFunction(decrypt)) problems.push(`encrypt.${kind} and decrypt.${kind} go together (what one seals, the other must open)`);
    }
    if (handlers.context !== undefined && !isFunction(handlers.context)) problems.push('context is not a function');
    if (!handlers.encrypt?.blob && !handlers.encrypt?.json) problems.push('it has no encrypt handler');
  }
  if (problems.length) throw new Error(`The encryption "${exportName}" of ${file} cannot be used: ${problems.join('; ')}`);
  return useEncryptionHandlers(config, handlers!, source);
}
