-- Events become append-only and carry `sequence`, 1, 2, 3… per (broker, mode) in feed order
-- (issue 46). Written for a big `events` table: locks are waited for at most 5 s (a retry is safe:
-- one transaction), the column is added without a default (no rewrite), backfilled, and made NOT
-- NULL through a validated CHECK (no scan under the exclusive lock). The migration runner applies a
-- file as one script, so no `CREATE INDEX CONCURRENTLY`: no index is added (nothing reads by
-- `sequence`; the feed's counter row keeps it unique).
SET lock_timeout = '5s';

-- AlterTable
ALTER TABLE "events" ADD COLUMN     "sequence" BIGINT;

-- CreateTable
CREATE TABLE "event_feeds" (
    "broker_id" TEXT NOT NULL,
    "mode" "key_mode" NOT NULL,
    "last_sequence" BIGINT NOT NULL,

    CONSTRAINT "event_feeds_pkey" PRIMARY KEY ("broker_id","mode")
);

-- AddForeignKey
ALTER TABLE "event_feeds" ADD CONSTRAINT "event_feeds_broker_id_fkey" FOREIGN KEY ("broker_id") REFERENCES "brokers"("id") ON DELETE CASCADE ON UPDATE CASCADE NOT VALID;

-- Hand-written below.

-- Backfill in feed order (`seq`, the order listEvents serves), then each feed's counter.
UPDATE "events" AS e SET "sequence" = n."sequence"
  FROM (SELECT "id", row_number() OVER (PARTITION BY "broker_id", "mode" ORDER BY "seq") AS "sequence" FROM "events") AS n
 WHERE e."id" = n."id";
INSERT INTO "event_feeds" ("broker_id", "mode", "last_sequence")
SELECT "broker_id", "mode", max("sequence") FROM "events" GROUP BY "broker_id", "mode";
ALTER TABLE "event_feeds" VALIDATE CONSTRAINT "event_feeds_broker_id_fkey";

ALTER TABLE "events" ADD CONSTRAINT "events_sequence_not_null" CHECK ("sequence" IS NOT NULL) NOT VALID;
ALTER TABLE "events" VALIDATE CONSTRAINT "events_sequence_not_null";
ALTER TABLE "events" ALTER COLUMN "sequence" SET NOT NULL;
ALTER TABLE "events" DROP CONSTRAINT "events_sequence_not_null";

-- Every insert takes its feed's next number, and `seq` after it: the counter row stays locked to the
-- end of the writing transaction, so one feed's writers take both in commit order, whoever inserts
-- (src/events/store.ts takes the feed's lock before too). A given `sequence` or `seq` is overridden.
CREATE FUNCTION "events_take_sequence"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "event_feeds" AS f ("broker_id", "mode", "last_sequence") VALUES (NEW."broker_id", NEW."mode", 1)
    ON CONFLICT ("broker_id", "mode") DO UPDATE SET "last_sequence" = f."last_sequence" + 1
    RETURNING f."last_sequence" INTO NEW."sequence";
  NEW."seq" := nextval(pg_get_serial_sequence('"events"', 'seq'));
  RETURN NEW;
END $$;
CREATE TRIGGER "events_take_sequence" BEFORE INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION "events_take_sequence"();

-- Append-only for every client: only the retention purge (deleteEventsBefore sets the flag for its
-- own transaction) and a broker's deletion (its events go with it) remove events; nothing updates one.
CREATE FUNCTION "events_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER "events_append_only" BEFORE UPDATE OR DELETE ON "events" FOR EACH ROW EXECUTE FUNCTION "events_append_only"();
CREATE TRIGGER "events_no_truncate" BEFORE TRUNCATE ON "events" FOR EACH STATEMENT EXECUTE FUNCTION "events_append_only"();
