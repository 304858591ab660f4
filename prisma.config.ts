// Prisma 7 configuration: where the schema and the migrations live.
// No datasource URL here on purpose: the application picks PGlite or PostgreSQL at run time
// (src/db/client.ts) and applies migrations itself (src/db/migrate.ts), because the
// `prisma migrate` CLI needs a native schema engine that cannot be downloaded on this machine.
// `prisma generate` needs only the schema (set PRISMA_SCHEMA_ENGINE_BINARY to any existing
// file so it does not try to download the engine; see the `generate` npm script).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: {
    path: 'prisma/migrations',
  },
});
