-- Webhooks a practice manages itself (POST /api/v1/webhooks …): the same
-- subscriptions as the admin CLI's, with what the API adds.
--   origin: 'operator' (the CLI: trusted, may target private addresses) or
--     'api' (a practice's: its address is checked on every connection).
--   previous_secret: the secret a rotation replaced, sealed like secret, and
--     still signing deliveries until previous_secret_expires_at.
--   failing_since: when the current run of failed attempts began (NULL after
--     a success); a run of 24 h disables the subscription.
ALTER TABLE webhook_subscriptions
    ADD COLUMN description                text        NOT NULL DEFAULT '',
    ADD COLUMN origin                     text        NOT NULL DEFAULT 'operator' CHECK (origin IN ('operator', 'api')),
    ADD COLUMN enabled                    boolean     NOT NULL DEFAULT true,
    ADD COLUMN disabled_reason            text,
    ADD COLUMN failing_since              timestamptz,
    ADD COLUMN previous_secret            bytea,
    ADD COLUMN previous_secret_expires_at timestamptz,
    ADD COLUMN updated_at                 timestamptz NOT NULL DEFAULT now();
CREATE INDEX webhook_subscriptions_business ON webhook_subscriptions (business_id, created_at DESC) WHERE business_id IS NOT NULL;

-- A delivery's own times: created_at when the row was made (with its event,
-- or by a replay), requeued_at when a retry or replay last asked for it again
-- (its retries then run for 24 h from that moment, not from the event).
ALTER TABLE webhook_deliveries
    ADD COLUMN created_at  timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN requeued_at timestamptz;
-- The delivery log of one subscription, newest first.
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (subscription_id, id DESC);
-- Replays read a business's events by time.
CREATE INDEX events_business_created ON events (business_id, created_at) WHERE business_id IS NOT NULL;
