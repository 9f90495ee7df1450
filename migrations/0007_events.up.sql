-- The outbox: every event is written here in the transaction of the change
-- it tells of. Bodies hold ids and statuses only, never patient data.
CREATE TABLE events (
    seq          bigserial   PRIMARY KEY,
    id           text        NOT NULL UNIQUE,
    type         text        NOT NULL,
    business_id  uuid,
    body         bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- NATS JetStream: when the event reached the stream; publish_after is
    -- the lease of the instance publishing it.
    published_at  timestamptz,
    publish_after timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX events_unpublished ON events (seq) WHERE published_at IS NULL;
CREATE INDEX events_created ON events (created_at);

-- Webhook subscriptions, made by `carebridge admin add-webhook`. The
-- signing secret is sealed (AES-256-GCM, additional data the id) under a
-- key derived from the service's key material.
CREATE TABLE webhook_subscriptions (
    id          uuid        PRIMARY KEY,
    url         text        NOT NULL CHECK (url ~ '^https?://'),
    event_types text[]      NOT NULL CHECK (cardinality(event_types) > 0),
    business_id uuid,
    secret      bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per event and subscription, made with the event (so a
-- subscription receives the events written after it exists).
-- next_attempt_at doubles as the lease of the instance delivering it.
-- Every index costs each claim and settle an insert, so there are only
-- these: the key, (event_seq, subscription_id) for the events' cascade and
-- purge, and the pending rows in due order for the claims.
CREATE TABLE webhook_deliveries (
    id              bigserial   PRIMARY KEY,
    event_seq       bigint      NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
    subscription_id uuid        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_seq, subscription_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_id, next_attempt_at) WHERE state = 'pending';
