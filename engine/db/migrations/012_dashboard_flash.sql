-- The dashboard's one-time notes between a form POST and the page it redirects to (post/redirect/get): the new
-- keys are shown once on the GET, so a refresh never makes more. In the database rather than in one process's
-- memory because with GATEWAY_WORKERS the redirected GET may reach another process. The note is sealed with a
-- key derived from the session's cookie secret, which the database never holds: a copy of this table opens
-- nothing. It goes with its session (sign-out, expiry) and lasts a few minutes at most.
CREATE TABLE dashboard_flash (
  session_hash  text PRIMARY KEY REFERENCES dashboard_sessions(session_hash) ON DELETE CASCADE,
  sealed        text NOT NULL,
  expires_at    timestamptz NOT NULL
);
