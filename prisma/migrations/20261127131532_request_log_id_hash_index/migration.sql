-- DropIndex
DROP INDEX "api_logs_broker_id_mode_request_id_idx";

-- CreateIndex
CREATE INDEX "api_logs_request_id_idx" ON "api_logs" USING HASH ("request_id");
