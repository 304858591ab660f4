-- DropIndex
DROP INDEX "webhook_deliveries_endpoint_id_status_idx";

-- DropIndex
DROP INDEX "webhook_deliveries_event_id_idx";

-- CreateIndex
CREATE INDEX "webhook_deliveries_event_id_endpoint_id_idx" ON "webhook_deliveries"("event_id", "endpoint_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_endpoint_id_status_completed_at_idx" ON "webhook_deliveries"("endpoint_id", "status", "completed_at");
