// `http.app` of langgraph.json: the project's own HTTP app (a Hono app, or anything with a fetch
// handler), served by the agent server in front of its own routes, as the reference server does.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { CustomApp } from '../services/deployments/runtime-protocol.js';
import type { GraphConfig } from '../graph-config.js';
import { registerSdkLogger } from './sdk-logger.js';


/** Imports the config's `http.app` export, if it names one; throws naming the file when it cannot. */
export async function loadCustomApp(config: Pick<GraphConfig, 'root' | 'httpApp'>, logger: Logger): Promise<CustomApp | undefined> {
  if (!config.httpApp) return undefined;
  const [file, exportName] = config.httpApp.split(':', 2) as [string, string | undefined];
  const path = resolve(config.root, file);
  registerSdkLogger(logger);
  let app: unknown;
  try {
    app = ((await import(pathToFileURL(path).href)) as Record<string, unknown>)[exportName || 'default'];
  } catch (error) {
    throw new Error(`Could not load the HTTP app "${config.httpApp}" from ${path}: ${(error as Error).message}`, { cause: error });
  }
  if (typeof (app as CustomApp | undefined)?.fetch !== 'function') {
    throw new Error(`The HTTP app "${config.httpApp}" is not an app with a fetch handler (such as a Hono app)`);
  }
  return app as CustomApp;
}
