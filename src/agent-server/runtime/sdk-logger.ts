// The logger graph code reaches through `getLogger()` of `@langchain/langgraph-sdk/logging`. LangGraph
// Platform registers one on a well-known global symbol before it loads graphs, and `getLogger()` throws
// without it, so a graph module that logs at import time would fail to load here. This registers the
// platform's pino logger there, with the SDK's leveled methods (winston's level names).
import type { Logger } from 'pino';

const SDK_LOGGER = Symbol.for('langgraph.api.sdk-logger');

type PinoLevel = 'error' | 'warn' | 'info' | 'debug' | 'trace';

// winston's npm and cli levels, which the SDK's Logger type names, onto pino's.
const LEVELS: Record<string, PinoLevel> = {
  error: 'error',
  warn: 'warn',
  help: 'info',
  data: 'info',
  info: 'info',
  prompt: 'info',
  http: 'debug',
  verbose: 'debug',
  input: 'debug',
  debug: 'debug',
  silly: 'trace',
};

type SdkLogMethod = (message: unknown, ...meta: unknown[]) => SdkLogger;
type SdkLogger = Record<keyof typeof LEVELS, SdkLogMethod>;

/** An SDK-shaped logger over pino: `(message, ...meta)` or `(infoObject)`, chainable as winston's. */
function toSdkLogger(logger: Logger): SdkLogger {
  const sdk = {} as SdkLogger;
  for (const [name, level] of Object.entries(LEVELS)) {
    sdk[name] = (message, ...meta) => {
      const fields = Object.assign({}, ...meta.filter((item) => typeof item === 'object' && item !== null));
      if (typeof message === 'object' && message !== null) {
        const { message: text, ...rest } = message as { message?: unknown };
        logger[level]({ ...rest, ...fields }, typeof text === 'string' ? text : undefined);
      } else {
        const extra = meta.filter((item) => typeof item !== 'object' || item === null);
        logger[level](fields, [message, ...extra].map(String).join(' '));
      }
      return sdk;
    };
  }
  return sdk;
}

/**
 * Registers the SDK logger in this thread (each worker thread has its own globals), unless one is
 * there already. Call before importing graph modules.
 */
export function registerSdkLogger(logger: Logger): void {
  const scope = globalThis as Record<symbol, unknown>;
  if (!(SDK_LOGGER in scope)) scope[SDK_LOGGER] = toSdkLogger(logger.child({ source: 'graph' }));
}
