-- CreateTable
CREATE TABLE "credentials_key_fingerprint" (
    "id" INTEGER NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credentials_key_fingerprint_pkey" PRIMARY KEY ("id")
);

-- Hand-written: one row at most (the fingerprint of the one key all processes share).
ALTER TABLE "credentials_key_fingerprint" ADD CONSTRAINT "credentials_key_fingerprint_one_row" CHECK ("id" = 1);
