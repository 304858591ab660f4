-- CreateEnum
CREATE TYPE "approval_mode" AS ENUM ('automatic', 'manual');

-- CreateEnum
CREATE TYPE "key_mode" AS ENUM ('live', 'test');

-- CreateEnum
CREATE TYPE "service_status" AS ENUM ('pending', 'active', 'suspended', 'cancelled');

-- CreateEnum
CREATE TYPE "billing_cycle" AS ENUM ('monthly', 'quarterly', 'annually');

-- CreateEnum
CREATE TYPE "request_type" AS ENUM ('create', 'upgrade', 'downgrade', 'cancel');

-- CreateEnum
CREATE TYPE "request_status" AS ENUM ('pending', 'provider_review', 'approved', 'denied');

-- CreateEnum
CREATE TYPE "request_source" AS ENUM ('api', 'import', 'portal', 'admin');

-- CreateEnum
CREATE TYPE "cancel_when" AS ENUM ('immediate', 'end_of_billing_period');

-- CreateEnum
CREATE TYPE "invoice_status" AS ENUM ('paid', 'pending', 'overdue', 'cancelled', 'refunded');

-- CreateEnum
CREATE TYPE "report_type" AS ENUM ('invoices', 'services');

-- CreateEnum
CREATE TYPE "report_status" AS ENUM ('queued', 'completed', 'failed');

-- CreateEnum
CREATE TYPE "recipient_status" AS ENUM ('pending', 'sent', 'failed');

-- CreateTable
CREATE TABLE "brokers" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "approval" "approval_mode" NOT NULL DEFAULT 'manual',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "brokers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "broker_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "mode" "key_mode" NOT NULL,
    "key_hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "last4" TEXT NOT NULL,
    "scopes" TEXT[],
    "ip_restricted" BOOLEAN NOT NULL DEFAULT false,
    "ip_whitelist" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "rate_limit" INTEGER NOT NULL DEFAULT 120,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "expires_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "plans" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "tier" INTEGER NOT NULL,
    "monthly_price" DECIMAL(12,2) NOT NULL,
    "currency" CHAR(3) NOT NULL DEFAULT 'USD',

    CONSTRAINT "plans_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "services" (
    "id" SERIAL NOT NULL,
    "service_number" INTEGER NOT NULL,
    "broker_id" TEXT NOT NULL,
    "plan_id" INTEGER NOT NULL,
    "status" "service_status" NOT NULL DEFAULT 'pending',
    "hostname" TEXT NOT NULL,
    "customer_email" TEXT NOT NULL,
    "customer_name" TEXT,
    "billing_cycle" "billing_cycle" NOT NULL DEFAULT 'monthly',
    "username" TEXT NOT NULL,
    "password_enc" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "cancel_at" TIMESTAMPTZ(3),
    "cancelled_at" TIMESTAMPTZ(3),

    CONSTRAINT "services_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "service_requests" (
    "id" SERIAL NOT NULL,
    "broker_id" TEXT NOT NULL,
    "service_id" INTEGER,
    "type" "request_type" NOT NULL,
    "status" "request_status" NOT NULL DEFAULT 'pending',
    "source" "request_source" NOT NULL DEFAULT 'api',
    "current_plan_id" INTEGER,
    "requested_plan_id" INTEGER,
    "hostname" TEXT,
    "customer_email" TEXT,
    "customer_name" TEXT,
    "billing_cycle" "billing_cycle",
    "reason" TEXT,
    "cancel_when" "cancel_when",
    "denial_reason" TEXT,
    "api_key_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decided_at" TIMESTAMPTZ(3),

    CONSTRAINT "service_requests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "invoices" (
    "id" SERIAL NOT NULL,
    "broker_id" TEXT NOT NULL,
    "number" TEXT NOT NULL,
    "service_number" INTEGER NOT NULL,
    "amount" DECIMAL(14,2) NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "status" "invoice_status" NOT NULL,
    "date" DATE NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "invoices_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_logs" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "api_key_id" TEXT,
    "broker_id" TEXT,
    "mode" "key_mode",
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "ip" TEXT NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "request_id" TEXT NOT NULL,

    CONSTRAINT "api_logs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "report_runs" (
    "id" TEXT NOT NULL,
    "broker_id" TEXT NOT NULL,
    "api_key_id" TEXT,
    "report_type" "report_type" NOT NULL,
    "start_date" DATE,
    "end_date" DATE,
    "status_filter" "service_status",
    "totals" JSONB NOT NULL DEFAULT '{}',
    "status" "report_status" NOT NULL DEFAULT 'queued',
    "recipients_sent" INTEGER NOT NULL DEFAULT 0,
    "recipients_failed" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "report_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "report_recipients" (
    "id" SERIAL NOT NULL,
    "report_run_id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "status" "recipient_status" NOT NULL DEFAULT 'pending',
    "error" TEXT,
    "message_id" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "sent_at" TIMESTAMPTZ(3),

    CONSTRAINT "report_recipients_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "brokers_slug_key" ON "brokers"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_broker_id_idx" ON "api_keys"("broker_id");

