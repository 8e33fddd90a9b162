// `http.app` of langgraph.json: the project's own HTTP app (a Hono app, or anything with a fetch
// handler), served by the agent server in front of its own routes, as the reference server does.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { CustomApp } from '../services/served-deployment/runtime-protocol.js';
import type { GraphConfig } from '../../contracts/graph-config.js';
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

// The SDK's Client reads these globals when it is given no apiUrl (LangGraph's servers set them, so
// project code may call `new Client()` to reach the server it runs in).
const SDK_FETCH = Symbol.for('langgraph_api:fetch');
const SDK_URL = Symbol.for('langgraph_api:url');

/**
 * Makes the SDK's `new Client()` without an apiUrl, in this thread, call this agent server, as under
 * the reference server. Returns the setter of the server's url, known once it listens: calls made
 * before that fail.
 */
export function bindSdkClientsToServer(options: { headers?(method: string, path: string): Record<string, string> } = {}): (serverUrl: string) => void {
  let base: string | undefined;
  const global = globalThis as Record<symbol, unknown>;
  global[SDK_FETCH] = (input: string | URL | Request, init?: RequestInit) => {
    if (!base) return Promise.reject(new Error('The agent server is not listening yet'));
    const asked = new URL(input instanceof Request ? input.url : input);
    const path = `${asked.pathname}${asked.search}`;
    const target = new URL(path, base);
    const request = input instanceof Request ? new Request(target, input) : new Request(target, init);
    // Behind the platform's gateway the server answers signed requests only: its own process signs them.
    for (const [name, value] of Object.entries(options.headers?.(request.method, path) ?? {})) request.headers.set(name, value);
    return fetch(request);
  };
  return (serverUrl) => {
    base = serverUrl;
    global[SDK_URL] = serverUrl;
  };
}
