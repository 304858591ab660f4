-- DropIndex
DROP INDEX "service_requests_broker_id_created_at_idx";

-- CreateIndex
CREATE INDEX "service_requests_broker_id_created_at_id_idx" ON "service_requests"("broker_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "services_broker_id_created_at_id_idx" ON "services"("broker_id", "created_at" DESC, "id" DESC);
