-- migrate:no-transaction
-- getRequestStats and getWebhookEndpointStats (issue 48), written for big `api_logs` and
-- `webhook_deliveries` tables (docs/upgrading.md, "Writing a migration"): the indexes are built
-- concurrently, so requests and deliveries keep being written meanwhile. The request log's range
-- index is widened (status, duration, operation carried in it) rather than joined by a second one,
-- so every request still updates one B-tree of it; the new one is built before the old one goes.
-- Every step can run again after a failure (an index left invalid by a failed build is dropped first).
SET lock_timeout = '2s';
SET statement_timeout = '30min';

-- CreateIndex
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = 'api_logs_broker_id_mode_at_id_status_duration_ms_operation_idx' AND NOT i.indisvalid) THEN
    DROP INDEX "api_logs_broker_id_mode_at_id_status_duration_ms_operation_idx";
  END IF;
END $$;
CREATE INDEX CONCURRENTLY IF NOT EXISTS "api_logs_broker_id_mode_at_id_status_duration_ms_operation_idx" ON "api_logs"("broker_id", "mode", "at", "id", "status", "duration_ms", "operation");

-- DropIndex
DROP INDEX CONCURRENTLY IF EXISTS "api_logs_broker_id_mode_at_id_idx";

-- CreateIndex
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = 'webhook_deliveries_endpoint_id_created_at_idx' AND NOT i.indisvalid) THEN
    DROP INDEX "webhook_deliveries_endpoint_id_created_at_idx";
  END IF;
END $$;
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_endpoint_id_created_at_idx" ON "webhook_deliveries"("endpoint_id", "created_at");
