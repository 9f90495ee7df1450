-- Person links (core/ehr.PersonLink): a member's decision that two EHR
-- records are, or are not, the same person, for one business's searches.
-- Only the systems' names and their patient ids are kept (no other patient
-- data); the records stay in the order the member gave them. pair_key is
-- SHA-256 of the pair in a canonical order (computed by the service), so a
-- business has one decision per pair whichever way round it was named: a
-- newer decision replaces the row (INSERT … ON CONFLICT), and of two
-- members deciding at once the later commit wins. Every change notifies
-- the channel person_links with the business id, so each instance drops
-- what it keeps in memory of that business's links.
CREATE TABLE person_links (
    id           uuid        PRIMARY KEY,
    business_id  uuid        NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    decision     text        NOT NULL CHECK (decision IN ('same', 'different')),
    a_source     text        NOT NULL,
    a_patient_id text        NOT NULL,
    b_source     text        NOT NULL,
    b_patient_id text        NOT NULL,
    pair_key     bytea       NOT NULL CHECK (length(pair_key) = 32),
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (business_id, pair_key)
);

-- A business's links, newest first (the listing, and the set search reads).
CREATE INDEX person_links_business ON person_links (business_id, created_at DESC, id);
