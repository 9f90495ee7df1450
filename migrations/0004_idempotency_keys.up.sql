-- The first outcome of each Idempotency-Key, per caller (POST /appointment/customer).
-- outcome is NULL while the first request is still running.
CREATE TABLE idempotency_keys (
    subject      text        NOT NULL,
    key          text        NOT NULL,
    fingerprint  text        NOT NULL,
    outcome      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    PRIMARY KEY (subject, key)
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
