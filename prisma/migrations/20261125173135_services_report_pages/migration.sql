-- CreateIndex
CREATE INDEX "services_broker_id_id_idx" ON "services"("broker_id", "id");

-- CreateIndex
CREATE INDEX "services_broker_id_status_id_idx" ON "services"("broker_id", "status", "id");
