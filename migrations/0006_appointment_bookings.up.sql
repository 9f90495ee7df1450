-- Who booked which appointment through the service: a patient-context
-- caller lists, cancels and moves only the appointments booked with its
-- subject. Holds ids only.
CREATE TABLE appointment_bookings (
    subject        text        NOT NULL,
    appointment_id text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subject, appointment_id)
);

-- The first outcomes kept so far held the whole appointment, patient
-- details included, and unkeyed fingerprints of them: they go. A repeat of
-- one of those keys books anew, as a key past its retention would.
DELETE FROM idempotency_keys;
