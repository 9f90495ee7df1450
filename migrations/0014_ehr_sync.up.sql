-- EHR sync (issue 21): hearing the appointment changes made in an
-- integration EHR itself. Ids, statuses and times only: no patient data.
--
-- One row per EHR system: where its poller stands (the watermark is the
-- EHR's own time of the newest change taken in, never the local clock;
-- baselined once the first sweep through its history is done) and who
-- polls it (a lease with an expiry, by the database's clock: one poller
-- per system at a time across instances).
CREATE TABLE ehr_sync_cursors (
    system       text        PRIMARY KEY,
    watermark    timestamptz,
    baselined    boolean     NOT NULL DEFAULT false,
    lease_owner  text,
    lease_until  timestamptz,
    last_poll_at timestamptz,
    last_error   text        -- a failure's code ('' or NULL: none)
);

-- The last state sync knows of each appointment of each system, which the
-- next change is classified against; the API paths write theirs with
-- their events, so the poller publishes no second event.
CREATE TABLE ehr_appointment_states (
    system         text        NOT NULL,
    appointment_id text        NOT NULL,
    agent_id       text        NOT NULL,
    version        text        NOT NULL DEFAULT '',
    status         text        NOT NULL,
    start_at       timestamptz NOT NULL,
    end_at         timestamptz NOT NULL,
    business_id    text        NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (system, appointment_id)
);

-- Reconciliation reads the states of a window that are not cancelled.
CREATE INDEX ehr_appointment_states_window ON ehr_appointment_states (system, start_at) WHERE status <> 'cancelled';

-- Sync asks the booking log which appointments were booked through the
-- service.
CREATE INDEX appointment_bookings_appointment ON appointment_bookings (appointment_id);
