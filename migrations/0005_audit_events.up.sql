-- The audit trail: one row per request that touched patient data (core/audit).
-- id is the event's position in the hash chain (1, 2, ...), assigned by the
-- writer while it holds the chain head's row lock; hash is
-- SHA-256(previous hash || canonical content), see audit.Link.
CREATE TABLE audit_events (
    id            bigint      PRIMARY KEY,
    at            timestamptz NOT NULL,
    request_id    text        NOT NULL,
    actor         text        NOT NULL,
    action        text        NOT NULL,
    resource_type text        NOT NULL,
    resource_id   text        NOT NULL,
    outcome       text        NOT NULL CHECK (outcome IN ('success', 'denied', 'error')),
    status        smallint    NOT NULL,
    detail        jsonb       NOT NULL DEFAULT '{}',
    hash          bytea       NOT NULL
);

-- For `carebridge audit list --since …`; --actor and --action filter within
-- that time range. Every index costs each request an insert, so there is one.
CREATE INDEX audit_events_at ON audit_events (at);

-- The chain head: the last event's id and hash, in exactly one row (the
-- primary key `one` admits only true). Writers lock it (SELECT … FOR UPDATE),
-- which serialises them across every instance sharing the database, and move
-- it in the transaction that appends their events. Verification compares it
-- with the last event, so deleting events at the end of the chain shows.
CREATE TABLE audit_chain_head (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    id   bigint  NOT NULL CHECK (id >= 0),
    hash bytea   NOT NULL CHECK (length(hash) = 32)
);

INSERT INTO audit_chain_head (id, hash) VALUES (0, decode(repeat('00', 32), 'hex'));

-- Append-only: the database itself refuses to change or remove audit events,
-- and to remove the head (which stays updatable by the writer). The triggers
-- bind every role, the tables' owner and superusers included, but the owner
-- can drop or disable them (and a superuser can skip them with
-- session_replication_role = replica). A deployment that wants more keeps the
-- tables owned by another role and grants the service only SELECT, INSERT on
-- audit_events and SELECT, UPDATE on audit_chain_head. Whatever gets past
-- this shows on `carebridge audit verify`.
CREATE FUNCTION audit_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on % refused: the audit trail is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

CREATE TRIGGER audit_chain_head_keep BEFORE DELETE ON audit_chain_head
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_chain_head_no_truncate BEFORE TRUNCATE ON audit_chain_head
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
