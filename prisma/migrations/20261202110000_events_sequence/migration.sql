-- migrate:no-transaction
-- Events become append-only and carry `sequence`, 1, 2, 3… per (broker, mode) in feed order
-- (issue 46), written for a big `events` table (docs/upgrading.md, "Writing a migration"): no
-- statement holds a lock that blocks event writes for longer than numbering the rows written
-- while the batches ran. Every step can run again after a failure.
SET lock_timeout = '2s';
SET statement_timeout = '30min';

-- 1. The column, nullable (no rewrite), and each feed's counter.
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "sequence" BIGINT;
CREATE TABLE IF NOT EXISTS "event_feeds" (
    "broker_id" TEXT NOT NULL,
    "mode" "key_mode" NOT NULL,
    "last_sequence" BIGINT NOT NULL,

    CONSTRAINT "event_feeds_pkey" PRIMARY KEY ("broker_id","mode")
);
ALTER TABLE "event_feeds" DROP CONSTRAINT IF EXISTS "event_feeds_broker_id_fkey";
ALTER TABLE "event_feeds" ADD CONSTRAINT "event_feeds_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE NOT VALID;
ALTER TABLE "event_feeds" VALIDATE CONSTRAINT "event_feeds_broker_id_fkey";

-- 2. The existing rows numbered in `seq` order (the order listEvents serves), 10,000 at a time,
-- each batch committed with its feeds' counters, while writers go on.
DO $$
DECLARE
  done_to bigint := 0;
  batch_end bigint;
BEGIN
  LOOP
    SELECT max("seq") INTO batch_end FROM (SELECT "seq" FROM "events" WHERE "seq" > done_to ORDER BY "seq" LIMIT 10000) b;
    EXIT WHEN batch_end IS NULL;
    WITH "numbered" AS (
      SELECT e."id", coalesce(f."last_sequence", 0) + row_number() OVER (PARTITION BY e."broker_id", e."mode" ORDER BY e."seq") AS "n"
        FROM "events" e LEFT JOIN "event_feeds" f ON f."broker_id" = e."broker_id" AND f."mode" = e."mode"
       WHERE e."sequence" IS NULL AND e."seq" > done_to AND e."seq" <= batch_end
    ), "updated" AS (
      UPDATE "events" e SET "sequence" = "numbered"."n" FROM "numbered" WHERE e."id" = "numbered"."id"
      RETURNING e."broker_id", e."mode", e."sequence"
    )
    INSERT INTO "event_feeds" AS f ("broker_id", "mode", "last_sequence")
    SELECT "broker_id", "mode", max("sequence") FROM "updated" GROUP BY "broker_id", "mode"
    ON CONFLICT ("broker_id", "mode") DO UPDATE SET "last_sequence" = greatest(f."last_sequence", EXCLUDED."last_sequence");
    done_to := batch_end;
    COMMIT;
  END LOOP;
END $$;

-- 3. Every insert takes its feed's next number, and `seq` after it: the counter row stays locked to the
-- end of the writing transaction, so one feed's writers take both in commit order, whoever inserts
-- (src/events/store.ts takes the feed's lock before too). A given `sequence` or `seq` is overridden.
CREATE OR REPLACE FUNCTION "events_take_sequence"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "event_feeds" AS f ("broker_id", "mode", "last_sequence") VALUES (NEW."broker_id", NEW."mode", 1)
    ON CONFLICT ("broker_id", "mode") DO UPDATE SET "last_sequence" = f."last_sequence" + 1
    RETURNING f."last_sequence" INTO NEW."sequence";
  NEW."seq" := nextval(pg_get_serial_sequence('"events"', 'seq'));
  RETURN NEW;
END $$;

-- Append-only for every client: only the retention purge (deleteEventsBefore sets the flag for its
-- own transaction) and a broker's deletion (its events go with it) remove events; nothing updates one.
CREATE OR REPLACE FUNCTION "events_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'events are append-only: TRUNCATE refused' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF TG_OP = 'DELETE' AND (current_setting('client_api.events_retention', true) = 'purge'
                           OR NOT EXISTS (SELECT 1 FROM "brokers" WHERE "id" = OLD."broker_id")) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'events are append-only: % of event % refused', TG_OP, OLD."id"
    USING ERRCODE = 'integrity_constraint_violation', HINT = 'only the retention purge deletes events (src/events/store.ts)';
END $$;

-- 4. The rows written while the batches ran, and the triggers, in one short transaction that holds
-- writers back (SHARE ROW EXCLUSIVE) so no row is left without a number. (A row whose transaction
-- took its `seq` before a batch passed it and committed after is numbered here, after rows of a
-- higher `seq`; no process serves `sequence` before this migration ends.)
BEGIN;
LOCK TABLE "events" IN SHARE ROW EXCLUSIVE MODE;
WITH "numbered" AS (
  SELECT e."id", coalesce(f."last_sequence", 0) + row_number() OVER (PARTITION BY e."broker_id", e."mode" ORDER BY e."seq") AS "n"
    FROM "events" e LEFT JOIN "event_feeds" f ON f."broker_id" = e."broker_id" AND f."mode" = e."mode"
   WHERE e."sequence" IS NULL
), "updated" AS (
  UPDATE "events" e SET "sequence" = "numbered"."n" FROM "numbered" WHERE e."id" = "numbered"."id"
  RETURNING e."broker_id", e."mode", e."sequence"
)
INSERT INTO "event_feeds" AS f ("broker_id", "mode", "last_sequence")
SELECT "broker_id", "mode", max("sequence") FROM "updated" GROUP BY "broker_id", "mode"
ON CONFLICT ("broker_id", "mode") DO UPDATE SET "last_sequence" = greatest(f."last_sequence", EXCLUDED."last_sequence");
DROP TRIGGER IF EXISTS "events_take_sequence" ON "events";
CREATE TRIGGER "events_take_sequence" BEFORE INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION "events_take_sequence"();
DROP TRIGGER IF EXISTS "events_append_only" ON "events";
CREATE TRIGGER "events_append_only" BEFORE UPDATE OR DELETE ON "events" FOR EACH ROW EXECUTE FUNCTION "events_append_only"();
DROP TRIGGER IF EXISTS "events_no_truncate" ON "events";
CREATE TRIGGER "events_no_truncate" BEFORE TRUNCATE ON "events" FOR EACH STATEMENT EXECUTE FUNCTION "events_append_only"();
COMMIT;

-- 5. Required without a scan under an exclusive lock: a check NOT VALID, validated (writes go on),
-- then SET NOT NULL, which the valid check proves without scanning.
ALTER TABLE "events" DROP CONSTRAINT IF EXISTS "events_sequence_not_null";
ALTER TABLE "events" ADD CONSTRAINT "events_sequence_not_null" CHECK ("sequence" IS NOT NULL) NOT VALID;
ALTER TABLE "events" VALIDATE CONSTRAINT "events_sequence_not_null";
-- squawk-ignore prefer-robust-stmts
ALTER TABLE "events" ALTER COLUMN "sequence" SET NOT NULL;
ALTER TABLE "events" DROP CONSTRAINT IF EXISTS "events_sequence_not_null";
