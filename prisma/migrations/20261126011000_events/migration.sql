-- CreateTable
CREATE TABLE "events" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "broker_id" TEXT NOT NULL,
    "mode" "key_mode" NOT NULL,
    "type" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "events_broker_id_mode_seq_idx" ON "events"("broker_id", "mode", "seq" DESC);

-- CreateIndex
CREATE INDEX "events_broker_id_mode_type_seq_idx" ON "events"("broker_id", "mode", "type", "seq" DESC);

-- CreateIndex
CREATE INDEX "events_created_at_idx" ON "events"("created_at");

-- CreateIndex
CREATE UNIQUE INDEX "events_seq_key" ON "events"("seq");

-- AddForeignKey
ALTER TABLE "events" ADD CONSTRAINT "events_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE;
