-- Video jobs (POST /v1/videos and its sibling doors), persisted so that any gateway process, or the same one
-- after a restart, continues them. engine/videos/store.ts is the only writer.
--
-- Two clocks. Times shown to clients and used for money and retention (created_at, completed_at, expires_at,
-- visible_until) come from the gateway clock. Scheduling columns (next_poll_at, lease_until, deadline_wall)
-- are wall time, so a worker keeps polling even under a test clock that does not move.
--
-- Claiming: a worker takes due jobs with `FOR UPDATE SKIP LOCKED` and writes a lease (lease_owner,
-- lease_until) in the same statement; every later write of that worker names its lease, so two processes
-- never poll or finish the same job at once. A lease left by a dead process runs out and the job is claimed
-- again.

CREATE TABLE IF NOT EXISTS video_jobs (
  id               text PRIMARY KEY,                        -- video_<uuid>
  seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE, -- creation order (list cursor)
  wallet_id        text NOT NULL REFERENCES wallets(id),
  key_id           text NOT NULL,
  idempotency_key  text,
  model            text NOT NULL,
  vendor           text NOT NULL,
  seconds          text NOT NULL,                           -- as the client sent it, as a string
  size             text NOT NULL,                           -- <width>x<height>
  resolution       text NOT NULL,                           -- 480p | 720p | 1080p
  status           text NOT NULL CHECK (status IN ('queued', 'in_progress', 'completed', 'failed')),
  progress         integer NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
  error_code       text,                                    -- moderation_blocked | vendor_failed | timed_out | undelivered
  error_message    text,
  usage_seconds    integer,
  cost_nano        bigint,                                  -- what was debited (0 when nothing was)
  hold_ref         text NOT NULL,                           -- the ledger reservation holding seconds × price
  hold_nano        bigint NOT NULL,
  vendor_request   jsonb,                                   -- body for the vendor; cleared once submitted
  request_id       text,                                    -- the vendor's job id, once submitted
  route_index      integer,                                 -- the route that accepted it (polled first)
  deliver_attempts integer NOT NULL DEFAULT 0,
  file_name        text,                                    -- under the video folder, once delivered
  file_bytes       bigint,
  file_deleted_at  timestamptz,
  deleted_at       timestamptz,                             -- DELETE /v1/videos/{id}
  created_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  expires_at       timestamptz,                             -- file deleted (completed jobs)
  finished_at      timestamptz,
  visible_until    timestamptz,                             -- after it, the id answers 404 (retention)
  deadline_wall    timestamptz NOT NULL,
  next_poll_at     timestamptz NOT NULL,
  lease_owner      text,
  lease_until      timestamptz
);

CREATE UNIQUE INDEX IF NOT EXISTS video_jobs_idempotency ON video_jobs (wallet_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS video_jobs_wallet ON video_jobs (wallet_id, seq DESC);
CREATE INDEX IF NOT EXISTS video_jobs_due ON video_jobs (next_poll_at) WHERE status IN ('queued', 'in_progress');
CREATE INDEX IF NOT EXISTS video_jobs_files ON video_jobs (expires_at) WHERE file_name IS NOT NULL AND file_deleted_at IS NULL;

-- The key that signs short-lived download addresses; one row, shared by every process.
CREATE TABLE IF NOT EXISTS video_settings (
  id          integer PRIMARY KEY CHECK (id = 1),
  url_secret  text NOT NULL
);
