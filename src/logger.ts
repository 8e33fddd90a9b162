// Structured logs (pino). Credentials never reach a log line: headers and known secret fields are redacted.
import { type DestinationStream, pino, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';
import type { Config } from './config.js';

export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-service-key"]',
  '*.password',
  '*.secret',
  '*.apiKey',
  '*.key',
  '*.client_secret',
  '*.secret_access_key',
  '*.session_token',
  'secrets[*].value',
];

/**
 * A command's default for LOG_PRETTY: readable lines on a terminal, as `langgraph dev` prints them, and
 * JSON lines, which log collectors read, when output goes to a pipe or a file. Decided once, where
 * the configuration is loaded: worker threads and children, whose output is never a terminal, log
 * as their process does.
 */
export const logDefaults = (stdout: { isTTY?: boolean }): { LOG_PRETTY: string } => ({ LOG_PRETTY: String(stdout.isTTY === true) });

/** The process's logger, writing to `destination` (stdout by default): JSON lines, or with `logPretty` one readable line each. */
export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (!config.logPretty) return destination ? pino(options, destination) : pino(options);
  // In this thread and synchronous, unlike a pino transport's worker: the lines a crash logs last are
  // on the terminal before the process exits. pid and hostname say nothing to someone at its terminal.
  const pretty = pinoPretty({ destination: destination ?? 1, sync: true, singleLine: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' });
  return pino(options, pretty);
}

// What one value may add to a log line. Libraries log errors whose messages quote the request's
// values (GraphQL's "Variable got invalid value …" quotes a variable whole, megabytes if sent so).
const LOGGED_TEXT_MAX = 2_000;

/** `value` cut to a bounded size for a log line: long strings shortened, errors as name, message and stack, large objects as shortened JSON. */
export function boundForLog(value: unknown): unknown {
  if (typeof value === 'string') return value.length > LOGGED_TEXT_MAX ? `${value.slice(0, LOGGED_TEXT_MAX)}… (${value.length} characters)` : value;
  if (value instanceof Error) return { type: value.name, message: boundForLog(value.message), stack: boundForLog(value.stack) };
  if (Array.isArray(value)) return value.slice(0, 20).map(boundForLog);
  if (typeof value !== 'object' || value === null) return value;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return '[unserializable]';
  }
  return text !== undefined && text.length > LOGGED_TEXT_MAX ? boundForLog(text) : value;
}
