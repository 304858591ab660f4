-- AlterEnum
ALTER TYPE "recipient_status" ADD VALUE 'sending';

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "report_status" ADD VALUE 'building';
ALTER TYPE "report_status" ADD VALUE 'sending';

-- AlterTable
ALTER TABLE "report_recipients" ADD COLUMN     "claimed_at" TIMESTAMPTZ(3),
ADD COLUMN     "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- AlterTable
ALTER TABLE "report_runs" ADD COLUMN     "generated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "snapshot_max_id" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateIndex
CREATE INDEX "report_recipients_status_updated_at_idx" ON "report_recipients"("status", "updated_at");

-- CreateIndex
CREATE INDEX "report_runs_status_updated_at_idx" ON "report_runs"("status", "updated_at");
