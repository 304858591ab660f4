-- migrate:no-transaction
-- getRequestStats and getWebhookEndpointStats (issue 48), written for big `api_logs` and
-- `webhook_deliveries` tables (docs/upgrading.md, "Writing a migration"). The request log gets an
-- hourly roll-up (by status class and operation; a histogram of durations) kept by a statement
-- trigger in each insert's own transaction, so a 30-day range reads at most 720 hours, not every
-- request (bench/README.md, "Request stats"). The entries already there are rolled up once, those
-- up to the trigger's creation (the table's lock keeps later ones out of that count); the index is
-- built concurrently. Every step can run again after a failure.
SET lock_timeout = '2s';
SET statement_timeout = '30min';

-- CreateTable
CREATE TABLE IF NOT EXISTS "api_log_hour_counts" (
    "broker_id" TEXT NOT NULL,
    "mode" "key_mode" NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "status_class" INTEGER NOT NULL,
    "operation" TEXT NOT NULL,
    "requests" INTEGER NOT NULL,

    CONSTRAINT "api_log_hour_counts_pkey" PRIMARY KEY ("broker_id","mode","hour","status_class","operation")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "api_log_hours" (
    "broker_id" TEXT NOT NULL,
    "mode" "key_mode" NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "durations" INTEGER[],

    CONSTRAINT "api_log_hours_pkey" PRIMARY KEY ("broker_id","mode","hour")
);

-- The trigger adds each insert's rows to the roll-up. Keys are written in key order, so two
-- flushes of the same hours lock their rows in one order and never deadlock. The bounds are
-- STATS_DURATION_BOUNDS of src/shared/stats-range.ts (test/request-logs/stats.test.ts holds them equal).
CREATE OR REPLACE FUNCTION "api_logs_roll_up"() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO "api_log_hour_counts" AS c ("broker_id", "mode", "hour", "status_class", "operation", "requests")
  SELECT r."broker_id", r."mode", date_bin('1 hour', r."at", TIMESTAMPTZ '1970-01-01 00:00:00+00'), r."status" / 100, COALESCE(r."operation", ''), count(*)::int
    FROM "new_rows" AS r
   WHERE r."broker_id" IS NOT NULL AND r."mode" IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT ("broker_id", "mode", "hour", "status_class", "operation") DO UPDATE SET "requests" = c."requests" + EXCLUDED."requests";
  INSERT INTO "api_log_hours" AS h ("broker_id", "mode", "hour", "durations")
  SELECT b."broker_id", b."mode", b."hour", array_agg(COALESCE(b."n", 0) ORDER BY b."i")
    FROM (
      SELECT k."broker_id", k."mode", k."hour", s."i", c."n"
        FROM (SELECT DISTINCT r."broker_id", r."mode", date_bin('1 hour', r."at", TIMESTAMPTZ '1970-01-01 00:00:00+00') AS "hour" FROM "new_rows" AS r WHERE r."broker_id" IS NOT NULL AND r."mode" IS NOT NULL) AS k
       CROSS JOIN generate_series(1, 52) AS s("i")
        LEFT JOIN (
          SELECT r."broker_id", r."mode", date_bin('1 hour', r."at", TIMESTAMPTZ '1970-01-01 00:00:00+00') AS "hour", GREATEST(1, width_bucket(r."duration_ms", ARRAY[0,1,2,3,4,5,6,7,8,9,10,12,15,20,25,30,40,50,60,70,80,100,120,150,200,250,300,400,500,600,700,800,1000,1200,1500,2000,2500,3000,4000,5000,6000,7000,8000,10000,12000,15000,20000,25000,30000,40000,50000,60000])) AS "i", count(*)::int AS "n"
            FROM "new_rows" AS r WHERE r."broker_id" IS NOT NULL AND r."mode" IS NOT NULL
           GROUP BY 1, 2, 3, 4) AS c
          ON c."broker_id" = k."broker_id" AND c."mode" = k."mode" AND c."hour" = k."hour" AND c."i" = s."i") AS b
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3
  ON CONFLICT ("broker_id", "mode", "hour") DO UPDATE
    SET "durations" = ARRAY(SELECT x."a" + x."b" FROM unnest(h."durations", EXCLUDED."durations") WITH ORDINALITY AS x("a", "b", "i") ORDER BY x."i");
  RETURN NULL;
END
$fn$;

-- The trigger, and the last id it does not count (its comment, until the backfill is done), in one
-- transaction under the table's lock: an insert is counted by the trigger or by the backfill, once.
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'api_logs_roll_up' AND tgrelid = '"api_logs"'::regclass) THEN
    LOCK TABLE "api_logs" IN SHARE ROW EXCLUSIVE MODE;
    CREATE TRIGGER "api_logs_roll_up" AFTER INSERT ON "api_logs" REFERENCING NEW TABLE AS "new_rows"
      FOR EACH STATEMENT EXECUTE FUNCTION "api_logs_roll_up"();
    EXECUTE format('COMMENT ON TRIGGER "api_logs_roll_up" ON "api_logs" IS %L', 'backfill up to id ' || (SELECT COALESCE(max("id"), 0) FROM "api_logs"));
  END IF;
