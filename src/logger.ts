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
