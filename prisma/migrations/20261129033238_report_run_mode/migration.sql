-- AlterTable
ALTER TABLE "report_runs" ADD COLUMN     "mode" "key_mode" NOT NULL DEFAULT 'live';

-- CreateIndex
CREATE INDEX "report_runs_broker_id_mode_created_at_id_idx" ON "report_runs"("broker_id", "mode", "created_at" DESC, "id" DESC);
