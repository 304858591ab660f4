-- AlterTable
ALTER TABLE "api_logs" ADD COLUMN     "via_console" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "console_sessions" (
    "id" TEXT NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "start_token_hash" TEXT NOT NULL,
    "cookie_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "link_expires_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),

    CONSTRAINT "console_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "console_sessions_start_token_hash_key" ON "console_sessions"("start_token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "console_sessions_cookie_hash_key" ON "console_sessions"("cookie_hash");

-- CreateIndex
CREATE INDEX "console_sessions_api_key_id_idx" ON "console_sessions"("api_key_id");

-- AddForeignKey
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
