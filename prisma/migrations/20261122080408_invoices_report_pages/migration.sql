-- DropIndex
DROP INDEX "invoices_broker_id_date_status_idx";

-- CreateIndex
CREATE INDEX "invoices_broker_id_date_id_status_idx" ON "invoices"("broker_id", "date", "id", "status");
