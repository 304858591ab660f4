-- DropIndex
DROP INDEX "services_broker_id_status_idx";

-- CreateIndex
CREATE INDEX "services_broker_id_status_cancel_at_idx" ON "services"("broker_id", "status", "cancel_at");
