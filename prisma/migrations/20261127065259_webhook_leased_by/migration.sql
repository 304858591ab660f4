-- AlterTable
ALTER TABLE "webhook_deliveries" ADD COLUMN     "leased_by" TEXT;
