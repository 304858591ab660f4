-- AlterTable
ALTER TABLE "api_logs" ADD COLUMN     "error_details" JSONB,
ADD COLUMN     "error_message" TEXT;
