-- Audit events carry the business the request acted for (the acting
-- business, or the blob's or business's own), NULL when none. The events
-- written before have none, and their canonical content leaves businessId
-- out (audit.Canonical), so their hashes still check out. Adding a column
-- leaves the append-only triggers in place.
ALTER TABLE audit_events ADD COLUMN business_id uuid;
