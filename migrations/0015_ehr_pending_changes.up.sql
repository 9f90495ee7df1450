-- EHR sync (issue 21): the intents of the API paths. A move or a
-- cancellation through the API records its intent here, in a short
-- transaction of its own, before the EHR is called, and removes it in the
-- transaction of its event (origin api). The poller, reading a change that
-- matches an intent not yet expired, publishes nothing of it (deferred);
-- once one has expired it takes it over (lapsed): a deferred one it
-- publishes itself (origin ehr), and an API path settling a lapsed one
-- publishes nothing. The row lock on an intent orders the two: exactly one
-- event per change. Ids, statuses and times only: no patient data.
CREATE TABLE ehr_pending_changes (
    system         text        NOT NULL,
    id             text        NOT NULL,
    appointment_id text        NOT NULL,
    agent_id       text        NOT NULL,
    status         text        NOT NULL, -- the state the change asks for
    start_at       timestamptz NOT NULL,
    end_at         timestamptz NOT NULL,
    business_id    text        NOT NULL DEFAULT '',
    deferred       boolean     NOT NULL DEFAULT false,
    lapsed         boolean     NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (system, id)
);

-- The poller reads the intents of the appointments of its batch, and takes
-- over (or removes) those expired.
CREATE INDEX ehr_pending_changes_appointment ON ehr_pending_changes (system, appointment_id);
CREATE INDEX ehr_pending_changes_expiry ON ehr_pending_changes (system, expires_at);
