-- AlterTable
ALTER TABLE "webhook_attempts" ADD COLUMN     "response_excerpt" TEXT;

-- AlterTable
ALTER TABLE "webhook_deliveries" ADD COLUMN     "public_id" TEXT NOT NULL DEFAULT ('whd_'::text || replace((gen_random_uuid())::text, '-'::text, ''::text));

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_public_id_key" ON "webhook_deliveries"("public_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_endpoint_id_id_idx" ON "webhook_deliveries"("endpoint_id", "id" DESC);
