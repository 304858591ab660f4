-- CreateEnum
CREATE TYPE "report_delivery" AS ENUM ('attachment', 'link');

-- AlterTable
ALTER TABLE "report_recipients" ADD COLUMN     "link_expires_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "report_runs" ADD COLUMN     "delivery" "report_delivery",
ADD COLUMN     "workbook_build" UUID,
ADD COLUMN     "workbook_bytes" INTEGER,
ADD COLUMN     "workbook_chunks" INTEGER,
ADD COLUMN     "workbook_deleted_at" TIMESTAMPTZ(3),
ADD COLUMN     "workbook_sha256" TEXT;

-- CreateTable
CREATE TABLE "report_workbook_chunks" (
    "report_run_id" TEXT NOT NULL,
    "build" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "report_workbook_chunks_pkey" PRIMARY KEY ("report_run_id","build","seq")
);

-- CreateTable
CREATE TABLE "report_links" (
    "token_hash" TEXT NOT NULL,
    "report_run_id" TEXT NOT NULL,
    "recipient_id" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "report_links_pkey" PRIMARY KEY ("token_hash")
);

-- CreateTable
CREATE TABLE "report_downloads" (
    "id" BIGSERIAL NOT NULL,
    "recipient_id" INTEGER NOT NULL,
    "token_hash" TEXT NOT NULL,
    "downloaded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ip" TEXT NOT NULL,

    CONSTRAINT "report_downloads_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "report_links_report_run_id_expires_at_idx" ON "report_links"("report_run_id", "expires_at");

-- CreateIndex
CREATE INDEX "report_links_recipient_id_idx" ON "report_links"("recipient_id");

-- CreateIndex
CREATE INDEX "report_downloads_recipient_id_downloaded_at_idx" ON "report_downloads"("recipient_id", "downloaded_at");

-- AddForeignKey
ALTER TABLE "report_workbook_chunks" ADD CONSTRAINT "report_workbook_chunks_report_run_id_fkey" FOREIGN KEY ("report_run_id") REFERENCES "report_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "report_links" ADD CONSTRAINT "report_links_report_run_id_fkey" FOREIGN KEY ("report_run_id") REFERENCES "report_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "report_links" ADD CONSTRAINT "report_links_recipient_id_fkey" FOREIGN KEY ("recipient_id") REFERENCES "report_recipients"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "report_downloads" ADD CONSTRAINT "report_downloads_recipient_id_fkey" FOREIGN KEY ("recipient_id") REFERENCES "report_recipients"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written: workbook chunks are .xlsx bytes, already deflated; PostgreSQL is told not to try
-- compressing them again (stored out of line, uncompressed).
ALTER TABLE "report_workbook_chunks" ALTER COLUMN "data" SET STORAGE EXTERNAL;

-- Hand-written: runs that ended before workbooks were stored kept theirs in a temporary file,
-- removed when the run ended.
UPDATE "report_runs" SET "workbook_deleted_at" = COALESCE("completed_at", "updated_at") WHERE "status" IN ('completed', 'failed');

-- Hand-written: the reconciler looks for runs whose stored workbook is not deleted yet, few among
-- all runs ever made.
CREATE INDEX "report_runs_workbook_kept_idx" ON "report_runs"("status") WHERE "workbook_deleted_at" IS NULL;