END $$;
-- The entries before it, once (the roll-up's rows stay locked until this commits: flushes of the
-- API log wait meanwhile, their entries buffered in memory).
DO $$
DECLARE
  note text := (SELECT d.description FROM pg_description d JOIN pg_trigger t ON d.objoid = t.oid
                 WHERE t.tgname = 'api_logs_roll_up' AND t.tgrelid = '"api_logs"'::regclass);
  until bigint;
BEGIN
  IF note LIKE 'backfill up to id %' THEN
    until := substring(note FROM 'backfill up to id ([0-9]+)')::bigint;
    INSERT INTO "api_log_hour_counts" AS c ("broker_id", "mode", "hour", "status_class", "operation", "requests")
    SELECT r."broker_id", r."mode", date_bin('1 hour', r."at", TIMESTAMPTZ '1970-01-01 00:00:00+00'), r."status" / 100, COALESCE(r."operation", ''), count(*)::int
      FROM (SELECT * FROM "api_logs" WHERE "id" <= until) AS r
     WHERE r."broker_id" IS NOT NULL AND r."mode" IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5
     ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT ("broker_id", "mode", "hour", "status_class", "operation") DO UPDATE SET "requests" = c."requests" + EXCLUDED."requests";
    INSERT INTO "api_log_hours" AS h ("broker_id", "mode", "hour", "durations")
    SELECT b."broker_id", b."mode", b."hour", array_agg(COALESCE(b."n", 0) ORDER BY b."i")
      FROM (
        SELECT k."broker_id", k."mode", k."hour", s."i", c."n"
          FROM (SELECT DISTINCT r."broker_id", r."mode", date_bin('1 hour', r."at", TIMESTAMPTZ '1970-01-01 00:00:00+00') AS "hour" FROM (SELECT * FROM "api_logs" WHERE "id" <= until) AS r WHERE r."broker_id" IS NOT NULL AND r."mode" IS NOT NULL) AS k
         CROSS JOIN generate_series(1, 52) AS s("i")
          LEFT JOIN (
            SELECT r."broker_id", r."mode", date_bin('1 hour', r."at", TIMESTAMPTZ '1970-01-01 00:00:00+00') AS "hour", GREATEST(1, width_bucket(r."duration_ms", ARRAY[0,1,2,3,4,5,6,7,8,9,10,12,15,20,25,30,40,50,60,70,80,100,120,150,200,250,300,400,500,600,700,800,1000,1200,1500,2000,2500,3000,4000,5000,6000,7000,8000,10000,12000,15000,20000,25000,30000,40000,50000,60000])) AS "i", count(*)::int AS "n"
              FROM (SELECT * FROM "api_logs" WHERE "id" <= until) AS r WHERE r."broker_id" IS NOT NULL AND r."mode" IS NOT NULL
             GROUP BY 1, 2, 3, 4) AS c
            ON c."broker_id" = k."broker_id" AND c."mode" = k."mode" AND c."hour" = k."hour" AND c."i" = s."i") AS b
     GROUP BY 1, 2, 3
     ORDER BY 1, 2, 3
    ON CONFLICT ("broker_id", "mode", "hour") DO UPDATE
      SET "durations" = ARRAY(SELECT x."a" + x."b" FROM unnest(h."durations", EXCLUDED."durations") WITH ORDINALITY AS x("a", "b", "i") ORDER BY x."i");
    COMMENT ON TRIGGER "api_logs_roll_up" ON "api_logs" IS 'getRequestStats'' hourly roll-up (api_log_hour_counts, api_log_hours)';
  END IF;
END $$;

-- CreateIndex
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = 'webhook_deliveries_endpoint_id_created_at_idx' AND NOT i.indisvalid) THEN
    DROP INDEX "webhook_deliveries_endpoint_id_created_at_idx";
  END IF;
END $$;
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_endpoint_id_created_at_idx" ON "webhook_deliveries"("endpoint_id", "created_at");
