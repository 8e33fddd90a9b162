// Structured logs (pino). Credentials never reach a log line: headers and known secret fields are redacted.
import { pino, type Logger } from 'pino';
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

export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>): Logger {
  return pino({
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(config.logPretty ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  });
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
