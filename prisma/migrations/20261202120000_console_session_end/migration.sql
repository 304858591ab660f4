-- A console session ends when it is signed out or idle for 30 minutes (issue 48 item 3): two
-- nullable columns, no rewrite; the lock is brief, and waits at most a second for it.
SET lock_timeout = '1s';
SET statement_timeout = '5s';

-- AlterTable
ALTER TABLE "console_sessions" ADD COLUMN     "last_seen_at" TIMESTAMPTZ(3),
ADD COLUMN     "signed_out_at" TIMESTAMPTZ(3);
