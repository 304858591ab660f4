SET lock_timeout = '1s';

-- CreateTable
CREATE TABLE "process_registry" (
    "id" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "hostname" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "settings" JSONB NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "process_registry_pkey" PRIMARY KEY ("id")
);
