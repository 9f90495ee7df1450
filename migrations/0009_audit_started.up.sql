-- An appointment change is made in an EHR, outside any transaction of ours:
-- its request records an event with outcome 'started' before calling the EHR
-- (status 0, no answer yet), in addition to its one final event.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_outcome_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_outcome_check
    CHECK (outcome IN ('success', 'denied', 'error', 'started'));
