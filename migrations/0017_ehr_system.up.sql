-- Bookings and their EHR system (issue 30). An appointment id, and an
-- agent's calendar, belong to one EHR system, not to a business: two
-- practices may share an EHR, and an operator may move a practice to
-- another EHR (integration.ehr, by_business, SIGHUP). So bookings, holds
-- and Idempotency-Key outcomes record the EHR system (its name in the EHR
-- systems file) they were made in, and every later read, cancel,
-- reschedule, replay and reconciliation goes to that system.
--
-- '' is a row written before: its system is not known to the database.
-- Backfill: here, a booking takes the system sync's states know its
-- appointment in for its business, when exactly one does, and an outcome
-- the system of the one booking of its subject and appointment. The rest
-- are pinned when the service starts, and before each reload of the EHR
-- systems file, to the integration EHR of their business in the file in
-- force then, the one they were made with (postgres.Store.PinEHRSystems);
-- until then they are read in the integration EHR of their business, as
-- before.
ALTER TABLE appointment_bookings ADD COLUMN ehr_system text NOT NULL DEFAULT '';
ALTER TABLE booking_holds ADD COLUMN ehr_system text NOT NULL DEFAULT '';
-- The pin finds the rows of no system without reading the others.
CREATE INDEX appointment_bookings_unpinned ON appointment_bookings (business_id) WHERE ehr_system = '';

UPDATE appointment_bookings b SET ehr_system = s.system
FROM (SELECT appointment_id, business_id, min(system) AS system FROM ehr_appointment_states
      GROUP BY appointment_id, business_id HAVING count(*) = 1) s
WHERE b.ehr_system = '' AND s.appointment_id = b.appointment_id AND s.business_id = b.business_id;

-- An appointment id is unique within its system only.
ALTER TABLE appointment_bookings DROP CONSTRAINT appointment_bookings_pkey;
ALTER TABLE appointment_bookings ADD PRIMARY KEY (subject, business_id, ehr_system, appointment_id);
DROP INDEX appointment_bookings_appointment;
CREATE INDEX appointment_bookings_appointment ON appointment_bookings (ehr_system, appointment_id);

-- One agent's time is held once per EHR system, whichever business holds
-- it. A hold of no known system keeps the rule it was taken under.
ALTER TABLE booking_holds DROP CONSTRAINT booking_holds_agent_period_excl;
ALTER TABLE booking_holds ADD CONSTRAINT booking_holds_calendar_excl
    EXCLUDE USING gist (ehr_system WITH =, agent_id WITH =, period WITH &&) WHERE (ehr_system <> '');
ALTER TABLE booking_holds ADD CONSTRAINT booking_holds_unpinned_excl
    EXCLUDE USING gist (business_id WITH =, agent_id WITH =, period WITH &&) WHERE (ehr_system = '');

-- An outcome names its system ("system" in the JSON).
UPDATE idempotency_keys k SET outcome = k.outcome || jsonb_build_object('system', b.ehr_system)
FROM (SELECT subject, appointment_id, min(ehr_system) AS ehr_system FROM appointment_bookings
      WHERE ehr_system <> '' GROUP BY subject, appointment_id HAVING count(*) = 1) b
WHERE k.outcome ? 'appointmentId' AND NOT k.outcome ? 'system'
  AND b.subject = k.subject AND b.appointment_id = k.outcome->>'appointmentId';

-- A failure kept as an outcome keeps its kind and code, and the service's
-- own message only: those written before may quote an EHR's words (a bot's
-- refusal), which may name a patient. They go; a replay of one answers a
-- message of the service's for its code.
UPDATE idempotency_keys SET outcome = outcome #- '{error,message}' WHERE outcome ? 'error';
