-- migrate:no-transaction
-- The safe form of 20261129000314's change (a required column with a volatile default, and a
-- unique index on it) on webhook_deliveries, for `npm run bench:migrations -- --with
-- bench/migrations-example` (docs/upgrading.md, "Writing a migration"). Not a real migration.
SET lock_timeout = '2s';
SET statement_timeout = '30min';

-- 1. The column, nullable, and its default for new rows only: no rewrite, locks of milliseconds.
ALTER TABLE "webhook_deliveries" ADD COLUMN IF NOT EXISTS "bench_ref" TEXT;
-- Setting a default again is harmless, so is SET NOT NULL on a column that is NOT NULL already:
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_deliveries" ALTER COLUMN "bench_ref" SET DEFAULT ('whr_' || replace(gen_random_uuid()::text, '-', ''));

-- 2. The existing rows filled in batches of 10,000, each committed, so no row lock is held long.
DO $$
DECLARE
  done_to bigint := 0;
  batch_end bigint;
BEGIN
  LOOP
    SELECT max(id) INTO batch_end FROM (SELECT id FROM "webhook_deliveries" WHERE id > done_to ORDER BY id LIMIT 10000) b;
    EXIT WHEN batch_end IS NULL;
    UPDATE "webhook_deliveries" SET "bench_ref" = 'whr_' || replace(gen_random_uuid()::text, '-', '')
    WHERE id > done_to AND id <= batch_end AND "bench_ref" IS NULL;
    done_to := batch_end;
    COMMIT;
  END LOOP;
END $$;

-- 3. Required without a scan under an exclusive lock: a check NOT VALID, validated (writes go
-- on), then SET NOT NULL, which the valid check proves without scanning.
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT IF EXISTS "webhook_deliveries_bench_ref_not_null";
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_bench_ref_not_null" CHECK ("bench_ref" IS NOT NULL) NOT VALID;
ALTER TABLE "webhook_deliveries" VALIDATE CONSTRAINT "webhook_deliveries_bench_ref_not_null";
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "webhook_deliveries" ALTER COLUMN "bench_ref" SET NOT NULL;

-- 4. The unique index, built concurrently.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_bench_ref_key" ON "webhook_deliveries" ("bench_ref");
