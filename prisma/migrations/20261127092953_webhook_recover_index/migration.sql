-- DropIndex
DROP INDEX "webhook_deliveries_endpoint_id_status_idx";

-- CreateIndex
CREATE INDEX "webhook_deliveries_endpoint_id_status_completed_at_idx" ON "webhook_deliveries"("endpoint_id", "status", "completed_at");
