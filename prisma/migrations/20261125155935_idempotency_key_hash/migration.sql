-- Idempotency-Key values are stored as their SHA-256 (hex), never verbatim (issue 21 row 10).
-- No schema change: the "key" column now holds the hash. Rows written before this migration hold
-- the header's value; they are hashed here, with PostgreSQL's built-in sha256() (no pgcrypto), so
-- a retry of a key sent before the upgrade still finds its row and replays its answer.
UPDATE "idempotency_keys" SET "key" = encode(sha256(convert_to("key", 'UTF8')), 'hex');
