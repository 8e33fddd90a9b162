// The only reader of process.env. Parsed once with zod; a bad configuration lists every problem.
import { z } from 'zod';

const ROLES = ['api', 'worker', 'runtime'] as const;
export type Role = (typeof ROLES)[number];

const byteSize = z
  .string()
  .regex(/^\d+(b|kb|mb|gb)?$/i, 'expected a size such as 512kb or 10mb');

const EnvSchema = z.object({
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(4100),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z.url().optional(),
  AGENT_PLATFORM_DATA_DIR: z.string().min(1).default('.data'),
  AGENT_PLATFORM_ROLES: z
    .string()
    .default(ROLES.join(','))
    .transform((value) => value.split(',').map((role) => role.trim()).filter(Boolean))
    .pipe(z.array(z.enum(ROLES)).min(1, 'name at least one role')),
  /** base64 of 32 bytes; generated into the data directory on the first embedded start */
  AGENT_PLATFORM_SECRET_KEY: z
    .string()
    .refine((value) => Buffer.from(value, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
    .optional(),
  AGENT_PLATFORM_BODY_LIMIT: byteSize.default('10mb'),
  AGENT_PLATFORM_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_PRETTY: z.stringbool().default(false),
});

export type Config = {
  databaseUrl: string | undefined;
  port: number;
  host: string;
  publicUrl: string | undefined;
  dataDir: string;
  roles: Role[];
  secretKey: Buffer | undefined;
  bodyLimit: string;
  dbPoolSize: number;
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  logPretty: boolean;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

/** Parses the environment (plus CLI overrides, which win) into a Config; throws ConfigError listing every problem. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Record<string, string | undefined> = {},
): Config {
  const merged = { ...env };
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) merged[key] = value;
  // Empty variables mean "unset", as in most .env tooling.
  for (const key of Object.keys(merged)) if (merged[key] === '') delete merged[key];

  const parsed = EnvSchema.safeParse(merged);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'env'}: ${issue.message}`));
  }
  const value = parsed.data;
  return {
    databaseUrl: value.DATABASE_URL,
    port: value.PORT,
    host: value.HOST,
    publicUrl: value.PUBLIC_URL?.replace(/\/$/, ''),
    dataDir: value.AGENT_PLATFORM_DATA_DIR,
    roles: [...new Set(value.AGENT_PLATFORM_ROLES)],
    secretKey: value.AGENT_PLATFORM_SECRET_KEY ? Buffer.from(value.AGENT_PLATFORM_SECRET_KEY, 'base64') : undefined,
    bodyLimit: value.AGENT_PLATFORM_BODY_LIMIT,
    dbPoolSize: value.AGENT_PLATFORM_DB_POOL_SIZE,
    logLevel: value.LOG_LEVEL,
    logPretty: value.LOG_PRETTY,
  };
}
