-- DropForeignKey
ALTER TABLE "api_logs" DROP CONSTRAINT "api_logs_api_key_id_fkey";

-- DropForeignKey
ALTER TABLE "api_logs" DROP CONSTRAINT "api_logs_broker_id_fkey";