-- CreateIndex
CREATE UNIQUE INDEX "plans_name_key" ON "plans"("name");

-- CreateIndex
CREATE UNIQUE INDEX "plans_tier_key" ON "plans"("tier");

-- CreateIndex
CREATE UNIQUE INDEX "services_service_number_key" ON "services"("service_number");

-- CreateIndex
CREATE INDEX "services_broker_id_status_idx" ON "services"("broker_id", "status");

-- CreateIndex
CREATE INDEX "services_broker_id_updated_at_idx" ON "services"("broker_id", "updated_at");

-- CreateIndex
CREATE INDEX "service_requests_broker_id_status_idx" ON "service_requests"("broker_id", "status");

-- CreateIndex
CREATE INDEX "service_requests_broker_id_created_at_idx" ON "service_requests"("broker_id", "created_at");

-- CreateIndex
CREATE INDEX "service_requests_service_id_idx" ON "service_requests"("service_id");

-- CreateIndex
CREATE INDEX "invoices_broker_id_date_status_idx" ON "invoices"("broker_id", "date", "status");

-- CreateIndex
CREATE UNIQUE INDEX "invoices_broker_id_number_key" ON "invoices"("broker_id", "number");

-- CreateIndex
CREATE INDEX "api_logs_api_key_id_at_idx" ON "api_logs"("api_key_id", "at");

-- CreateIndex
CREATE INDEX "api_logs_broker_id_at_idx" ON "api_logs"("broker_id", "at");

-- CreateIndex
CREATE INDEX "report_runs_broker_id_created_at_idx" ON "report_runs"("broker_id", "created_at");

-- CreateIndex
CREATE INDEX "report_recipients_report_run_id_idx" ON "report_recipients"("report_run_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "services" ADD CONSTRAINT "services_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "services" ADD CONSTRAINT "services_plan_id_fkey" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_service_id_fkey" FOREIGN KEY ("service_id") REFERENCES "services"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_current_plan_id_fkey" FOREIGN KEY ("current_plan_id") REFERENCES "plans"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_requested_plan_id_fkey" FOREIGN KEY ("requested_plan_id") REFERENCES "plans"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_logs" ADD CONSTRAINT "api_logs_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_logs" ADD CONSTRAINT "api_logs_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "report_runs" ADD CONSTRAINT "report_runs_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "report_runs" ADD CONSTRAINT "report_runs_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "report_recipients" ADD CONSTRAINT "report_recipients_report_run_id_fkey" FOREIGN KEY ("report_run_id") REFERENCES "report_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ---------------------------------------------------------------------------------------------
-- Hand-written below this line (Prisma's schema language cannot express it; scripts/db-diff.ts
-- does not generate it, so keep it when regenerating this first migration).
-- ---------------------------------------------------------------------------------------------

-- At most one pending request per service: a second upgrade/downgrade/cancel while one waits
-- is a 409 conflict. The API checks first; this index makes the rule hold under concurrency
-- (the losing insert fails with a unique violation, P2002 in Prisma).
CREATE UNIQUE INDEX "service_requests_one_pending_per_service"
    ON "service_requests"("service_id")
    WHERE "status" = 'pending' AND "service_id" IS NOT NULL;

-- The plan catalogue, lowest tier first (prices per month, USD).
INSERT INTO "plans" ("name", "tier", "monthly_price", "currency") VALUES
    ('Basic VPS', 1, 9.99, 'USD'),
    ('Standard VPS', 2, 19.99, 'USD'),
    ('Professional VPS', 3, 39.99, 'USD'),
    ('Enterprise VPS', 4, 79.99, 'USD');
