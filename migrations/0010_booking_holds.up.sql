-- Bookings at practice scale (core/ehr Holds): a booking or a move under
-- way in the EHR holds its agent's time in a row of its own, taken and given
-- back in short transactions; no lock or connection is held while the EHR
-- answers. The exclusion constraint decides the race between two bookings
-- of one agent at overlapping times. A booking's hold is also its record
-- before the EHR is called: id is the reference the service puts on the EHR
-- appointment (FHIR identifier, bot externalId), so a booking whose answer
-- was lost (a crash, a time-out) is found and recorded by the reconciler.
-- Holds ids only: no patient data.
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE booking_holds (
    id             uuid        PRIMARY KEY,
    kind           text        NOT NULL CHECK (kind IN ('book', 'move')),
    agent_id       text        NOT NULL,
    period         tstzrange   NOT NULL CHECK (NOT isempty(period)),
    subject        text        NOT NULL,
    idem_key       text,        -- the booking's Idempotency-Key, when it has one
    appointment_id text,        -- a move: the appointment moved
    -- calling: an instance is calling the EHR until lease_until (past it, the
    -- instance is taken to have died); unknown: the call ended without an
    -- answer, to be settled from lease_until on.
    state          text        NOT NULL DEFAULT 'calling' CHECK (state IN ('calling', 'unknown')),
    lease_until    timestamptz NOT NULL,
    attempts       integer     NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    EXCLUDE USING gist (agent_id WITH =, period WITH &&)
);

CREATE INDEX booking_holds_due ON booking_holds (lease_until);
CREATE UNIQUE INDEX booking_holds_key ON booking_holds (subject, idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX booking_holds_subject ON booking_holds (subject) WHERE kind = 'book';

-- What a patient-context caller holds in the future (at most 20): the start
-- of each booking, and whether it was cancelled through the service. Rows
-- of earlier versions have no start and do not count.
ALTER TABLE appointment_bookings
    ADD COLUMN start_at  timestamptz,
    ADD COLUMN cancelled boolean NOT NULL DEFAULT false;
CREATE INDEX appointment_bookings_future ON appointment_bookings (subject, start_at) WHERE NOT cancelled;
