-- The acting business (issue 18): a hold and a booking belong to the
-- business the caller acted for, whose integration EHR holds the
-- appointment. '' is none: a single-practice deployment, and every row made
-- before. Not NULL, so that the exclusion constraint and the primary key
-- compare it: agent and appointment ids are only unique within one EHR.
ALTER TABLE booking_holds ADD COLUMN business_id text NOT NULL DEFAULT '';
ALTER TABLE booking_holds DROP CONSTRAINT booking_holds_agent_id_period_excl;
ALTER TABLE booking_holds ADD CONSTRAINT booking_holds_agent_period_excl
    EXCLUDE USING gist (business_id WITH =, agent_id WITH =, period WITH &&);

-- A patient's own bookings, and its 20 future appointments, are per
-- business.
ALTER TABLE appointment_bookings ADD COLUMN business_id text NOT NULL DEFAULT '';
ALTER TABLE appointment_bookings DROP CONSTRAINT appointment_bookings_pkey;
ALTER TABLE appointment_bookings ADD PRIMARY KEY (subject, business_id, appointment_id);
DROP INDEX appointment_bookings_future;
CREATE INDEX appointment_bookings_future ON appointment_bookings (subject, business_id, start_at) WHERE NOT cancelled;
DROP INDEX booking_holds_subject;
CREATE INDEX booking_holds_subject ON booking_holds (subject, business_id) WHERE kind = 'book';
