-- DropIndex
DROP INDEX "api_logs_broker_id_at_idx";

-- AlterTable
ALTER TABLE "api_logs" ADD COLUMN     "error_code" TEXT,
ADD COLUMN     "idempotency_replayed" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "operation" TEXT;

-- CreateIndex
CREATE INDEX "api_logs_broker_id_mode_at_id_idx" ON "api_logs"("broker_id", "mode", "at", "id");

-- CreateIndex
CREATE INDEX "api_logs_broker_id_mode_request_id_idx" ON "api_logs"("broker_id", "mode", "request_id");
