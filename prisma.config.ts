// Prisma CLI configuration (Prisma 7 reads the datasource URL here, not from schema.prisma).
// The running platform never uses the CLI: it connects through the pg driver adapter and applies
// prisma/migrations itself (src/db/migrate.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/agent_platform' },
});
